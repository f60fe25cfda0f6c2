"""fused_multi_transformer (PaddleNLP's inference export of GPT / Llama with use_fused_multi_transformer,
paddle.incubate.nn.FusedMultiTransformer): a stack of decoder layers in one op. Paddle 3.3.1 has a CUDA kernel only
(float16 / bfloat16) and no gradient; gradc follows the kernel's formula (fused_multi_transformer_kernel.cu) in any
float dtype. Layer i, over each batch row's tokens (its first seq_lengths[b] of x [b, s, e], the rest of out 0):

    pre_layer_norm:  h = norm(x; ln_scales[i]);   r = attn(h) out_linear_weights[i] + out_linear_biases[i] + a x
                     x' = act(norm(r; ffn_ln_scales[i]) ffn1_weights[i] + ffn1_biases[i]) ffn2_weights[i]
                          + ffn2_biases[i] + a r   (a = residual_alpha; the last layer adds r itself)
    otherwise:       r = norm(attn(x) out_linear_weights[i] + out_linear_biases[i] + a x; ln_scales[i])
                     x' = norm(act(r ffn1_weights[i] + ffn1_biases[i]) ffn2_weights[i] + ffn2_biases[i] + a r;
                               ffn_ln_scales[i])

norm is layernorm or rmsnorm (norm_type; residual_alpha applies to layernorm only, as in the kernel), act is
gelu / relu or the GLUs geglu / swiglu (gradc.ops.fused_llm's fused_bias_act). attn: qkv = h qkv_weights[i]
+ qkv_biases[i], the weight [3, heads, head_dim, e] (or [e, 3, heads, head_dim] without trans_qkvw), or with
gqa_group_size = g > 0 [heads + 2 g, head_dim, e] (or [e, heads + 2 g, head_dim]): heads query heads, then g key
and g value heads, query head h reading kv head h / (heads / g). rotary_emb_dims > 0 turns q and k by
rotary_tensor [2 (cos, sin), b, 1, s, head_dim] (decoding: [2, b, 1, 1, head_dim]), neox style (halves of each of
rotary_emb_dims chunks) or adjacent pairs (gradc.executor.kernels.llm_attention.rotate). Without time_step it is
causal over the row's tokens (the kernel's flash attention: src_mask is not read), after pre_caches[i]
([2, b, g or heads, p, head_dim], a prefix every token sees), and with cache_kvs ([2, b, g or heads, max_len,
head_dim], keys in the kernel's 16-byte chunks as masked_multihead_attention's cache_kv) it writes prefix, k and v
at positions 0.. of cache_kv_outs; with time_step (decoding: s = 1) each row writes its token's k and v at step
t = seq_lengths[b] (or time_step; a row of length 0 is skipped, out 0) and attends to positions 0..t,
src_mask [b, 1 or heads, 1, >= t] added to the cached positions 0..t-1 (the kernel reads no column for the token
itself). The scale 1 / sqrt(head_dim) is float32. As in the kernel, the linear biases count only when qkv_biases
is given and the norm biases only when ln_biases is; the dropouts never run (the kernel passes rate 0, whatever
dropout_rate says), ring_id is ignored (one device) and beam_offset is not read (the kernel's decoding attention
reads no beam offset). Refused: rotary_emb_dims > 0 without rotary_tensor, time_step without cache_kvs.
"""

from __future__ import annotations

from ..registry import defop
from ..shapes import dims_match
from .fused_llm import GLU
from .infer import check_choice, check_float, one_dtype

FMT_ATTRS = {"pre_layer_norm": True, "epsilon": 1e-5, "residual_alpha": 1.0, "dropout_rate": 0.5, "rotary_emb_dims": 0,
             "is_test": False, "dropout_implementation": "downgrade_in_infer", "act_method": "gelu",
             "trans_qkvw": True, "ring_id": -1, "norm_type": "layernorm", "use_neox_rotary_style": True,
             "gqa_group_size": -1}
LAYER_LISTS = ("ln_scales", "qkv_weights", "out_linear_weights", "ffn_ln_scales", "ffn1_weights", "ffn2_weights")
BIAS_LISTS = ("ln_biases", "qkv_biases", "out_linear_biases", "ffn_ln_biases", "ffn1_biases", "ffn2_biases")


def qkv_heads(shape: list[int], trans_qkvw: bool, group: int) -> tuple[int, int, int]:
    """(heads, kv_heads, head_dim) of a qkv weight: [3, heads, head_dim, e] (trans_qkvw) or [e, 3, heads,
    head_dim]; with gqa_group_size = group > 0, [heads + 2 group, head_dim, e] or [e, heads + 2 group, head_dim]."""
    if group > 0:
        rows, dim = (shape[0], shape[1]) if trans_qkvw else (shape[1], shape[2])
        return rows - 2 * group, group, dim
    heads, dim = (shape[1], shape[2]) if trans_qkvw else (shape[2], shape[3])
    return heads, heads, dim


