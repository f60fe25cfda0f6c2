"""FlashAttention (paddle.nn.functional.flash_attention: flash_attention, flash_attn_unpadded, flash_attn_qkvpacked,
flashmask_attention, calc_reduced_attention_scores; scaled_dot_product_attention on a GPU): Paddle 3.3.1 has CUDA
kernels only (its FlashAttention-2 fork); gradc follows their formulas, in float64 inside:

    flash_attn           q [b, sq, h, d], k [b, sk, hk, d], v [b, sk, hk, dv] (hk divides h: query head i reads kv
                         head i / (h / hk)); out [b, sq, h, dv] = softmax(q k^T / sqrt(d) + attn_mask) v per head,
                         1 / sqrt(d) in float32 (exact for float64, which has no CUDA kernel); causal keeps key
                         j <= query row i (the fork's top-left diagonal, also when sq != sk); attn_mask [..., 1 or h,
                         sq, sk] (leading dims flattened to 1 or b) is added to the scaled scores and excludes
                         causal, as in Paddle
    flash_attn_unpadded  q [total_q, h, d], k / v [total_k, hk, d]; sequence s is rows cu_seqlens_q[s] ..
                         cu_seqlens_q[s + 1] of q against rows cu_seqlens_k[s] .. of k and v, with the scale
                         attribute; causal per sequence; attn_mask [b or 1, 1 or h, max_seqlen_q, max_seqlen_k] read
                         at the sequence's own positions. Rows past the last sequence are 0 (Paddle: unwritten)
    flash_attn_qkvpacked as flash_attn, of qkv [b, s, h / hk + 2, hk, d]: q its first h / hk groups flattened to
                         [b, s, h, d] (head g hk + j: group g of kv head j, which reads kv head (g hk + j) / (h / hk)
                         as flash_attn's grouping does), k and v the last two
    calc_reduced_attn_scores  reduced_scores [b, h, 1, sk] float32 = sum over rows i of exp(q_i k_j / sqrt(d) -
                         lse_i), lse read from flash_attn's softmax_lse as packed (no causal mask; no gradient)
    flashmask_attention  as flash_attn, with startend_row_indices [b, 1 | hk | h, sk, 1 | 2 | 4] int32 masking rows of
                         column j: causal with 1 column, rows >= LTS; causal with 2, rows in [LTS, LTE); not causal
                         with 2, rows >= LTS and rows < UTE; not causal with 4, rows in [LTS, LTE) and [UTS, UTE)

A row with no key left is 0 (the kernel's sum-0 rule). softmax_lse (float32, [b, h, ceil128(sq)], or [b, h,
ceil128(max_seqlen_q)] unpadded) holds log sum exp of each row's scaled scores packed as the kernel writes it: row i
of head h of batch b at flat index (b H + h) sq + i, zeros after; seed_offset (int64 [2]) is fixed_seed_offset, or
[0, 0] where Paddle's generator gives one. The grad ops recompute the softmax from q and k (softmax_lse is not read).
dropout > 0 in training draws its mask from curand's Philox stream and is refused, and so is return_softmax (Paddle
refuses it without that dropout). Second derivatives: gradc.ops.flash_attention_double.

    memory_efficient_attention  (paddle.incubate.nn.memory_efficient_attention, the CUTLASS xformers kernel) query
                         [b, sq, h, d], key / value [b, sk, h, d] (no grouped heads); output = softmax(q k^T scale +
                         bias) v, scale < 0 meaning 1 / sqrt(d) as a float; bias [1 or b, 1 or h, sq, sk]; causal
                         keeps key j <= row i; logsumexp float32 [b, h, ceil32(sq)] (inf past sq; [b, h, 0] with
                         is_test); seed_and_offset int64 [2] (Paddle's generator state, [0, 0] here). The kernel
                         draws dropout whenever dropout_p != 0, is_test or not: refused. The block-diagonal masks'
                         cu_seqlens_q / cu_seqlens_k / causal_diagonal / seqlen_k are refused by name.
"""

from __future__ import annotations

from ..ir import AttrType, VarType, dtype_name
from ..registry import NO_GRAD, defop, grad_op, typed
from .infer import check_float, one_dtype

FLASH_ATTRS = {"dropout": 0.0, "causal": False, "return_softmax": False, "is_test": False, "rng_name": ""}
UNPADDED_ATTRS = {"max_seqlen_q": typed(0, AttrType.LONG), "max_seqlen_k": typed(0, AttrType.LONG), "scale": 0.0,
                  **FLASH_ATTRS}
