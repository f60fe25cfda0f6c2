"""Cases for optional (dispensable) input slots, one module per op family. tests/test_optional_inputs.py
walks the registry: every optional input of every op with a kernel needs a case here (or a line in
tests/data/paddle/optional_inputs_pending.txt), so a slot gradc declares but ignores cannot exist.

A case runs the op with the slot fed and compares every output in ``expected`` (numpy, from the op's
documented semantics); with ``overrides`` it also runs the op without the slot and checks the result
differs (the tensor wins over the attribute it overrides).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field


@dataclass
class SlotCase:
    op: str
    slot: str
    inputs: dict                   # slot -> array, or list of arrays for list slots
    expected: dict                 # output slot -> array (or list of arrays)
    attrs: dict = field(default_factory=dict)
    overrides: bool = True         # without the slot, the attribute gives another result
    dtypes: dict = field(default_factory=dict)   # slot -> VarType declared instead of the array's (bfloat16, float8)
    fed: dict = field(default_factory=dict)      # output slot -> the value fed to it (data: the program's input)

    @property
    def id(self) -> str:
        return f"{self.op}.{self.slot}"


def all_cases() -> list[SlotCase]:
    cases = []
    for module in pkgutil.iter_modules(__path__):
        cases.extend(importlib.import_module(f"{__name__}.{module.name}").CASES)
    return cases