def _check_heads(ctx, w: list[int]) -> tuple[int, int, int]:
    group = ctx.attr("gqa_group_size")
    if len(w) != (3 if group > 0 else 4):
        ctx.fail(f"qkv_weights must be {'3' if group > 0 else '4'}-D with gqa_group_size={group}, got {w}")
    heads, kv_heads, dim = qkv_heads(w, ctx.attr("trans_qkvw"), group)
    if heads <= 0 or heads % kv_heads:
        ctx.fail(f"qkv_weights {w} holds {heads} query heads, which gqa_group_size={group} kv heads must divide")
    return heads, kv_heads, dim


def _check_rotary(ctx, x: list[int], dim: int) -> None:
    dims, table = ctx.attr("rotary_emb_dims"), ctx.shape("rotary_tensor") if ctx.has("rotary_tensor") else None
    if dims < 0 or (dims > 0 and not ctx.has("rotary_tensor")):
        ctx.fail(f"rotary_emb_dims={dims} must be 0, or > 0 with rotary_tensor")
    if dims > 0 and dim % (2 * dims):
        ctx.fail(f"rotary_emb_dims={dims} must split head_dim {dim} into chunks of even width")
    positions = 1 if ctx.has("time_step") else x[1]
    if dims > 0 and table is not None and (len(table) != 5 or not all(
            map(dims_match, table, (2, x[0], 1, positions, dim)))):
        ctx.fail(f"rotary_tensor must be [2, {x[0]}, 1, {positions}, {dim}] (cos, sin), got {table}")


def _check_cache(ctx, slot: str, x: list[int], kv_heads: int, dim: int) -> None:
    for shape in [ctx.shape(slot)] if ctx.has(slot) else []:
        if shape is not None and (len(shape) != 5 or shape[0] != 2 or not all(
                map(dims_match, (shape[1], shape[2], shape[4]), (x[0], kv_heads, dim)))):
            ctx.fail(f"{slot} must be [2, {x[0]}, {kv_heads}, length, {dim}], got {shape}")


def _fmt_infer(ctx):
    check_float(ctx, "x")
    if ctx.has("time_step") and not ctx.has("cache_kvs"):
        ctx.fail("time_step (decoding) needs cache_kvs")
    check_choice(ctx, "norm_type", ("layernorm", "rmsnorm"))
    method = check_choice(ctx, "act_method", ("gelu", "relu", *GLU))
    dtype = one_dtype(ctx, "x", "qkv_weights", "out_linear_weights", "ffn1_weights", "ffn2_weights")
    layers = len(ctx.op.inputs.get("qkv_weights", []))
    for slot in (*LAYER_LISTS, *BIAS_LISTS, "cache_kvs", "pre_caches"):
        count = len(ctx.op.inputs.get(slot, []))
        if count and count != layers:
            ctx.fail(f"{slot} holds {count} tensors, one per layer is {layers} (qkv_weights)")
    x, w = ctx.shape("x"), ctx.shape("qkv_weights")
    if x is None or w is None:
        return {"out": (x, dtype)}
    if len(x) != 3:
        ctx.fail(f"x must be [batch, seq_len, embed], got {x}")
    _, kv_heads, head_dim = _check_heads(ctx, w)
    _check_rotary(ctx, x, head_dim)
    if ctx.has("time_step") and not dims_match(x[1], 1):
        ctx.fail(f"decoding (time_step) takes one token a row: x {x}")
    ffn1 = ctx.shape("ffn1_weights")
    if ffn1 is not None and method in GLU and ffn1[1] % 2:
        ctx.fail(f"{method} halves ffn1's output, which must be even: ffn1_weights {ffn1}")
    _check_cache(ctx, "cache_kvs", x, kv_heads, head_dim)
    _check_cache(ctx, "pre_caches", x, kv_heads, head_dim)
    caches = [(ctx.shape("cache_kvs"), dtype)] * len(ctx.op.outputs.get("cache_kv_outs", []))
    return {"out": (x, dtype), "cache_kv_outs": caches}


defop("fused_multi_transformer",
      ["x", "ln_scales[]", "ln_biases[]?", "qkv_weights[]", "qkv_biases[]?", "cache_kvs[]?", "pre_caches[]?",
       "rotary_tensor?", "beam_offset?", "time_step?", "seq_lengths?", "src_mask?", "out_linear_weights[]",
       "out_linear_biases[]?", "ffn_ln_scales[]", "ffn_ln_biases[]?", "ffn1_weights[]", "ffn1_biases[]?",
       "ffn2_weights[]", "ffn2_biases[]?"], ["cache_kv_outs[]?", "out"], attrs=FMT_ATTRS, infer=_fmt_infer)