STATE = ["softmax", "softmax_lse", "seed_offset"]


def rounded(n: int) -> int:
    """The kernel's row padding of softmax and softmax_lse: n up to a multiple of 128."""
    return -1 if n < 0 else (n + 127) // 128 * 128


def refuse_draws(ctx) -> None:
    if ctx.attr("dropout") > 0 and not ctx.attr("is_test"):
        ctx.fail(f"dropout={ctx.attr('dropout')} in training draws its mask from Paddle's GPU (curand Philox) random "
                 "stream, which gradc cannot reproduce: only is_test or dropout 0 run")
    if ctx.attr("return_softmax"):
        ctx.fail("return_softmax: Paddle's kernel returns the softmax only with a training dropout > 0, which "
                 "gradc refuses")


def check_heads(ctx, q: list[int], k: list[int], v: list[int], rank: int) -> None:
    if len(q) != rank or len(k) != rank or len(v) != rank:
        layout = "[batch, seq_len, heads, head_dim]" if rank == 4 else "[total_tokens, heads, head_dim]"
        ctx.fail(f"q, k and v must be {layout}, got {q}, {k}, {v}")
    heads, kv_heads = q[-2], k[-2]
    if k[:-1] != v[:-1] or (q[-1] >= 0 and k[-1] >= 0 and q[-1] != k[-1]) or (rank == 4 and min(q[0], k[0]) >= 0
                                                                               and q[0] != k[0]):
        ctx.fail(f"k {k} and v {v} must share all dims but the last, and k the head_dim (and batch) of q {q}")
    if min(heads, kv_heads) > 0 and heads % kv_heads:
        ctx.fail(f"k's {kv_heads} heads must divide q's {heads} (grouped-query attention)")


def state_outputs(ctx, q, v, batch: int, heads: int, rows: int, cols: int) -> dict:
    dtype = ctx.dtype("q" if ctx.has("q") else "qkv")
    return {"out": ([*q[:-1], v[-1]], dtype), "softmax": ([batch, heads, rounded(rows), rounded(cols)], dtype),
            "softmax_lse": ([batch, heads, rounded(rows)], VarType.FP32), "seed_offset": ([2], VarType.INT64)}


def _check_common(ctx, extra: tuple[str, ...]) -> tuple:
    refuse_draws(ctx)
    check_float(ctx, "q")
    one_dtype(ctx, "q", "k", "v", *extra)
    if ctx.has("fixed_seed_offset") and ctx.dtype("fixed_seed_offset") not in (None, VarType.INT64):
        ctx.fail(f"fixed_seed_offset must be int64 [2], got {dtype_name(ctx.dtype('fixed_seed_offset'))}")
    return tuple(ctx.shape(slot) for slot in ("q", "k", "v"))


def mask_slots(ctx) -> tuple[str, ...]:
    if ctx.has("attn_mask") and ctx.attr("causal"):
        ctx.fail("attn_mask and causal cannot be set together (Paddle's kernel refuses it)")
    return ("attn_mask",) if ctx.has("attn_mask") else ()


def check_mask(ctx, heads: int, rows: int, cols: int) -> None:
    mask = ctx.shape("attn_mask") if ctx.has("attn_mask") else None
    if mask is not None and (len(mask) < 4 or mask[-3] not in (1, heads, -1) or mask[-2] not in (rows, -1)
                             or mask[-1] not in (cols, -1)):
        ctx.fail(f"attn_mask must be [..., 1 or heads={heads}, {rows}, {cols}], got {mask}")


def check_int32(ctx, *slots: str) -> None:
    for slot in slots:
        if ctx.has(slot) and ctx.dtype(slot) not in (None, VarType.INT32):
            ctx.fail(f"{slot} must be int32 (the kernel reads ints), got {dtype_name(ctx.dtype(slot))}")


def check_varlen(ctx) -> tuple[int, int]:
    """A varlen op's cu_seqlens (int32) and its max_seqlen_q / _k (not negative)."""
    check_int32(ctx, "cu_seqlens_q", "cu_seqlens_k")
    rows, cols = ctx.attr("max_seqlen_q"), ctx.attr("max_seqlen_k")
    if rows < 0 or cols < 0:
        ctx.fail(f"max_seqlen_q={rows} and max_seqlen_k={cols} must not be negative")
    return rows, cols


def _flash_infer(ctx):
    q, k, v = _check_common(ctx, mask_slots(ctx))
    if q is None or k is None or v is None:
        return {"out": (None, ctx.dtype("q"))}
    check_heads(ctx, q, k, v, 4)
    check_mask(ctx, q[2], q[1], k[1])
    return state_outputs(ctx, q, v, q[0], q[2], q[1], k[1])


