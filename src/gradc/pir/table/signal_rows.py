"""Rows: paddle.signal's frame and overlap_add (gradc.ops.signal)."""

from __future__ import annotations

from . import row
from .grad_rows import X_GRAD

ROWS = [
    row("pd_op.frame", "frame", "x:X", "out:Out", "frame_length:i32 hop_length:i32 axis:i32"),
    row("pd_op.overlap_add", "overlap_add", "x:X", "out:Out", "hop_length:i32 axis:i32"),
    row("pd_op.frame_grad", "frame_grad", "x:X out_grad:Out@GRAD", X_GRAD, "frame_length:i32 hop_length:i32 axis:i32"),
    row("pd_op.overlap_add_grad", "overlap_add_grad", "x:X out_grad:Out@GRAD", X_GRAD, "hop_length:i32 axis:i32"),
]
