"""Rows: the attention and sampling ops of PaddleNLP's inference exports (gradc.ops.llm_attention,
llm_block_attention, llm_sampling), named as Paddle 3.3.1's translation of their legacy ops names them
(tools/paddle_llm_attention_programs.py)."""

from __future__ import annotations

from . import row

MMHA_INPUTS = ("x:x cache_kv:cache_kv bias?:bias src_mask?:src_mask cum_offsets?:cum_offsets"
               " sequence_lengths?:sequence_lengths rotary_tensor?:rotary_tensor beam_cache_offset?:beam_cache_offset"
               " qkv_out_scale?:qkv_out_scale out_shift?:out_shift out_smooth?:out_smooth")
MMHA_ATTRS = ("seq_len:i32 rotary_emb_dims:i32 use_neox_rotary_style:bool compute_dtype:str=default"
              " out_scale:f32=-1 quant_round_type:i32=1 quant_max_bound:f32=127 quant_min_bound:f32=-127")
BLHA_REQUIRED = ("qkv key_cache value_cache seq_lens_encoder seq_lens_decoder seq_lens_this_time padding_offsets"
                 " cum_offsets cu_seqlens_q cu_seqlens_k block_tables").split()
BLHA_OPTIONAL = ("pre_key_cache pre_value_cache rope_emb mask tgt_mask cache_k_quant_scales cache_v_quant_scales"
                 " cache_k_dequant_scales cache_v_dequant_scales qkv_out_scale qkv_bias out_shift out_smooth"
                 " max_enc_len_this_time max_dec_len_this_time").split()
BLHA_INPUTS = " ".join([f"{name}:{name}" for name in BLHA_REQUIRED] + [f"{name}?:{name}" for name in BLHA_OPTIONAL])
BLHA_ATTRS = ("max_seq_len:i32 block_size:i32 use_neox_style:bool dynamic_cachekv_quant:bool quant_round_type:i32=1"
              " quant_max_bound:f32=127 quant_min_bound:f32=-127 out_scale:f32=-1 compute_dtype:str=default"
              " rope_theta:f32=10000")

ROWS = [
    # in place: the cache (and the beam offsets) are the operands' vars
    row("pd_op.masked_multihead_attention_", "masked_multihead_attention", MMHA_INPUTS,
        "out:out cache_kv_out:cache_kv_out&cache_kv beam_cache_offset_out:beam_cache_offset_out&beam_cache_offset",
        MMHA_ATTRS),
    row("pd_op.variable_length_memory_efficient_attention", "variable_length_memory_efficient_attention",
        "query:query key:key value:value seq_lens:seq_lens kv_seq_lens:kv_seq_lens mask?:mask", "out:out",
        "scale:f32 causal:bool pre_cache_length:i32"),
    row("pd_op.block_multihead_attention_", "block_multihead_attention", BLHA_INPUTS,
        "fmha_out:fmha_out qkv_out:qkv_out&qkv key_cache_out:key_cache_out&key_cache"
        " value_cache_out:value_cache_out&value_cache", BLHA_ATTRS),
    row("pd_op.blha_get_max_len", "blha_get_max_len", "seq_lens_encoder:seq_lens_encoder"
        " seq_lens_decoder:seq_lens_decoder batch_size:batch_size",
        "max_enc_len_this_time:max_enc_len_this_time max_dec_len_this_time:max_dec_len_this_time"),
    row("pd_op.top_p_sampling", "top_p_sampling", "x:x ps:ps threshold?:threshold topp_seed?:topp_seed",
        "out:out ids:ids topk_scores:topk_scores topk_ids:topk_ids", "seed:i64=-1 k:i32 mode:str=truncated"),
]
