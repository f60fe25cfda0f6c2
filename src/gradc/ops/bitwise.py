"""Bitwise ops on bool and integer tensors, with numpy broadcasting: bitwise_and, bitwise_or, bitwise_xor,
bitwise_not and the shifts bitwise_left_shift / bitwise_right_shift (Paddle names their slots x, y, out). No
gradients.

A shift by a negative amount or by the operand's width or more gives 0, except an arithmetic right shift of a
negative signed value, which gives -1 (every bit a copy of the sign), as Paddle's kernels do. A logical
right shift moves zeros in from the left, for signed types too. Shifts do not take bool (Paddle has no kernel).
"""

from __future__ import annotations

from ..ir import VarType
from ..ir.types import INTEGER_DTYPES, dtype_name
from ..registry import NO_GRAD, defop
from .infer import broadcast_shapes, one_dtype, same_as

BOOL_OR_INTEGER_DTYPES = INTEGER_DTYPES | {VarType.BOOL}


def _check_dtypes(ctx, slots, dtypes) -> None:
    for slot in slots:
        kind = ctx.dtype(slot)
        if kind is not None and kind not in dtypes:
            ctx.fail(f"{ctx.op.type} takes {', '.join(sorted(map(dtype_name, dtypes)))}; {slot} is {dtype_name(kind)}")


def _bitwise_infer(x: str, y: str, out: str, dtypes):
    def infer(ctx):
        _check_dtypes(ctx, (x, y), dtypes)
        dtype = one_dtype(ctx, x, y)
        return {out: (broadcast_shapes(ctx, ctx.shape(x), ctx.shape(y)), dtype)}
    return infer


def _bitwise_not_infer(ctx):
    _check_dtypes(ctx, ("X",), BOOL_OR_INTEGER_DTYPES)
    return same_as("X")(ctx)


defop("bitwise_not", ["X"], infer=_bitwise_not_infer, grad=NO_GRAD)


for _name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
    defop(_name, ["X", "Y"], infer=_bitwise_infer("X", "Y", "Out", BOOL_OR_INTEGER_DTYPES), grad=NO_GRAD)
for _name in ("bitwise_left_shift", "bitwise_right_shift"):
    defop(_name, ["x", "y"], ["out"], attrs={"is_arithmetic": True},
          infer=_bitwise_infer("x", "y", "out", INTEGER_DTYPES), grad=NO_GRAD)
