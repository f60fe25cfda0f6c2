"""Rows: the fused training steps and apply_per_channel_scale (gradc.ops.fused_grad_steps) and fused_partial_rope,
named as Paddle 3.3.1's translation of their legacy ops names them (tools/paddle_fused_grad_steps_translated.py,
tools/paddle_partial_rope_translated.py). PIR's fused_linear_param_grad_add always has dbias_out;
embedding_grad_add_to keeps its name (no trailing _) and writes main_grad_out as a new value."""

from __future__ import annotations

from . import row

ROWS = [
    row("pd_op.fused_linear_param_grad_add", "fused_linear_param_grad_add",
        "x:x dout:dout dweight?:dweight dbias?:dbias", "dweight_out:dweight_out dbias_out:dbias_out",
        "multi_precision:bool has_bias:bool"),
    row("pd_op.cross_entropy_with_softmax_bwd_w_downcast", "cross_entropy_with_softmax_bwd_w_downcast",
        "label:label softmax:softmax loss_grad:loss_grad", "input_grad:input_grad"),
    row("pd_op.embedding_grad_add_to", "embedding_grad_add_to",
        "token_indices:token_indices main_grad_:main_grad_ out_grad:out_grad", "main_grad_out:main_grad_out"),
    row("pd_op.apply_per_channel_scale", "apply_per_channel_scale", "x:x scales:scales", "out:out"),
    # gradc.ops.fused_partial_rope (tools/paddle_partial_rope_translated.py)
    row("pd_op.fused_partial_rope", "fused_partial_rope", "x:x cos:cos sin:sin", "out:out"),
    row("pd_op.fused_partial_rope_grad", "fused_partial_rope_grad", "cos:cos sin:sin out_grad:out@GRAD",
        "x_grad:x@GRAD"),
]
