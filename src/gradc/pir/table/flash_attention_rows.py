"""Rows: FlashAttention's ops (gradc.ops.flash_attention), named as Paddle 3.3.1's translation of their legacy ops
names them (tools/paddle_flash_attention_programs.py); max_seqlen_q / max_seqlen_k are PIR operands (pd_op.full)."""

from __future__ import annotations

from . import row

QKV = "q:q k:k v:v"
STATE = "out:out softmax:softmax softmax_lse:softmax_lse seed_offset:seed_offset"
ATTRS = "dropout:f32 causal:bool return_softmax:bool is_test:bool rng_name:str"
GRAD_ATTRS = "dropout:f32 causal:bool"
SAVED = "out:out softmax_lse:softmax_lse seed_offset:seed_offset"
GRADS = "q_grad:q@GRAD k_grad:k@GRAD v_grad:v@GRAD"
CU = "cu_seqlens_q:cu_seqlens_q cu_seqlens_k:cu_seqlens_k"
LONGEST = "max_seqlen_q>max_seqlen_q:long max_seqlen_k>max_seqlen_k:long"
MEA_IN = "query:query key:key value:value bias?:bias"
MEA_BLOCKS = "cu_seqlens_q?:cu_seqlens_q cu_seqlens_k?:cu_seqlens_k causal_diagonal?:causal_diagonal seqlen_k?:seqlen_k"
MEA_ATTRS = "causal:bool dropout_p:f64 scale:f32"

ROWS = [
    row("pd_op.flash_attn", "flash_attn", f"{QKV} fixed_seed_offset?:fixed_seed_offset attn_mask?:attn_mask", STATE,
        ATTRS),
    row("pd_op.flash_attn_grad", "flash_attn_grad", f"{QKV} {SAVED} attn_mask?:attn_mask out_grad:out@GRAD", GRADS,
        GRAD_ATTRS),
    row("pd_op.flash_attn_unpadded", "flash_attn_unpadded", f"{QKV} {CU} fixed_seed_offset?:fixed_seed_offset"
        f" attn_mask?:attn_mask {LONGEST}", STATE, f"scale:f32 {ATTRS}"),
    row("pd_op.flash_attn_unpadded_grad", "flash_attn_unpadded_grad", f"{QKV} {CU} {SAVED} attn_mask?:attn_mask"
        f" out_grad:out@GRAD {LONGEST}", GRADS, f"scale:f32 {GRAD_ATTRS}"),
    row("pd_op.flash_attn_qkvpacked", "flash_attn_qkvpacked", "qkv:qkv fixed_seed_offset?:fixed_seed_offset"
        " attn_mask?:attn_mask", STATE, ATTRS),
    row("pd_op.flash_attn_qkvpacked_grad", "flash_attn_qkvpacked_grad", f"qkv:qkv {SAVED} attn_mask?:attn_mask"
        " out_grad:out@GRAD", "qkv_grad:qkv@GRAD", GRAD_ATTRS),
    row("pd_op.calc_reduced_attn_scores", "calc_reduced_attn_scores", "q:q k:k softmax_lse:softmax_lse",
        "reduced_scores:reduced_scores"),
    row("pd_op.flashmask_attention", "flashmask_attention", f"{QKV} startend_row_indices:startend_row_indices"
        " fixed_seed_offset?:fixed_seed_offset", STATE, ATTRS),
    row("pd_op.flashmask_attention_grad", "flashmask_attention_grad", f"{QKV} startend_row_indices:startend_row_indices"
        f" {SAVED} out_grad:out@GRAD", GRADS, GRAD_ATTRS),
    row("pd_op.memory_efficient_attention", "memory_efficient_attention", f"{MEA_IN} {MEA_BLOCKS} {LONGEST}",
        "output:output logsumexp:logsumexp seed_and_offset:seed_and_offset", f"{MEA_ATTRS} is_test:bool"),
    row("pd_op.memory_efficient_attention_grad", "memory_efficient_attention_grad",
        f"{MEA_IN} cu_seqlens_q?:cu_seqlens_q cu_seqlens_k?:cu_seqlens_k output:output logsumexp:logsumexp"
        " seed_and_offset:seed_and_offset"
        f" output_grad:output@GRAD {LONGEST}", "query_grad:query@GRAD key_grad:key@GRAD value_grad:value@GRAD"
        " bias_grad:bias@GRAD", MEA_ATTRS),
    row("pd_op.flash_attn_varlen_qkvpacked", "flash_attn_varlen_qkvpacked", f"qkv:qkv {CU}"
        f" fixed_seed_offset?:fixed_seed_offset attn_mask?:attn_mask {LONGEST}", STATE,
        f"scale:f32 {ATTRS} varlen_padded:bool"),
    row("pd_op.flash_attn_varlen_qkvpacked_grad", "flash_attn_varlen_qkvpacked_grad", f"qkv:qkv {CU} {SAVED}"
        f" attn_mask?:attn_mask out_grad:out@GRAD {LONGEST}", "qkv_grad:qkv@GRAD",
        f"scale:f32 {GRAD_ATTRS} varlen_padded:bool"),
]

