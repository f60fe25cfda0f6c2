"""Cases for FlashAttention's ops (gradc.ops.flash_attention): grouped-query heads, causal with query and key lengths
that differ (the top-left diagonal), an additive attn_mask, variable-length sequences (one of them empty and rows
past the last sequence), and each form of flashmask's startend_row_indices."""

import numpy as np

from . import Case, rng
from .lod_rnn import third_order
from .second_order import second_order

r = rng(131)


def randn(*shape):
    return r.standard_normal(shape)


def qkv(b: int, sq: int, sk: int, heads: int, kv_heads: int, d: int = 4) -> dict:
    return {"q": randn(b, sq, heads, d), "k": randn(b, sk, kv_heads, d), "v": randn(b, sk, kv_heads, d)}


def varlen(lengths_q: list[int], lengths_k: list[int], heads: int, kv_heads: int, spare: int = 0) -> dict:
    """Packed sequences of these lengths (spare: q rows past the last sequence)."""
    inputs = {"q": randn(sum(lengths_q) + spare, heads, 4), "k": randn(sum(lengths_k), kv_heads, 4),
              "v": randn(sum(lengths_k), kv_heads, 4)}
    return inputs | {"cu_seqlens_q": np.cumsum([0, *lengths_q]).astype(np.int32),
                     "cu_seqlens_k": np.cumsum([0, *lengths_k]).astype(np.int32)}


def bounds(b: int, heads: int, sk: int, rows: int, columns: int) -> np.ndarray:
    """startend_row_indices [b, heads, sk, columns]: sorted row bounds per column (start <= end) in 0 .. rows."""
    return np.sort(r.integers(0, rows + 1, (b, heads, sk, columns)), axis=-1).astype(np.int32)


def unpadded(lengths_q, lengths_k, heads, kv_heads, spare=0, **attrs):
    longest = {"max_seqlen_q": max(lengths_q), "max_seqlen_k": max(lengths_k), "scale": 0.4}
    return varlen(lengths_q, lengths_k, heads, kv_heads, spare), longest | attrs


def with_mask(case: tuple, mask: np.ndarray) -> tuple:
    inputs, attrs = case
    return inputs | {"attn_mask": mask}, attrs


CASES = [
    Case("flash_attn", qkv(2, 3, 3, 2, 2)),
    Case("flash_attn", qkv(1, 4, 3, 4, 2), {"causal": True}),
    Case("flash_attn", qkv(2, 3, 5, 2, 1), {"causal": True}),
    Case("flash_attn", qkv(2, 3, 4, 2, 1) | {"attn_mask": randn(2, 1, 3, 4)}),
    Case("flash_attn", qkv(1, 3, 3, 2, 2) | {"attn_mask": randn(1, 2, 3, 3)}, {"is_test": True, "dropout": 0.1}),
    Case("flash_attn_unpadded", *unpadded([2, 3], [3, 2], 2, 1)),
    Case("flash_attn_unpadded", *unpadded([3, 0, 2], [3, 2, 2], 2, 2, spare=1, causal=True)),
    Case("flashmask_attention", qkv(1, 4, 4, 2, 1) | {"startend_row_indices": bounds(1, 1, 4, 4, 1)},
         {"causal": True}),
    Case("flashmask_attention", qkv(2, 4, 4, 2, 2) | {"startend_row_indices": bounds(2, 2, 4, 4, 2)},
         {"causal": True}),
    Case("flashmask_attention", qkv(1, 4, 4, 2, 2) | {"startend_row_indices": np.array(
        [[[[3, 1], [4, 0], [2, 2], [4, 1]]]], np.int32)}),
    Case("flashmask_attention", qkv(1, 4, 4, 2, 1) | {"startend_row_indices": bounds(1, 1, 4, 4, 4)}),
]

CASES += [
    second_order("flash_attn", qkv(2, 3, 3, 2, 2)),
    second_order("flash_attn", qkv(1, 3, 4, 4, 2), {"causal": True}),
    second_order("flash_attn", qkv(2, 3, 4, 2, 1) | {"attn_mask": randn(2, 2, 3, 4)}),
    second_order("flash_attn", qkv(1, 2, 3, 2, 1) | {"attn_mask": randn(1, 1, 1, 2, 3)}),
]

