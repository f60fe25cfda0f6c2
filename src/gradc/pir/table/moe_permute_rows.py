"""Rows: the MoE permutation ops and the experts' grouped GEMM (gradc.ops.moe_permute), named as Paddle 3.3.1's
translation of their legacy ops names them (tools/paddle_moe_permute_translated.py). gradc's own moe_unpermute_grad
has no PIR form: Paddle has none."""

from __future__ import annotations

from . import row

PERMUTE_ATTRS = ("num_experts:i32 tokens_per_expert:i32s padding_alignment:i32 do_gather:bool using_ue8m0_scale:bool"
                 " return_expert_indices:bool override_buffer_size:i32")
UNPERMUTE_INS = ("hidden_states_unzipped:hidden_states_unzipped zipped_expertwise_rowmap:zipped_expertwise_rowmap"
                 " expert_routemap_topk:expert_routemap_topk token_prob_unzipped:token_prob_unzipped")
UNPERMUTE_ATTRS = "total_zipped_tokens_num:i32 num_experts:i32 use_mix_precision:bool using_weighted_combine:bool"

ROWS = [
    row("pd_op.moe_permute", "moe_permute", "hidden_states:hidden_states scale?:scale"
        " expert_routemap_topk:expert_routemap_topk expert_prob_topk:expert_prob_topk",
        "hidden_states_unzipped:hidden_states_unzipped zipped_expertwise_rowmap:zipped_expertwise_rowmap"
        " token_prob_unzipped:token_prob_unzipped scale_unzipped:scale_unzipped expert_indices:expert_indices",
        PERMUTE_ATTRS),
    row("pd_op.moe_unpermute", "moe_unpermute", UNPERMUTE_INS,
        "hidden_states:hidden_states expert_prob_topk:expert_prob_topk", UNPERMUTE_ATTRS),
    row("pd_op.batched_gemm", "batched_gemm", "lhs:lhs rhs:rhs", "output:output",
        "batch_sizes:i64s trans_lhs:bool trans_rhs:bool"),
]
