"""Compile passes. A pass has a name, checks what it requires and ensures, and runs on a Program."""

from .accumulate import EagerAccumulationPass
from .amp import AmpOptions, AmpPass
from .backward import BackwardPass
from .base import PASSES, Pass, PassConditionError, Pipeline, make_pass, register_pass
from .optimizer import OptimizerPass
from .precision import Float64Pass
from .recompute import RecomputePass
from .verify import VerifyPass

__all__ = [
    "PASSES", "AmpOptions", "AmpPass", "BackwardPass", "EagerAccumulationPass", "Float64Pass", "OptimizerPass", "Pass",
    "PassConditionError", "Pipeline", "RecomputePass", "VerifyPass", "make_pass", "register_pass",
]
