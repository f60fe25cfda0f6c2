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
([3, heads, head_dim, e], or [e, 3, heads, head_dim] without trans_qkvw) + qkv_biases[i] ([3, heads, head_dim]);
without time_step it is causal over the row's tokens (the kernel's flash attention: src_mask is not read), and
with cache_kvs ([2, b, heads, max_len, head_dim]) it writes k and v at positions 0.. of cache_kv_outs; with
time_step (decoding: s = 1) it writes the token's k and v at position time_step and attends to positions
0..time_step, src_mask [b, 1 or heads, 1, >= time_step + 1] added. The scale 1 / sqrt(head_dim) is float32.
As in the kernel, the linear biases count only when qkv_biases is given and the norm biases only when ln_biases
is; the dropouts never run (the kernel passes rate 0, whatever dropout_rate says), and ring_id is ignored (one
device). Refused: rotary_emb_dims != 0 (rotary_tensor), gqa_group_size > 0, pre_caches, beam_offset, and
seq_lengths while decoding.
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


def qkv_heads(shape: list[int], trans_qkvw: bool) -> tuple[int, int]:
    """(heads, head_dim) of a qkv weight: [3, heads, head_dim, e], or [e, 3, heads, head_dim] without trans_qkvw."""
    return (shape[1], shape[2]) if trans_qkvw else (shape[2], shape[3])


def _refuse(ctx) -> None:
    if ctx.attr("rotary_emb_dims") != 0 or ctx.has("rotary_tensor"):
        ctx.fail("rotary embeddings (rotary_emb_dims, rotary_tensor) are not supported: gradc has not written the "
                 "kernel's rotary_qk from its CUDA source")
    if ctx.attr("gqa_group_size") > 0:
        ctx.fail(f"gqa_group_size={ctx.attr('gqa_group_size')}: grouped-query attention is not supported")
    for slot in ("pre_caches", "beam_offset"):
        if ctx.has(slot):
            ctx.fail(f"{slot} is not supported (prefix caches and beam search offsets)")
    if ctx.has("time_step") and ctx.has("seq_lengths"):
        ctx.fail("seq_lengths while decoding (with time_step) is not supported")
    if ctx.has("time_step") and not ctx.has("cache_kvs"):
        ctx.fail("time_step (decoding) needs cache_kvs")


def _fmt_infer(ctx):
    check_float(ctx, "x")
    _refuse(ctx)
    check_choice(ctx, "norm_type", ("layernorm", "rmsnorm"))
    method = check_choice(ctx, "act_method", ("gelu", "relu", *GLU))
    dtype = one_dtype(ctx, "x", "qkv_weights", "out_linear_weights", "ffn1_weights", "ffn2_weights")
    layers = len(ctx.op.inputs.get("qkv_weights", []))
    for slot in (*LAYER_LISTS, *BIAS_LISTS, "cache_kvs"):
        count = len(ctx.op.inputs.get(slot, []))
        if count and count != layers:
            ctx.fail(f"{slot} holds {count} tensors, one per layer is {layers} (qkv_weights)")
    x, w = ctx.shape("x"), ctx.shape("qkv_weights")
    if x is None or w is None:
        return {"out": (x, dtype)}
    if len(x) != 3 or len(w) != 4:
        ctx.fail(f"x must be [batch, seq_len, embed] and qkv_weights 4-D, got x {x}, qkv_weights {w}")
    heads, head_dim = qkv_heads(w, ctx.attr("trans_qkvw"))
    if ctx.has("time_step") and not dims_match(x[1], 1):
        ctx.fail(f"decoding (time_step) takes one token a row: x {x}")
    ffn1 = ctx.shape("ffn1_weights")
    if ffn1 is not None and method in GLU and ffn1[1] % 2:
        ctx.fail(f"{method} halves ffn1's output, which must be even: ffn1_weights {ffn1}")
    cache = ctx.shape("cache_kvs") if ctx.has("cache_kvs") else None
    if cache is not None and (len(cache) != 5 or cache[0] != 2 or not all(
            map(dims_match, (cache[1], cache[2], cache[4]), (x[0], heads, head_dim)))):
        ctx.fail(f"cache_kvs must be [2, {x[0]}, {heads}, max_len, {head_dim}], got {cache}")
    caches = [(ctx.shape("cache_kvs"), dtype)] * len(ctx.op.outputs.get("cache_kv_outs", []))
    return {"out": (x, dtype), "cache_kv_outs": caches}


defop("fused_multi_transformer",
      ["x", "ln_scales[]", "ln_biases[]?", "qkv_weights[]", "qkv_biases[]?", "cache_kvs[]?", "pre_caches[]?",
       "rotary_tensor?", "beam_offset?", "time_step?", "seq_lengths?", "src_mask?", "out_linear_weights[]",
       "out_linear_biases[]?", "ffn_ln_scales[]", "ffn_ln_biases[]?", "ffn1_weights[]", "ffn1_biases[]?",
       "ffn2_weights[]", "ffn2_biases[]?"], ["cache_kv_outs[]?", "out"], attrs=FMT_ATTRS, infer=_fmt_infer)
