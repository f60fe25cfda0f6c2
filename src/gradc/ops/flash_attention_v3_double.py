"""Second derivatives of gradc.ops.flash_attention_v3. flash_attn_v3_grad is written again as the attention in plain
differentiable ops (gradc.ops.flash_attention_double.attention_ops with the softmax_scale attribute; softcap as scale,
tanh, scale; the bottom-right window as tril_triu bands of -inf) and their grad ops, so its own grad and the third
derivatives follow; out and softmax_lse get no gradient (the expansion recomputes them). flash_attn_v3_varlen_grad and
flashmask_attention_v2_grad mask by run-time values (cu_seqlens, seqused, startend_row_indices, block_mask) that
plain ops of known shapes cannot slice: gradc refuses their second derivative by name."""

from __future__ import annotations

import math

from ..errors import GradError
from ..registry import defgrad
from . import flash_attention_v3  # noqa: F401  (register the grad ops given makers here)
from .composite import expansion, first
from .flash_attention_double import attention_ops, grads_again


def _band(f, scores: str, diagonal: int, lower: bool) -> str:
    """scores + -inf on the band tril_triu keeps (lower: j - i <= diagonal; upper: j - i >= diagonal)."""
    band = f.op("tril_triu", {"X": f.fill_like(scores, -math.inf)}, scores, {"diagonal": diagonal, "lower": lower})
    return f.add(scores, band, scores)


def _masked(g):
    """FlashAttention-3's softcap and bottom-right window on the scaled scores [.., sq, sk]."""
    cap, left, right = g.attr("softcap"), g.attr("window_size_left"), g.attr("window_size_right")
    right = 0 if g.attr("is_causal") else right

    def masked(f, scores: str, sq: int, sk: int) -> str:
        if cap > 0:
            scores = f.scale(f.unary("tanh", f.scale(scores, 1.0 / cap)), cap)
        if right >= 0:
            scores = _band(f, scores, sk - sq + right + 1, False)
        if left >= 0:
            scores = _band(f, scores, sk - sq - left - 1, True)
        return scores
    return masked


@expansion
def _v3_again(f, g):
    inputs = {slot: first(g.I(slot)) for slot in ("q", "k", "v")}
    out = attention_ops(f, g, *inputs.values(), scale=g.attr("softmax_scale"), mask_slot=None, masked=_masked(g))
    return grads_again(f, g, out, inputs)


def _refused(g):
    raise GradError(f"{g.fwd.type}: no second derivative in gradc (its mask comes from run-time values that plain "
                    "ops of known shapes cannot rebuild)")


defgrad("flash_attn_v3_grad", grad=_v3_again, no_grad_inputs=["out", "softmax_lse"])
defgrad("flash_attn_v3_varlen_grad", grad=_refused)
defgrad("flashmask_attention_v2_grad", grad=_refused)
