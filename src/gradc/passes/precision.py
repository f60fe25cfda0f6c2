"""The float64 pass: widen every float32, float16, bfloat16 and float8 var, and such dtype attributes, to float64
(complex64 to complex128). Numeric gradient checks need the precision (central differences in float32 lose half the
digits; float16's, bfloat16's and float8's rounding swallows them)."""

from __future__ import annotations

from ..ir import AttrType, Program, VarType
from .base import Pass, register_pass

DTYPE_ATTRS = ("dtype", "in_dtype", "out_dtype")
WIDER = {VarType.FP32: VarType.FP64, VarType.FP16: VarType.FP64, VarType.BF16: VarType.FP64,
         VarType.FP8_E4M3FN: VarType.FP64, VarType.FP8_E5M2: VarType.FP64, VarType.COMPLEX64: VarType.COMPLEX128}


@register_pass
class Float64Pass(Pass):
    name = "float64"

    def apply(self, program: Program) -> int:
        widened = 0
        for block in program.blocks:
            for var in block.vars.values():
                if var.dtype in WIDER:
                    var.dtype = WIDER[var.dtype]
                    widened += 1
            for op in block.ops:
                for attr in DTYPE_ATTRS:
                    if op.attrs.get(attr) in WIDER and op.attr_types[attr] == AttrType.INT:
                        op.attrs[attr] = int(WIDER[op.attrs[attr]])
        return widened

    def ensures(self, program: Program) -> None:
        left = [name for block in program.blocks for name, var in block.vars.items() if var.dtype in WIDER]
        if left:
            raise self.fail(f"float32, float16, bfloat16, float8 or complex64 vars remain: {left[:5]}")
