"""The float64 pass: widen every float32 var, and float32 dtype attributes, to float64. Numeric
gradient checks need the precision (central differences in float32 lose half the digits)."""

from __future__ import annotations

from ..ir import AttrType, Program, VarType
from .base import Pass, register_pass

DTYPE_ATTRS = ("dtype", "in_dtype", "out_dtype")


@register_pass
class Float64Pass(Pass):
    name = "float64"

    def apply(self, program: Program) -> int:
        widened = 0
        for block in program.blocks:
            for var in block.vars.values():
                if var.dtype == VarType.FP32:
                    var.dtype = VarType.FP64
                    widened += 1
            for op in block.ops:
                for attr in DTYPE_ATTRS:
                    if op.attrs.get(attr) == VarType.FP32 and op.attr_types[attr] == AttrType.INT:
                        op.attrs[attr] = int(VarType.FP64)
        return widened

    def ensures(self, program: Program) -> None:
        left = [name for block in program.blocks for name, var in block.vars.items() if var.dtype == VarType.FP32]
        if left:
            raise self.fail(f"float32 vars remain: {left[:5]}")
