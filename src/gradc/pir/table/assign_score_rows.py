"""Rows: Paddle3D's assign_score_withk and its grad op (gradc.ops.assign_score), custom_op dialect, operands and
results named as the suite's slots, in its PD_BUILD_OP / PD_BUILD_GRAD_OP order."""

from __future__ import annotations

from . import row

INPUTS = "scores:scores points:points centers:centers knn_idx:knn_idx"

ROWS = [
    row("custom_op.assign_score_withk", "assign_score_withk", INPUTS, "output:output"),
    row("custom_op.assign_score_withk_grad", "assign_score_withk_grad",
        f"{INPUTS} output:output output@GRAD:output@GRAD",
        "scores@GRAD:scores@GRAD points@GRAD:points@GRAD centers@GRAD:centers@GRAD"),
]
