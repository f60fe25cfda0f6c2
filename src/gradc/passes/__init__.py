"""Compile passes. A pass has a name, checks what it requires and ensures, and runs on a Program.

The built-in passes are imported when first named (``from gradc.passes import AmpPass``) or when passes are looked up
by name (``make_pass``, ``PASSES``): the mixed-precision and optimizer passes bring in the optimizers, which a compile
without them does not need."""

from importlib import import_module

from ..errors import GradcError
from . import base
from .base import Pass, PassConditionError, Pipeline, register_pass

# name -> the module of this package that defines it
_BUILT_IN = {"AmpOptions": "amp", "AmpPass": "amp", "BackwardPass": "backward", "EagerAccumulationPass": "accumulate",
             "Float64Pass": "precision", "OptimizerPass": "optimizer", "RecomputePass": "recompute",
             "VerifyPass": "verify"}

__all__ = ["PASSES", "Pass", "PassConditionError", "Pipeline", "make_pass", "register_pass", *_BUILT_IN]


def _registered() -> dict:
    """Every pass by name, the built-in ones imported first (each registers itself)."""
    for module in dict.fromkeys(_BUILT_IN.values()):   # in a fixed order: PASSES lists them as registered
        import_module(f"{__name__}.{module}")
    return base.PASSES


def make_pass(name: str, **options) -> Pass:
    """A pass by its name (``gradc compile --pass NAME``), built-in or registered."""
    factory = _registered().get(name)
    if factory is None:
        raise GradcError(f"unknown pass '{name}' (known: {', '.join(sorted(base.PASSES))})")
    return factory(**options)


def __getattr__(name: str):
    if name == "PASSES":
        return _registered()
    if name in _BUILT_IN:
        return getattr(import_module(f"{__name__}.{_BUILT_IN[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
