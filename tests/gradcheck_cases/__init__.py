"""Gradcheck cases, one module per op family. tests/test_gradcheck_registry.py walks the registry
and fails for any differentiable op without a case here, so no op escapes the numeric check.

A module defines ``CASES = [Case(...), ...]``; inputs are float64 (integer for labels/indices). It may also define
``REFUSED = [Case(...), ...]``: second-derivative cases (second_order) of grad ops whose makers refuse to be
differentiated in every configuration; tests/test_gradcheck_registry.py checks that each does refuse (a GradError).
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
    by_element: bool = False  # ties or zeros the case is about, which moving every element at once would undo

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


def refused() -> list[Case]:
    """The modules' REFUSED: cases of grad ops gradc never differentiates, which must raise a GradError."""
    return [case for module in _modules() for case in getattr(module, "REFUSED", [])]
