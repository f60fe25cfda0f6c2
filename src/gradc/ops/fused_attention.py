"""fused_attention (paddle.incubate.nn.FusedMultiHeadAttention, functional.fused_multi_head_attention): Paddle 3.3.1
has a CUDA kernel only; gradc follows its formula (fused_attention_kernel.cu, fmha_ref.h) for X [b, s, e]:

    h        = layer_norm(X; LnScale, LnBias, epsilon)                 if pre_layer_norm, else X
    q, k, v  = h QKVW^T + QKVBias, each [b, nh, s, dh]                 QKVW [3, nh, dh, e] (transpose_qkv_wb: [e, 3e],
               h QKVW, with num_heads heads)
    k, v     = CacheKV's [2, b, nh, cache_len, dh] then k, v along the sequence (CacheKVOut), if given
    P        = dropout_attn(softmax(q / sqrt(dh) k^T + SrcMask))      SrcMask broadcast to [b, nh, s, s_kv]
    Y        = dropout(concat_heads(P v) OutLinearW + OutLinearBias) (+ X if add_residual)
    Y        = layer_norm(Y; Ln2Scale, Ln2Bias, ln_epsilon)             unless pre_layer_norm

1 / sqrt(dh) is computed in float32, as the kernel's alpha. The dropouts run only where they draw nothing, as in
gradc.ops.fused_ffn (test, or a training rate of 0 or 1). ring_id is ignored: one device. The intermediate outputs
hold the kernel's values (TransposeOut2 with q already scaled); Paddle leaves some unwritten (AttnDropoutOut at a
rate of 0, the statistics of the layer norm that does not run), where gradc writes the value the formula gives or
zeros. Paddle's grad op also has outputs for the grads of the intermediates (its scratch space): gradc's leaves them
unwritten. SrcMask and CacheKV get no gradient (Paddle's grad op has no slot for them), and gradc refuses to
differentiate a layer with a CacheKV, which Paddle's grad op cannot see. Second derivatives:
gradc.ops.fused_attention_double.
"""

from __future__ import annotations

import math

from ..errors import GradError
from ..ir import VarType
from ..registry import defop
from ..shapes import dims_match, numel
from .composite import Formula, first
from .fused_ffn import IMPLEMENTATIONS, check_vector, drops_all, refuse_draws
from .infer import check_choice, check_float, one_dtype
from .interp import float32
from .nn import stats_dtype

ATTENTION_ATTRS = {"num_heads": -1, "transpose_qkv_wb": False, "pre_layer_norm": False, "epsilon": 1e-5,
                   "attn_dropout_rate": 0.5, "is_test": False, "attn_dropout_fix_seed": True, "attn_dropout_seed": 0,
                   "attn_dropout_implementation": "upscale_in_train", "dropout_rate": 0.5, "dropout_fix_seed": True,
                   "dropout_seed": 0, "dropout_implementation": "downgrade_in_infer", "ln_epsilon": 1e-5,
                   "add_residual": True, "ring_id": -1}
ATTENTION_INPUTS = ("X", "LnScale?", "LnBias?", "QKVW", "QKVBias?", "CacheKV?", "SrcMask?", "OutLinearW",
                    "OutLinearBias?", "Ln2Scale?", "Ln2Bias?")
ATTENTION_STATE = ("LnMean?", "LnVariance?", "LnOut?", "QKVOut", "QKVBiasOut?", "TransposeOut2", "QKOut", "QKTVOut",
                   "SoftmaxOut", "AttnDropoutMaskOut?", "AttnDropoutOut?", "SrcMaskOut?", "FMHAOut", "OutLinearOut",
                   "DropoutMaskOut?", "Ln2Mean?", "Ln2Variance?", "BiasDropoutResidualOut?")
PARAMETERS = ("X", "QKVW", "QKVBias", "OutLinearW", "OutLinearBias", "LnScale", "LnBias", "Ln2Scale", "Ln2Bias")
# the grads of intermediates Paddle's grad op writes as scratch
SCRATCH_GRADS = ("QKVBiasOut", "SrcMaskOut", "LnOut", "BiasDropoutResidualOut", "QKVOut", "QKTVOut", "TransposeOut2",
                 "QKOut", "SoftmaxOut", "AttnDropoutOut", "FMHAOut", "OutLinearOut")