def _unpadded_infer(ctx):
    q, k, v = _check_common(ctx, mask_slots(ctx))
    rows, cols = check_varlen(ctx)
    cu = ctx.shape("cu_seqlens_q")
    batch = cu[0] - 1 if cu is not None and len(cu) == 1 and cu[0] > 0 else -1
    if q is None or k is None or v is None:
        return {"out": (None, ctx.dtype("q"))}
    check_heads(ctx, q, k, v, 3)
    check_mask(ctx, q[1], rows, cols)
    return state_outputs(ctx, q, v, batch, q[1], rows, cols)


def _flashmask_infer(ctx):
    q, k, v = _check_common(ctx, ())
    if ctx.dtype("startend_row_indices") not in (None, VarType.INT32):
        ctx.fail(f"startend_row_indices must be int32, got {dtype_name(ctx.dtype('startend_row_indices'))}")
    if q is None or k is None or v is None:
        return {"out": (None, ctx.dtype("q"))}
    check_heads(ctx, q, k, v, 4)
    bounds, allowed = ctx.shape("startend_row_indices"), (1, 2) if ctx.attr("causal") else (2, 4)
    if bounds is not None and (len(bounds) != 4 or bounds[0] not in (q[0], -1) or bounds[1] not in (1, k[2], q[2], -1)
                               or bounds[2] not in (k[1], -1) or bounds[3] not in (*allowed, -1)):
        ctx.fail(f"startend_row_indices must be [batch={q[0]}, 1, kv heads={k[2]} or heads={q[2]}, seq_len_k={k[1]}, "
                 f"{' or '.join(map(str, allowed))}] (causal={ctx.attr('causal')}), got {bounds}")
    return state_outputs(ctx, q, v, q[0], q[2], q[1], k[1])


def _packed_infer(ctx):
    refuse_draws(ctx)
    check_float(ctx, "qkv")
    one_dtype(ctx, "qkv", *mask_slots(ctx))
    qkv = ctx.shape("qkv")
    if qkv is None:
        return {"out": (None, ctx.dtype("qkv"))}
    if len(qkv) != 5 or (qkv[2] >= 0 and qkv[2] < 3):
        ctx.fail(f"qkv must be [batch, seq_len, heads / kv_heads + 2, kv_heads, head_dim], got {qkv}")
    heads = -1 if min(qkv[2], qkv[3]) < 0 else (qkv[2] - 2) * qkv[3]
    check_mask(ctx, heads, qkv[1], qkv[1])
    q = [qkv[0], qkv[1], heads, qkv[4]]
    return {**state_outputs(ctx, q, q, qkv[0], heads, qkv[1], qkv[1]), "out": (q, ctx.dtype("qkv"))}


def _reduced_infer(ctx):
    check_float(ctx, "q")
    one_dtype(ctx, "q", "k")
    if ctx.dtype("softmax_lse") not in (None, VarType.FP32):
        ctx.fail(f"softmax_lse must be float32 (flash_attn's), got {dtype_name(ctx.dtype('softmax_lse'))}")
    q, k, lse = (ctx.shape(slot) for slot in ("q", "k", "softmax_lse"))
    if q is None or k is None:
        return {"reduced_scores": (None, VarType.FP32)}
    check_heads(ctx, q, k, k, 4)
    if lse is not None and (len(lse) != 3 or lse[0] not in (q[0], -1) or lse[1] not in (q[2], -1)
                            or lse[2] not in (rounded(q[1]), -1)):
        ctx.fail(f"softmax_lse must be flash_attn's [batch={q[0]}, heads={q[2]}, {rounded(q[1])}], got {lse}")
    return {"reduced_scores": ([q[0], q[2], 1, k[1]], VarType.FP32)}


COMMON = {"no_grad_outputs": STATE, "kernel_dtype_outputs": ["softmax_lse", "seed_offset"]}
defop("flash_attn", ["q", "k", "v", "fixed_seed_offset?", "attn_mask?"], ["out", *STATE], attrs=FLASH_ATTRS,
      infer=_flash_infer, no_grad_inputs=["fixed_seed_offset", "attn_mask"],
      grad=grad_op("q", "k", "v", "out", "softmax_lse", "seed_offset", "attn_mask"), **COMMON)