# masks from run-time values, rebuilt by comparisons (gradc.ops.flash_attention_masked_double): an empty sequence, a
# spare row, causal; each form of startend_row_indices, grouped heads, rows with no key left
CASES += [
    second_order("flash_attn_unpadded", *unpadded([2, 1], [2, 2], 2, 1)),
    second_order("flash_attn_unpadded", *unpadded([2, 0, 1], [1, 2, 2], 2, 2, spare=1, causal=True)),
    second_order("flashmask_attention", qkv(1, 3, 3, 2, 1) | {"startend_row_indices": bounds(1, 1, 3, 3, 1)},
                 {"causal": True}),
    second_order("flashmask_attention", qkv(1, 3, 3, 2, 2) | {"startend_row_indices": bounds(1, 2, 3, 3, 2)},
                 {"causal": True}),
    second_order("flashmask_attention", qkv(1, 3, 3, 2, 2) | {"startend_row_indices": np.array(
        [[[[2, 1], [3, 0], [1, 1]]]], np.int32)}),
    second_order("flashmask_attention", qkv(1, 3, 3, 2, 1) | {"startend_row_indices": bounds(1, 1, 3, 3, 4)}),
]
# third derivatives follow from the plain ops (one of each mask)
CASES += [third_order(CASES[-6], "flash_attn_unpadded_grad"), third_order(CASES[-4], "flashmask_attention_grad")]
# an attn_mask of varlen sequences, sliced per sequence (sequence s reads copy s % M), gathered at run time: two
# copies of a mask per head over three sequences (one empty) and a spare row (Paddle refuses a causal attn_mask)
CASES.append(second_order("flash_attn_unpadded", *with_mask(unpadded([2, 0, 1], [1, 2, 2], 2, 1, spare=1),
                                                            randn(2, 2, 2, 2))))


def packed(b: int, s: int, groups: int, kv_heads: int) -> dict:
    """qkv [b, s, groups + 2, kv_heads, 4]: groups query heads per kv head."""
    return {"qkv": randn(b, s, groups + 2, kv_heads, 4)}


CASES += [
    Case("flash_attn_qkvpacked", packed(2, 3, 1, 2)),
    Case("flash_attn_qkvpacked", packed(1, 4, 2, 2), {"causal": True}),
    Case("flash_attn_qkvpacked", packed(1, 3, 2, 1) | {"attn_mask": randn(1, 2, 3, 3)}),
    second_order("flash_attn_qkvpacked", packed(1, 3, 2, 2), {"causal": True}),
]


def mea(b: int, sq: int, sk: int, heads: int, dv: int = 3, bias: tuple | None = None) -> dict:
    """memory_efficient_attention's query, key, value (value's head_dim its own) and a bias of that shape."""
    inputs = {"query": randn(b, sq, heads, 4), "key": randn(b, sk, heads, 4), "value": randn(b, sk, heads, dv)}
    return inputs | ({"bias": randn(*bias)} if bias else {})


CASES += [
    Case("memory_efficient_attention", mea(2, 3, 4, 2)),
    Case("memory_efficient_attention", mea(1, 4, 3, 2), {"causal": True, "scale": 0.3}),
    Case("memory_efficient_attention", mea(2, 3, 4, 2, bias=(1, 2, 3, 4))),
    Case("memory_efficient_attention", mea(2, 3, 3, 2, bias=(2, 1, 3, 3)), {"is_test": True}),
]
CASES += [
    second_order("memory_efficient_attention", mea(1, 3, 4, 2)),
    second_order("memory_efficient_attention", mea(2, 3, 3, 2, bias=(1, 2, 3, 3)), {"causal": True, "scale": 0.5}),
    second_order("memory_efficient_attention", mea(1, 2, 3, 2, bias=(1, 1, 2, 3))),
]


def varlen_packed(lengths: list[int], groups: int, kv_heads: int, longest: int, padded: bool, **attrs):
    """flash_attn_varlen_qkvpacked of sequences of these lengths: padded, sequence s at row s longest of
    [len(lengths) longest, ...]; else packed one after another (with a spare row)."""
    rows = len(lengths) * longest if padded else sum(lengths) + 1
    cu = np.cumsum([0, *lengths]).astype(np.int32)
    inputs = {"qkv": randn(rows, groups + 2, kv_heads, 4), "cu_seqlens_q": cu, "cu_seqlens_k": cu}
    return inputs, {"max_seqlen_q": longest, "max_seqlen_k": longest, "scale": 0.4, "varlen_padded": padded} | attrs


CASES += [
    Case("flash_attn_varlen_qkvpacked", *varlen_packed([3, 1], 2, 1, 3, True)),
    Case("flash_attn_varlen_qkvpacked", *varlen_packed([2, 3], 1, 2, 4, True, causal=True)),
    Case("flash_attn_varlen_qkvpacked", *varlen_packed([2, 0, 3], 2, 1, 3, False, causal=True)),
]
CASES += [
    second_order("flash_attn_varlen_qkvpacked", *varlen_packed([2, 1], 1, 1, 2, True)),
    second_order("flash_attn_varlen_qkvpacked", *varlen_packed([2, 0, 1], 2, 1, 2, False, causal=True)),
]