def attention_dropout_factor(attr) -> float:
    """The attention dropout's factor where it draws nothing (Paddle's plain dropout kernel): at test 1.0f - rate
    with downgrade_in_infer, else 1; in training 0 at a rate of 1, else (a rate of 0) 1."""
    rate = attr("attn_dropout_rate")
    if attr("is_test"):
        downgrade = attr("attn_dropout_implementation") == "downgrade_in_infer"
        return float32(1 - float32(rate)) if downgrade else 1.0
    return 0.0 if drops_all(rate) else 1.0


def attention_scale(head_dim: int) -> float:
    """1 / sqrt(head_dim), rounded to float32 as the kernel's alpha is."""
    return float32(1 / math.sqrt(head_dim))


def heads(attr, weight: list[int], transposed: bool) -> tuple[int, int]:
    """(num_heads, head_dim) from QKVW's shape: [3, nh, dh, e], or [e, 3e] with the num_heads attribute."""
    if transposed:
        return attr("num_heads"), weight[0] // attr("num_heads")
    return weight[1], weight[2]


def triple(e: int) -> int:
    """3 e, or -1 for an e known at run time only."""
    return 3 * e if e >= 0 else -1


def embedding(x: list[int], w: list[int], transposed: bool) -> int:
    """The embedding size: X's last dim, else QKVW's (-1 where neither declares it)."""
    return x[2] if x[2] >= 0 else w[0 if transposed else -1] if len(w) in (2, 4) else -1


def _check_weights(ctx, x, w, transposed: bool) -> tuple[int, int]:
    e = embedding(x, w, transposed)
    if transposed:
        nh = ctx.attr("num_heads")
        if len(w) != 2 or nh <= 0 or not (dims_match(w[0], e) and dims_match(w[1], triple(e))) or e >= 0 and e % nh:
            ctx.fail(f"QKVW {w} with transpose_qkv_wb must be [{e}, {triple(e)}], with num_heads={nh} (> 0) "
                     f"dividing {e}")
    elif len(w) != 4 or not (dims_match(w[0], 3) and dims_match(w[3], e)) or min(w[1], w[2], e) >= 0 and \
            w[1] * w[2] != e:
        ctx.fail(f"QKVW {w} must be [3, num_heads, head_dim, {e}] with num_heads * head_dim = {e}")
    return heads(ctx.attr, w, transposed)


