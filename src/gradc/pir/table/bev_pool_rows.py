"""Rows: Paddle3D's bev_pool_v2 and its backward op bev_pool_v2_bkwd (gradc.ops.bev_pool), custom_op dialect,
operands and results named as the suite's slots. gradc's own bev_pool_v2_grad has no PIR form: Paddle has none."""

from __future__ import annotations

from . import row

RANKS = " ".join(f"{slot}:{slot}" for slot in ("_ranks_depth", "_ranks_feat", "_ranks_bev", "_interval_lengths",
                                               "_interval_starts"))

ROWS = [
    row("custom_op.bev_pool_v2", "bev_pool_v2", f"_depth:_depth _feat:_feat {RANKS}", "out:out",
        "_bev_feat_shape:i32s"),
    row("custom_op.bev_pool_v2_bkwd", "bev_pool_v2_bkwd", f"_out_grad:_out_grad _depth:_depth _feat:_feat {RANKS}",
        "_depth_grad:_depth_grad _feat_grad:_feat_grad"),
]