defop("flash_attn_unpadded", ["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "fixed_seed_offset?", "attn_mask?"],
      ["out", *STATE], attrs=UNPADDED_ATTRS, infer=_unpadded_infer, tensor_attrs=["max_seqlen_q", "max_seqlen_k"],
      no_grad_inputs=["cu_seqlens_q", "cu_seqlens_k", "fixed_seed_offset", "attn_mask"],
      grad=grad_op("q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "out", "softmax_lse", "seed_offset", "attn_mask"),
      **COMMON)
defop("flashmask_attention", ["q", "k", "v", "startend_row_indices", "fixed_seed_offset?"], ["out", *STATE],
      attrs=FLASH_ATTRS, infer=_flashmask_infer, no_grad_inputs=["startend_row_indices", "fixed_seed_offset"],
      grad=grad_op("q", "k", "v", "startend_row_indices", "out", "softmax_lse", "seed_offset"), **COMMON)
defop("flash_attn_qkvpacked", ["qkv", "fixed_seed_offset?", "attn_mask?"], ["out", *STATE], attrs=FLASH_ATTRS,
      infer=_packed_infer, no_grad_inputs=["fixed_seed_offset", "attn_mask"],
      grad=grad_op("qkv", "out", "softmax_lse", "seed_offset", "attn_mask"), **COMMON)
defop("calc_reduced_attn_scores", ["q", "k", "softmax_lse"], ["reduced_scores"], infer=_reduced_infer, grad=NO_GRAD)


MEA_ATTRS = {"max_seqlen_q": typed(0, AttrType.LONG), "max_seqlen_k": typed(0, AttrType.LONG), "causal": False,
             "dropout_p": typed(0.0, AttrType.FLOAT64), "scale": -1.0, "is_test": False}
BLOCK_DIAGONAL = ("cu_seqlens_q", "cu_seqlens_k", "causal_diagonal", "seqlen_k")


def _mea_infer(ctx):
    if ctx.attr("dropout_p") != 0:
        ctx.fail(f"dropout_p={ctx.attr('dropout_p')}: the CUTLASS kernel draws its mask from Paddle's GPU (curand "
                 "Philox) stream whenever dropout_p != 0, is_test or not, which gradc cannot reproduce")
    for slot in BLOCK_DIAGONAL:
        if ctx.has(slot):
            ctx.fail(f"{slot}: gradc runs memory_efficient_attention's dense form only (no block-diagonal mask)")
    check_float(ctx, "query")
    one_dtype(ctx, "query", "key", "value", *(("bias",) if ctx.has("bias") else ()))
    q, k, v = (ctx.shape(slot) for slot in ("query", "key", "value"))
    if q is None or k is None or v is None:
        return {"output": (None, ctx.dtype("query"))}
    if len(q) != 4 or len(k) != 4 or len(v) != 4 or any(
            a >= 0 and b >= 0 and a != b for a, b in zip([*q[:1], *q[2:], *k[:3]], [*k[:1], *k[2:], *v[:3]])):
        ctx.fail(f"query {q}, key {k} and value {v} must be [batch, seq_len, heads, head_dim] with one batch and "
                 "heads, key's head_dim that of query, and value's seq_len that of key")
    bias = ctx.shape("bias") if ctx.has("bias") else None
    if bias is not None and (len(bias) != 4 or bias[0] not in (1, q[0], -1) or bias[1] not in (1, q[2], -1)
                             or bias[2] not in (q[1], -1) or bias[3] not in (k[1], -1)):
        ctx.fail(f"bias must be [1 or batch={q[0]}, 1 or heads={q[2]}, {q[1]}, {k[1]}], got {bias}")
    rows = 0 if ctx.attr("is_test") or q[1] < 0 else (q[1] + 31) // 32 * 32
    return {"output": ([*q[:3], v[3]], ctx.dtype("query")), "logsumexp": ([q[0], q[2], rows], VarType.FP32),
            "seed_and_offset": ([2], VarType.INT64)}


defop("memory_efficient_attention", ["query", "key", "value", "bias?", *(f"{slot}?" for slot in BLOCK_DIAGONAL)],
      ["output", "logsumexp", "seed_and_offset"], attrs=MEA_ATTRS, infer=_mea_infer,
      tensor_attrs=["max_seqlen_q", "max_seqlen_k"], no_grad_inputs=list(BLOCK_DIAGONAL),
      no_grad_outputs=["logsumexp", "seed_and_offset"], kernel_dtype_outputs=["logsumexp", "seed_and_offset"],
      grad=grad_op("query", "key", "value", "bias", "cu_seqlens_q", "cu_seqlens_k", "output", "logsumexp",
                   "seed_and_offset"))
