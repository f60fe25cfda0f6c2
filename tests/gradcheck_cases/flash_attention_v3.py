"""Cases for FlashAttention-3's ops (gradc.ops.flash_attention_v3): grouped-query heads, a value head_dim of its own,
causal with more keys than query rows (the bottom-right diagonal), local windows, softcap, variable-length sequences
(seqused shorter than cu_seqlens' spans, an empty sequence, a spare row) and flashmask's bounds with block_mask; second
derivatives of each."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(331)


def randn(*shape):
    return r.standard_normal(shape)


def qkv(b: int, sq: int, sk: int, heads: int, kv_heads: int, dv: int = 4) -> dict:
    return {"q": randn(b, sq, heads, 4), "k": randn(b, sk, kv_heads, 4), "v": randn(b, sk, kv_heads, dv)}


def v3(**attrs) -> dict:
    return {"softmax_scale": 0.45} | attrs


CASES = [
    Case("flash_attn_v3", qkv(2, 3, 3, 2, 2), v3()),
    Case("flash_attn_v3", qkv(1, 3, 5, 4, 2, dv=3), v3(is_causal=True)),
    Case("flash_attn_v3", qkv(2, 4, 4, 2, 1), v3(window_size_left=1, window_size_right=0)),
    Case("flash_attn_v3", qkv(1, 3, 4, 2, 1), v3(window_size_left=-1, window_size_right=1, softcap=1.5)),
    Case("flash_attn_v3", qkv(1, 4, 3, 2, 2), v3(softcap=0.8)),
]
CASES += [
    second_order("flash_attn_v3", qkv(1, 3, 4, 2, 1), v3(is_causal=True, softcap=1.2)),
    second_order("flash_attn_v3", qkv(1, 4, 4, 2, 2), v3(window_size_left=1, window_size_right=1)),
]


def varlen(lengths_q: list[int], lengths_k: list[int], heads: int, kv_heads: int, spare: int = 0, **attrs):
    """Sequences packed one after another (spare: q rows past the last one)."""
    inputs = {"q": randn(sum(lengths_q) + spare, heads, 4), "k": randn(sum(lengths_k), kv_heads, 4),
              "v": randn(sum(lengths_k), kv_heads, 4), "cu_seqlens_q": np.cumsum([0, *lengths_q]).astype(np.int32),
              "cu_seqlens_k": np.cumsum([0, *lengths_k]).astype(np.int32)}
    return inputs, {"max_seqlen_q": max(lengths_q), "max_seqlen_k": max(lengths_k), "softmax_scale": 0.4} | attrs


def used(case: tuple, q: list[int], k: list[int]) -> tuple:
    inputs, attrs = case
    return inputs | {"seqused_q": np.array(q, np.int32), "seqused_k": np.array(k, np.int32)}, attrs


CASES += [
    Case("flash_attn_v3_varlen", *varlen([2, 3], [3, 4], 2, 1, causal=True)),
    Case("flash_attn_v3_varlen", *varlen([3, 0, 2], [3, 2, 2], 2, 2, spare=1, window_size_left=1, softcap=2.0)),
    Case("flash_attn_v3_varlen", *used(varlen([3, 3], [4, 3], 2, 1, causal=True), [2, 3], [3, 1])),
]


def bounds(b: int, heads: int, sk: int, rows: int, columns: int) -> np.ndarray:
    """startend_row_indices [b, heads, sk, columns]: sorted row bounds per column in 0 .. rows."""
    return np.sort(r.integers(0, rows + 1, (b, heads, sk, columns)), axis=-1).astype(np.int32)


CASES += [
    Case("flashmask_attention_v2", qkv(1, 4, 4, 2, 1) | {"startend_row_indices": bounds(1, 1, 4, 4, 1)},
         {"softmax_scale": 0.5, "is_causal": True}),
    Case("flashmask_attention_v2", qkv(2, 3, 5, 2, 2) | {"startend_row_indices": bounds(2, 2, 5, 3, 2)},
         {"softmax_scale": 0.3, "is_causal": True}),
    Case("flashmask_attention_v2", qkv(1, 4, 4, 2, 1) | {"startend_row_indices": bounds(1, 1, 4, 4, 4),
                                                          "block_mask": np.ones((1, 1, 1, 1), np.int32)},
         {"softmax_scale": 0.5}),
]

# second derivatives through the masks rebuilt from the run-time values (gradc.ops.flash_attention_masked_double)
CASES += [
    second_order("flash_attn_v3_varlen", *varlen([2, 1], [2, 2], 2, 1)),
    second_order("flash_attn_v3_varlen", *varlen([2, 1], [3, 2], 2, 1, causal=True, softcap=1.5)),
    second_order("flash_attn_v3_varlen", *varlen([2, 0, 2], [3, 1, 2], 2, 2, spare=1, window_size_left=1,
                                                 window_size_right=0)),
    second_order("flash_attn_v3_varlen", *used(varlen([2, 3], [3, 2], 2, 1, causal=True), [2, 2], [3, 1])),
    second_order("flashmask_attention_v2", qkv(1, 3, 3, 2, 1) | {"startend_row_indices": bounds(1, 1, 3, 3, 1)},
                 {"softmax_scale": 0.5, "is_causal": True}),
    second_order("flashmask_attention_v2", qkv(1, 2, 3, 2, 2) | {"startend_row_indices": bounds(1, 2, 3, 2, 2)},
                 {"softmax_scale": 0.3, "is_causal": True}),
    second_order("flashmask_attention_v2", qkv(1, 3, 3, 2, 1) | {"startend_row_indices": bounds(1, 1, 3, 3, 4),
                                                                  "block_mask": np.ones((1, 1, 1, 1), np.int32)},
                 {"softmax_scale": 0.5}),
]
