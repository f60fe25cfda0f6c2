"""Kernels of gradc.ops.bitwise."""

from __future__ import annotations

import numpy as np

from . import kernel

INTEGER_KINDS = "biu"   # numpy kinds of bool, signed and unsigned integers


def _operands(k, x: str, y: str, kinds: str):
    a, b = k.x(x), k.x(y)
    if a.dtype != b.dtype or a.dtype.kind not in kinds or b.dtype.kind not in kinds:
        raise ValueError(f"{x} and {y} must be of one integer{' or bool' if 'b' in kinds else ''} dtype, "
                         f"got {a.dtype} and {b.dtype}")
    return a, b


def _binary(fn):
    return lambda k: {"Out": fn(*_operands(k, "X", "Y", INTEGER_KINDS))}


for _name, _fn in {"bitwise_and": np.bitwise_and, "bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}.items():
    kernel(_name)(_binary(_fn))


@kernel("bitwise_not")
def bitwise_not(k):
    x = k.x("X")
    if x.dtype.kind not in INTEGER_KINDS:
        raise ValueError(f"X must be of a bool or integer dtype, got {x.dtype}")
    return {"Out": np.invert(x)}


def _shift_operands(k):
    """The operands, the shift amounts clipped into [0, width) and where the amount was in that range."""
    a, b = _operands(k, "x", "y", "iu")
    width = a.dtype.itemsize * 8
    in_range = (b >= 0) & (b < width)
    return a, np.where(in_range, b, 0).astype(a.dtype), in_range


@kernel("bitwise_left_shift")
def bitwise_left_shift(k):
    a, amount, in_range = _shift_operands(k)
    return {"out": np.where(in_range, np.left_shift(a, amount), 0).astype(a.dtype)}


@kernel("bitwise_right_shift")
def bitwise_right_shift(k):
    a, amount, in_range = _shift_operands(k)
    if k.attr("is_arithmetic"):
        # past the width every bit is the sign: -1 for negative signed values, else 0
        overflow = a >> (a.dtype.itemsize * 8 - 1) if a.dtype.kind == "i" else np.zeros_like(a)
        return {"out": np.where(in_range, a >> amount, overflow).astype(a.dtype)}
    unsigned = a.view(a.dtype.str.replace("i", "u"))   # a logical shift moves zeros in, whatever the sign
    shifted = np.right_shift(unsigned, amount.view(unsigned.dtype)).view(a.dtype)
    return {"out": np.where(in_range, shifted, 0).astype(a.dtype)}
