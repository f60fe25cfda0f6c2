"""FlashAttention-3 (FLAGS_flash_attn_version=3 on Hopper: paddle.nn.functional.flash_attention, flash_attn_varlen_func
/ flash_attention_v3_varlen, flashmask_attention): Paddle 3.3.1 has CUDA kernels only; gradc follows their formulas
in float64 inside. Where they differ from FlashAttention-2's (gradc.ops.flash_attention):

    flash_attn_v3        q [b, sq, h, d], k [b, sk, hk, d], v [b, sk, hk, dv]; out [b, sq, h, dv] = softmax(s) v,
                         s = q k^T softmax_scale (the float32 attribute, Python's default d^-0.5), or softcap
                         tanh(s / softcap) when softcap > 0; causal and the local window keep key j of row i when
                         i + sk - sq - window_size_left <= j <= i + sk - sq + window_size_right (a negative size: no
                         bound; causal: right 0) -- FlashAttention-3's bottom-right diagonal, where the fork's
                         FlashAttention-2 aligns top-left. softmax_lse float32 [b, h, sq], unpadded (v2: ceil128)
    flash_attn_v3_varlen q [total_q, h, d], k / v [total_k, hk, d]; sequence s is rows cu_seqlens_q[s] .. (of length
                         seqused_q[s] when given, else to cu_seqlens_q[s + 1]) against rows cu_seqlens_k[s] .. (the
                         same with seqused_k); the window per sequence; softmax_lse [h, total_q] at each row's packed
                         index; rows no sequence reads are 0
    flashmask_attention_v2  flashmask_attention's startend_row_indices [b, 1 | hk | h, sk, 1 | 2 | 4] with causal's
                         bottom-right diagonal, softmax_scale, and block_mask [b, like the bounds' heads, ceil128(sq),
                         ceil128(sk)] int32 whose 0 entries drop a 128 x 128 tile; no dropout, no seed

A row with no key left is 0 with lse inf. The kernels take no dropout and no seed. Refused by name: q_v_ / qv (the
extra q_v v^T scores of multi-head latent attention) and the float8 descales. Second derivatives:
gradc.ops.flash_attention_v3_double.
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import defop, grad_op, typed
from .flash_attention import check_heads, check_int32
from .infer import check_float, one_dtype

WINDOW = {"window_size_left": -1, "window_size_right": -1, "softcap": 0.0}
TUNING = {"num_splits": 1, "manual_set_pack_gqa": False}
V3_ATTRS = {"softmax_scale": 0.0, "is_causal": False, **WINDOW, **TUNING, "pack_gqa_": False, "sm_margin": 0}
VARLEN_ATTRS = {"max_seqlen_q": typed(0, AttrType.LONG), "max_seqlen_k": typed(0, AttrType.LONG),
                "softmax_scale": 0.0, "causal": False, **WINDOW, **TUNING, "pack_gqa": False, "sm_margin": 0}
FLASHMASK_ATTRS = {"softmax_scale": 0.0, "is_causal": False}
STATE = {"no_grad_outputs": ["softmax_lse"], "kernel_dtype_outputs": ["softmax_lse"]}


def _refuse(ctx, slots: tuple[str, ...]) -> None:
    for slot in slots:
        if ctx.has(slot):
            ctx.fail(f"{slot}: gradc runs FlashAttention-3 without the multi-head latent attention term (q_v) and "
                     "without float8 descales")


def _qkv(ctx) -> tuple:
    check_float(ctx, "q")
    one_dtype(ctx, "q", "k", "v")
    return tuple(ctx.shape(slot) for slot in ("q", "k", "v"))


def _v3_infer(ctx):
    _refuse(ctx, ("q_v_", "q_descale_", "k_descale_", "v_descale_"))
    q, k, v = _qkv(ctx)
    if q is None or k is None or v is None:
        return {"out": (None, ctx.dtype("q"))}
    check_heads(ctx, q, k, v, 4)
    return {"out": ([*q[:3], v[3]], ctx.dtype("q")), "softmax_lse": ([q[0], q[2], q[1]], VarType.FP32)}


def _varlen_infer(ctx):
    _refuse(ctx, ("qv", "q_descale", "k_descale", "v_descale"))
    check_int32(ctx, "cu_seqlens_q", "cu_seqlens_k", "seqused_q", "seqused_k")
    if ctx.attr("max_seqlen_q") <= 0 or ctx.attr("max_seqlen_k") <= 0:
        ctx.fail(f"max_seqlen_q={ctx.attr('max_seqlen_q')} and max_seqlen_k={ctx.attr('max_seqlen_k')} must be "
                 "positive (the kernel requires them with cu_seqlens)")
    q, k, v = _qkv(ctx)
    if q is None or k is None or v is None:
        return {"out": (None, ctx.dtype("q"))}
    check_heads(ctx, q, k, v, 3)
    cu_q, cu_k = ctx.shape("cu_seqlens_q"), ctx.shape("cu_seqlens_k")
    if cu_q is not None and cu_k is not None and (len(cu_q) != 1 or cu_q != cu_k):
        ctx.fail(f"cu_seqlens_q {cu_q} and cu_seqlens_k {cu_k} must both be [sequences + 1]")
    for slot in ("seqused_q", "seqused_k"):
        used = ctx.shape(slot) if ctx.has(slot) else None
        if used is not None and cu_q is not None and min(cu_q[0], *used) >= 0 and used != [cu_q[0] - 1]:
            ctx.fail(f"{slot} must be [sequences={cu_q[0] - 1}], got {used}")
    return {"out": ([*q[:2], v[2]], ctx.dtype("q")), "softmax_lse": ([q[1], q[0]], VarType.FP32)}


def _flashmask_infer(ctx):
    q, k, v = _qkv(ctx)
    check_int32(ctx, "startend_row_indices", "block_mask")
    if q is None or k is None or v is None:
        return {"out": (None, ctx.dtype("q"))}
    check_heads(ctx, q, k, v, 4)
    bounds, allowed = ctx.shape("startend_row_indices"), (1, 2) if ctx.attr("is_causal") else (2, 4)
    if bounds is not None and (len(bounds) != 4 or bounds[0] not in (q[0], -1) or bounds[1] not in (1, k[2], q[2], -1)
                               or bounds[2] not in (k[1], -1) or bounds[3] not in (*allowed, -1)):
        ctx.fail(f"startend_row_indices must be [batch={q[0]}, 1, kv heads={k[2]} or heads={q[2]}, seq_len_k={k[1]}, "
                 f"{' or '.join(map(str, allowed))}] (is_causal={ctx.attr('is_causal')}), got {bounds}")
    tiles = ctx.shape("block_mask") if ctx.has("block_mask") else None
    want = [q[0], bounds[1] if bounds else -1, -(-q[1] // 128), -(-k[1] // 128)]
    if tiles is not None and (len(tiles) != 4 or any(t >= 0 and w >= 0 and t != w for t, w in zip(tiles, want))):
        ctx.fail(f"block_mask must be [batch, startend_row_indices' heads, ceil(sq / 128), ceil(sk / 128)] = {want}, "
                 f"got {tiles}")
    return {"out": ([*q[:3], v[3]], ctx.dtype("q")), "softmax_lse": ([q[0], q[2], q[1]], VarType.FP32)}


defop("flash_attn_v3", ["q", "k", "v", "q_v_?", "q_descale_?", "k_descale_?", "v_descale_?"], ["out", "softmax_lse"],
      attrs=V3_ATTRS, infer=_v3_infer, no_grad_inputs=["q_v_", "q_descale_", "k_descale_", "v_descale_"],
      grad=grad_op("q", "k", "v", "out", "softmax_lse"), **STATE)
defop("flash_attn_v3_varlen", ["q", "k", "v", "cu_seqlens_q", "cu_seqlens_k", "seqused_q?", "seqused_k?", "qv?",
                               "q_descale?", "k_descale?", "v_descale?"], ["out", "softmax_lse"],
      attrs=VARLEN_ATTRS, infer=_varlen_infer, tensor_attrs=["max_seqlen_q", "max_seqlen_k"],
      no_grad_inputs=["cu_seqlens_q", "cu_seqlens_k", "seqused_q", "seqused_k", "qv", "q_descale", "k_descale",
                      "v_descale"],
      grad=grad_op("q", "k", "v", "out", "softmax_lse", "cu_seqlens_q", "cu_seqlens_k", "seqused_q", "seqused_k"),
      **STATE)
defop("flashmask_attention_v2", ["q", "k", "v", "startend_row_indices", "block_mask?"], ["out", "softmax_lse"],
      attrs=FLASHMASK_ATTRS, infer=_flashmask_infer, no_grad_inputs=["startend_row_indices", "block_mask"],
      grad=grad_op("q", "k", "v", "out", "softmax_lse", "startend_row_indices", "block_mask"), **STATE)