def _attention_infer(ctx):
    check_float(ctx, "X")
    refuse_draws(ctx, ("attn_dropout_rate", "dropout_rate"))
    check_choice(ctx, "attn_dropout_implementation", IMPLEMENTATIONS)
    check_choice(ctx, "dropout_implementation", IMPLEMENTATIONS)
    if not ctx.attr("pre_layer_norm") and not ctx.attr("add_residual"):
        ctx.fail("add_residual=False needs pre_layer_norm (the CUDA kernel has no post layer norm without it)")
    dtype = one_dtype(ctx, "X", "QKVW", "OutLinearW",
                      *(slot for slot in ("QKVBias", "CacheKV", "SrcMask", "OutLinearBias") if ctx.has(slot)))
    x, w, out_w = ctx.shape("X"), ctx.shape("QKVW"), ctx.shape("OutLinearW")
    if x is None or w is None or out_w is None:
        return {}
    if len(x) != 3:
        ctx.fail(f"X must be [batch, seq_len, embed_dim], got {x}")
    transposed = ctx.attr("transpose_qkv_wb")
    nh, dh = _check_weights(ctx, x, w, transposed)
    b, s, e = *x[:2], embedding(x, w, transposed)
    bias = ctx.shape("QKVBias") if ctx.has("QKVBias") else None
    if bias is not None and min(numel(bias), e) >= 0 and numel(bias) != 3 * e:
        ctx.fail(f"QKVBias {bias} must hold 3 x {e} values")
    if len(out_w) != 2 or not (dims_match(out_w[0], e) and dims_match(out_w[1], e)):
        ctx.fail(f"OutLinearW must be [{e}, {e}], got {out_w}")
    check_vector(ctx, "OutLinearBias", e, dtype)
    for slot in ("LnScale", "LnBias", "Ln2Scale", "Ln2Bias"):
        check_vector(ctx, slot, e, stats_dtype(dtype))
    kv_len, cache = s, ctx.shape("CacheKV") if ctx.has("CacheKV") else None
    if cache is not None:
        if len(cache) != 5 or cache[:3] != [2, b, nh] or not dims_match(cache[4], dh):
            ctx.fail(f"CacheKV must be [2, {b}, {nh}, cache_len, {dh}], got {cache}")
        kv_len = s + cache[3] if s >= 0 and cache[3] >= 0 else -1
    scores, stats = [b, nh, s, kv_len], ([numel(x[:2])], stats_dtype(dtype))
    qkv = [b, s, triple(e)] if transposed else [b, s, 3, nh, dh]
    return {"Y": (x, dtype), "LnMean": stats, "LnVariance": stats, "LnOut": (x, dtype), "QKVOut": (qkv, dtype),
            "QKVBiasOut": (qkv, dtype), "TransposeOut2": ([3, b, nh, s, dh], dtype), "QKOut": (scores, dtype),
            "QKTVOut": ([b, nh, s, dh], dtype), "SoftmaxOut": (scores, dtype), "SrcMaskOut": (scores, dtype),
            "AttnDropoutMaskOut": (scores, VarType.UINT8), "AttnDropoutOut": (scores, dtype),
            "FMHAOut": ([b, s, nh, dh], dtype), "OutLinearOut": (x, dtype), "DropoutMaskOut": (x, VarType.UINT8),
            "Ln2Mean": stats, "Ln2Variance": stats, "BiasDropoutResidualOut": (x, dtype),
            "CacheKVOut": ([2, b, nh, kv_len, dh], dtype)}


def _attention_grad(g):
    """One fused_attention_grad, reading what Paddle's grad maker passes it; its intermediate grads stay empty."""
    if first(g.I("CacheKV")):
        raise GradError(f"fused_attention: a layer with CacheKV {first(g.I('CacheKV'))} has no gradient in gradc: "
                        "Paddle's fused_attention_grad does not read the cache")
    f = Formula(g)
    state = [slot.rstrip("?") for slot in ATTENTION_STATE]
    inputs = {slot: g.I(slot) for slot in (*PARAMETERS, "SrcMask")} | {slot: g.O(slot) for slot in state}
    f.emit("fused_attention_grad", {**inputs, "Y@GRAD": g.OG("Y")},
           {f"{slot}@GRAD": g.IG(slot) for slot in PARAMETERS}, same=True)
    return f.ops


defop("fused_attention", ATTENTION_INPUTS, [*ATTENTION_STATE, "CacheKVOut?", "Y"], attrs=ATTENTION_ATTRS,
      infer=_attention_infer, no_grad_inputs=["CacheKV", "SrcMask"],
      no_grad_outputs=[slot.rstrip("?") for slot in ATTENTION_STATE] + ["CacheKVOut"], grad=_attention_grad)
defop("fused_attention_grad",
      ["Y@GRAD", "X", "QKVW", "QKVBias?", "QKVBiasOut?", "SrcMask?", "SrcMaskOut?", "OutLinearW", "OutLinearBias?",
       "LnScale?", "LnBias?", "Ln2Scale?", "Ln2Bias?", "LnOut?", "LnMean?", "LnVariance?", "Ln2Mean?", "Ln2Variance?",
       "BiasDropoutResidualOut?", "QKVOut", "TransposeOut2", "QKOut", "QKTVOut", "SoftmaxOut", "AttnDropoutMaskOut?",
       "AttnDropoutOut?", "FMHAOut", "OutLinearOut", "DropoutMaskOut?"],
      [f"{slot}@GRAD?" for slot in (*PARAMETERS, *SCRATCH_GRADS)], attrs=ATTENTION_ATTRS,
      infer=lambda ctx: {f"{slot}@GRAD": (ctx.shape(slot), ctx.dtype(slot)) for slot in PARAMETERS if ctx.has(slot)}
      ).grad_op_of = "fused_attention"
