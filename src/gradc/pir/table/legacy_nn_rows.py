"""Rows: the legacy_nn ops with a PIR counterpart. fc only: Paddle has no fc_grad, and the v1 resizes are no
PIR op (PIR's bilinear_interp and nearest_interp are the v2 ones, whose scale is a list), so export refuses
them."""

from __future__ import annotations

from . import row

ROWS = [
    row("pd_op.fc", "fc", "input:Input w:W bias?:Bias", "out:Out",
        "in_num_col_dims:i32 activation_type:str padding_weights:bool"),
]
