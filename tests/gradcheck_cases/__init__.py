"""Gradcheck cases, one module per op family. tests/test_gradcheck_registry.py walks the registry
and fails for any differentiable op without a case here, so no op escapes the numeric check.

A module defines ``CASES = [Case(...), ...]``; inputs are float64 (integer for labels/indices). It may also define
``REFUSED = {grad op type: why}`` for a grad op whose maker always refuses a second derivative (a GradError), where
no configuration can be differentiated twice; the family's own tests check that it refuses.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Case:
    op: str
    inputs: dict
    attrs: dict = field(default_factory=dict)
    outputs: dict | None = None     # slot -> number of vars, for multi-var output slots
    wrt: list | None = None         # restrict the checked inputs
    rtol: float = 1e-5
    atol: float = 1e-7
    eps: float = 1e-6
    program: Callable | None = None  # ops check_op cannot run alone (control flow): () -> check_program kwargs

    @property
    def id(self) -> str:
        attrs = ",".join(f"{k}={v}" for k, v in self.attrs.items())
        return f"{self.op}[{attrs}]" if attrs else self.op


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def _modules():
    return [importlib.import_module(f"{__name__}.{module.name}") for module in pkgutil.iter_modules(__path__)]


def all_cases() -> list[Case]:
    return [case for module in _modules() for case in module.CASES]


def refused() -> dict[str, str]:
    """{grad op type: why gradc never differentiates it}: the modules' REFUSED."""
    return {op: why for module in _modules() for op, why in getattr(module, "REFUSED", {}).items()}
