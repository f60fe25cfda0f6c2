"""bfloat16 values, which numpy has no type for. gradc's executor keeps a bfloat16 var's value as a float32 array
whose every element is a bfloat16 number (float32 holds each exactly): kernels compute in float32, and each result
written to a var the program declares bfloat16 is rounded to bfloat16, to nearest, ties to even, as Paddle's CPU
kernels round theirs. Paddle hands bfloat16 tensors to numpy as uint16 arrays of their bits; ``from_bits`` and
``to_bits`` convert (Paddle writes a NaN as 0x7FFF, and so does ``to_bits``)."""

from __future__ import annotations

import numpy as np

from .ir import VarType

STORAGE = np.dtype(np.float32)   # the numpy dtype of a bfloat16 var's values in the executor
_PADDLE_NAN = np.uint16(0x7FFF)


class BFloat16Spec:
    """The declared dtype of an executor write spec for a bfloat16 var: results are rounded, not cast."""

    def __repr__(self) -> str:
        return "bfloat16"


BFLOAT16 = BFloat16Spec()


def _upper_halves(values: np.ndarray) -> np.ndarray:
    """The rounded float32 bit patterns (as uint32) of float values: round to nearest, ties to even, on the top
    16 bits."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    lowest_kept = (bits >> 16) & 1
    return (bits + (np.uint32(0x7FFF) + lowest_kept)) & np.uint32(0xFFFF0000)


def round_to_bfloat16(values) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even; NaN stays NaN, overflow gives inf)."""
    values = np.asarray(values, dtype=np.float32)
    rounded = _upper_halves(values).view(np.float32)
    nan = np.isnan(values)
    if nan.any():   # a NaN whose payload lies in the dropped bits would round to inf
        rounded = np.where(nan, np.float32(np.nan), rounded)
    return rounded


def from_bits(bits) -> np.ndarray:
    """Paddle's uint16 bit patterns of bfloat16 values, as float32."""
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def as_bfloat16(array: np.ndarray) -> np.ndarray:
    """An array given for a bfloat16 var, as the executor holds it: uint16 arrays are Paddle's bfloat16 bits, any
    other numbers are rounded to bfloat16."""
    return from_bits(array) if array.dtype == np.uint16 else round_to_bfloat16(array)


def to_bits(values) -> np.ndarray:
    """Float values rounded to bfloat16, as Paddle's uint16 bit patterns."""
    values = np.asarray(values, dtype=np.float32)
    bits = (_upper_halves(values) >> 16).astype(np.uint16)
    return np.where(np.isnan(values), _PADDLE_NAN, bits)


def round_parameters(program, scope) -> list[str]:
    """What Paddle's amp_init does to a pure bfloat16 program's startup values: every value in ``scope`` of a var
    the program's global block declares BF16 (float32 from a startup program or a parameter file) rounded to
    bfloat16. Returns their names."""
    names = [name for name, var in program.global_block.vars.items()
             if var.dtype == VarType.BF16 and isinstance(scope.find(name), np.ndarray)]
    for name in names:
        scope[name] = round_to_bfloat16(scope.find(name))
    return names