V3_QKV = "q:q k:k v:v"
V3_STATE = "out:out softmax_lse:softmax_lse"
WINDOW = "window_size_left:i32 window_size_right:i32 softcap:f32"
TUNING = "num_splits:i32 manual_set_pack_gqa:bool"
V3_GRAD_ATTRS = f"softmax_scale:f32 is_causal:bool {WINDOW} sm_margin:i32"
VARLEN_USED = "seqused_q?:seqused_q seqused_k?:seqused_k"

ROWS += [
    row("pd_op.flash_attn_v3", "flash_attn_v3", f"{V3_QKV} q_v_?:q_v_ q_descale_?:q_descale_ k_descale_?:k_descale_"
        " v_descale_?:v_descale_", V3_STATE,
        f"softmax_scale:f32 is_causal:bool {WINDOW} {TUNING} pack_gqa_:bool sm_margin:i32"),
    row("pd_op.flash_attn_v3_grad", "flash_attn_v3_grad", f"{V3_QKV} out:out softmax_lse:softmax_lse"
        " out_grad:out@GRAD", GRADS, V3_GRAD_ATTRS),
    row("pd_op.flash_attn_v3_varlen", "flash_attn_v3_varlen", f"{V3_QKV} {CU} {VARLEN_USED} qv?:qv"
        f" q_descale?:q_descale k_descale?:k_descale v_descale?:v_descale {LONGEST}", V3_STATE,
        f"softmax_scale:f32 causal:bool {WINDOW} {TUNING} pack_gqa:bool sm_margin:i32"),
    row("pd_op.flash_attn_v3_varlen_grad", "flash_attn_v3_varlen_grad", f"{V3_QKV} out:out softmax_lse:softmax_lse"
        f" {CU} {VARLEN_USED} out_grad:out@GRAD {LONGEST}", GRADS,
        f"softmax_scale:f32 causal:bool {WINDOW} sm_margin:i32"),
    row("pd_op.flashmask_attention_v2", "flashmask_attention_v2", f"{V3_QKV}"
        " startend_row_indices:startend_row_indices block_mask?:block_mask", V3_STATE,
        "softmax_scale:f32 is_causal:bool"),
    row("pd_op.flashmask_attention_v2_grad", "flashmask_attention_v2_grad", f"{V3_QKV} out:out"
        " softmax_lse:softmax_lse startend_row_indices:startend_row_indices block_mask?:block_mask out_grad:out@GRAD",
        GRADS, "softmax_scale:f32 is_causal:bool"),
]

SPARSE_IN = "q:Q k:K v:V offset:Offset columns:Columns"
ROWS += [
    row("pd_op.sparse_attention", "sparse_attention", f"{SPARSE_IN} key_padding_mask?:KeyPaddingMask"
        " attn_mask?:AttnMask", "out:Out sparse_dot_sdd:SparseDotSdd softmax:Softmax"),
    row("pd_op.sparse_attention_grad", "sparse_attention_grad", f"{SPARSE_IN} sparse_dot_sdd:SparseDotSdd"
        " softmax:Softmax out_grad:Out@GRAD", "q_grad:Q@GRAD k_grad:K@GRAD v_grad:V@GRAD"),
]
