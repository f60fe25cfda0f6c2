"""Rows: the mixture-of-experts ops of PaddleNLP's MoE models (gradc.ops.moe), named as Paddle 3.3.1's translation
of their legacy ops names them (tools/paddle_gpu_only_translated.py)."""

from __future__ import annotations

from . import row

AUX = "num_experts:i64 use_group:bool moe_k:i64"
DISPATCH = "k:i64 capacity:i64 use_pad:bool"
PERMUTE = "k:i64 capacity:i64 world_size:i64"
TWINS = ("", "_auto")   # the _auto ops: the twins Paddle's API picks for auto-parallel tensors
DISPATCHED = ("y:y combine_weights:combine_weights scatter_index:scatter_index expert_offset:expert_offset"
              " expert_id:expert_id")
DISPATCH_GRAD_INS = ("combine_weights:combine_weights scatter_index:scatter_index expert_id:expert_id y_grad:y@GRAD"
                     " combine_weights_grad:combine_weights@GRAD")
COMBINE = "x:x combine_weights:combine_weights scatter_index:scatter_index"
NO_WEIGHT = "x:x combine_weight:combine_weight scatter_index:scatter_index"

PARTIAL = "k:i64 capacity:i64 use_pad:bool expert_start_index:i64 expert_end_index:i64"
PARTIAL_OUTS = ("scatter_index:scatter_index scatter_index_rev:scatter_index_rev expert_offset:expert_offset"
                " expert_nums_local:expert_nums_local")

ROWS = [
    row("pd_op.cal_aux_loss", "cal_aux_loss", "gate_prob:gate_prob dispatch_mask:dispatch_mask tokens_mask?:tokens_mask"
        " dispatch_tokens_mask?:dispatch_tokens_mask", "l_aux_loss:l_aux_loss seqlen_float:seqlen_float ce:ce",
        f"{AUX} clip_min:f32"),
    row("pd_op.cal_aux_loss_grad", "cal_aux_loss_grad", "gate_prob:gate_prob seqlen_float:seqlen_float ce:ce"
        " l_aux_loss_grad:l_aux_loss@GRAD", "gate_prob_grad:gate_prob@GRAD", AUX),
    *(row(f"pd_op.moe_gate_dispatch{twin}", f"moe_gate_dispatch{twin}", "x:x gate_logits:gate_logits"
          " corr_bias?:corr_bias", DISPATCHED, DISPATCH) for twin in TWINS),
    *(row(f"pd_op.moe_gate_dispatch{twin}_grad", f"moe_gate_dispatch{twin}_grad", DISPATCH_GRAD_INS,
          "x_grad:x@GRAD gate_logits_grad:gate_logits@GRAD", DISPATCH) for twin in TWINS),
    row("pd_op.moe_gate_dispatch_permute", "moe_gate_dispatch_permute", "x:x gate_logits:gate_logits"
        " corr_bias?:corr_bias", DISPATCHED, PERMUTE),
    row("pd_op.moe_gate_dispatch_permute_grad", "moe_gate_dispatch_permute_grad", DISPATCH_GRAD_INS,
        "x_grad:x@GRAD gate_logits_grad:gate_logits@GRAD", PERMUTE),
    *(row(f"pd_op.moe_combine{twin}", f"moe_combine{twin}", COMBINE, "y:y") for twin in TWINS),
    row("pd_op.moe_combine_grad", "moe_combine_grad", f"{COMBINE} y_grad:y@GRAD",
        "x_grad:x@GRAD combine_weights_grad:combine_weights@GRAD"),
    row("pd_op.moe_combine_auto_grad", "moe_combine_auto_grad", f"{COMBINE} y_grad:y@GRAD",
        "x_grad:x@GRAD combine_weights_grad:combine_weights@GRAD scatter_index_grad:scatter_index@GRAD"),
    row("pd_op.moe_combine_no_weight", "moe_combine_no_weight", NO_WEIGHT, "y:y", "epsilon:f32"),
    row("pd_op.moe_combine_no_weight_grad", "moe_combine_no_weight_grad", f"{NO_WEIGHT} y_grad:y@GRAD",
        "x_grad:x@GRAD", "epsilon:f32"),
    row("pd_op.moe_gate_dispatch_partial_nosoftmaxtopk", "moe_gate_dispatch_partial_nosoftmaxtopk",
        "x:x combine_weights:combine_weights expert_id:expert_id",
        f"y:y combine_weights_out:combine_weights_out {PARTIAL_OUTS}",
        "k:i64 capacity:i64 num_experts:i64 use_pad:bool expert_start_index:i64 expert_end_index:i64"
        " reverse_token_drop:bool"),
    row("pd_op.moe_gate_dispatch_partial_nosoftmaxtopk_grad", "moe_gate_dispatch_partial_nosoftmaxtopk_grad",
        f"combine_weights_out:combine_weights_out {PARTIAL_OUTS} y_grad:y@GRAD"
        " combine_weights_out_grad:combine_weights_out@GRAD", "x_grad:x@GRAD combine_weights_grad:combine_weights@GRAD",
        PARTIAL),
]
