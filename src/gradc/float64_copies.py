"""Float64 copies of a program and of the values it runs on: central differences in float32 lose half the digits,
so the gradient checks and the rounding audit compare against a widened run."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .bfloat16 import from_bits
from .executor import LoDTensor
from .executor.selected_rows import SelectedRows
from .ir import Program, VarType
from .passes import Float64Pass


def float64_copy(program: Program, *values: Mapping[str, np.ndarray]) -> tuple:
    """A copy of ``program`` with every float32 (float16, bfloat16) var widened to float64 (central differences in
    float32 lose half the digits), and each mapping of ``values`` with its arrays widened likewise."""
    wide = program.clone()
    Float64Pass()(wide)
    bfloat16 = {name for name, var in program.global_block.vars.items() if var.dtype == VarType.BF16}
    return (wide, *({name: widened(v, name in bfloat16) for name, v in mapping.items()} for mapping in values))


def widened(value, bfloat16: bool = False):
    """A float32, float16 (complex64) array, a LoDTensor's with its LoD kept, a SelectedRows' with its rows, as
    float64 (complex128); a bfloat16 var's uint16 array (Paddle's bits) as its values; other values as they are."""
    if isinstance(value, LoDTensor):
        return LoDTensor(widened(value.array, bfloat16), value.lod)
    if isinstance(value, SelectedRows):   # a sparse table gradient: its rows kept
        return value.with_values(widened(value.values, bfloat16))
    value = np.asarray(value)
    if bfloat16 and value.dtype == np.uint16:
        return from_bits(value).astype(np.float64)
    wider = {np.dtype(np.float32): np.float64, np.dtype(np.float16): np.float64,
             np.dtype(np.complex64): np.complex128}.get(value.dtype)
    return value if wider is None else value.astype(wider)
