"""flash_attn_varlen_qkvpacked (paddle.nn.functional.flash_attn_varlen_qkvpacked; a CUDA kernel only):
flash_attn_unpadded on the kernel's slices of a packed qkv [total, h / hk + 2, hk, d] (q its first h / hk groups
flattened to [total, h, d], k and v the last two, as flash_attn_qkvpacked slices them), out [total, h, d].
varlen_padded (the Python default): sequence s sits at rows s max_seqlen_q .. of q and out and s max_seqlen_k .. of k
and v (the fork's batch stride of max_seqlen rows), cu_seqlens giving only its length, and out is zeroed first;
without it, rows cu_seqlens_q[s] .. as flash_attn_unpadded. softmax_lse, seed_offset, the refusals and the scale are
flash_attn_unpadded's; the second derivative is refused by name (gradc.ops.flash_attention_double), the sequences
being run-time values."""

from __future__ import annotations

from ..registry import defop, grad_op
from .flash_attention import (
    COMMON,
    STATE,
    UNPADDED_ATTRS,
    check_mask,
    check_varlen,
    mask_slots,
    refuse_draws,
    state_outputs,
)
from .infer import check_float, one_dtype


def _varlen_packed_infer(ctx):
    refuse_draws(ctx)
    check_float(ctx, "qkv")
    one_dtype(ctx, "qkv", *mask_slots(ctx))
    rows, cols = check_varlen(ctx)
    qkv, cu = ctx.shape("qkv"), ctx.shape("cu_seqlens_q")
    if qkv is None:
        return {"out": (None, ctx.dtype("qkv"))}
    if len(qkv) != 4 or (qkv[1] >= 0 and qkv[1] < 3):
        ctx.fail(f"qkv must be [total_tokens, heads / kv_heads + 2, kv_heads, head_dim], got {qkv}")
    heads = -1 if min(qkv[1], qkv[2]) < 0 else (qkv[1] - 2) * qkv[2]
    check_mask(ctx, heads, rows, cols)
    batch = cu[0] - 1 if cu is not None and len(cu) == 1 and cu[0] > 0 else -1
    q = [qkv[0], heads, qkv[3]]
    return {**state_outputs(ctx, q, q, batch, heads, rows, cols), "out": (q, ctx.dtype("qkv"))}


defop("flash_attn_varlen_qkvpacked", ["qkv", "cu_seqlens_q", "cu_seqlens_k", "fixed_seed_offset?", "attn_mask?"],
      ["out", *STATE], attrs={**UNPADDED_ATTRS, "varlen_padded": True}, infer=_varlen_packed_infer,
      tensor_attrs=["max_seqlen_q", "max_seqlen_k"],
      no_grad_inputs=["cu_seqlens_q", "cu_seqlens_k", "fixed_seed_offset", "attn_mask"],
      grad=grad_op("qkv", "cu_seqlens_q", "cu_seqlens_k", "out", "softmax_lse", "seed_offset", "attn_mask"), **COMMON)
