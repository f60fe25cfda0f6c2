"""Rows: the suites' multi-scale deformable attention (gradc.ops.ms_deform_attn). Paddle saves a custom op in the
custom_op dialect (file id 3) under its PD_BUILD_OP name, its operands and results named as the op's slots, so each
row maps a name to itself; the attributes are the op's own (no defaults: Paddle writes each one)."""

from __future__ import annotations

from ...ops.ms_deform_attn import VARIANTS
from . import row


def _same(names) -> str:
    return " ".join(f"{name}:{name}" for name in names)


def _rows(op_type: str, inputs: tuple[str, ...], out: str, attrs: dict) -> list:
    kinds = " ".join(f"{name}:i32={value}" for name, value in attrs.items())
    # the grad op's operands in the suite's declared order: Paddle3D's puts out@GRAD first
    grad_inputs = ((f"{out}@GRAD", *inputs) if op_type == "ms_deform_attn" else (*inputs, f"{out}@GRAD"))
    grads = [f"{name}@GRAD" for name in (inputs[:3] if op_type == "ms_deform_attn" else inputs)]
    return [row(f"custom_op.{op_type}", op_type, _same(inputs), _same([out]), kinds),
            row(f"custom_op.{op_type}_grad", f"{op_type}_grad", _same(grad_inputs), _same(grads), kinds)]


ROWS = [entry for op_type, (inputs, out, attrs) in VARIANTS.items() for entry in _rows(op_type, inputs, out, attrs)]
