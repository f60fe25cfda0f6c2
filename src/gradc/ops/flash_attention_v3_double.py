"""Second derivatives of gradc.ops.flash_attention_v3. flash_attn_v3_grad is written again as the attention in plain
differentiable ops (gradc.ops.flash_attention_double.attention_ops with the softmax_scale attribute; softcap as scale,
tanh, scale; the bottom-right window as tril_triu bands of -inf) and their grad ops, so its own grad and the third
derivatives follow; out and softmax_lse get no gradient (the expansion recomputes them). flash_attn_v3_varlen_grad and
flashmask_attention_v2_grad mask by run-time values (cu_seqlens, seqused, startend_row_indices, block_mask): their
masks are rebuilt by comparisons as flash_attn_unpadded's and flashmask_attention's
(gradc.ops.flash_attention_masked_double), each sequence's window bottom-right: key j of query i kept while
-left <= place(j) - place(i) - (its sequence's key rows - query rows) <= right."""

from __future__ import annotations

import math

from ..errors import GradError
from ..registry import defgrad
from . import flash_attention_masked_double as masked
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


def _softcapped(g):
    cap = g.attr("softcap")
    return (lambda f, scores: f.scale(f.unary("tanh", f.scale(scores, 1.0 / cap)), cap)) if cap > 0 else None


@expansion
def _varlen_again(f, g):
    """All tokens as one batch (flash_attention_masked_double.packed_out), the window per sequence."""
    inputs = {slot: first(g.I(slot)) for slot in ("q", "k", "v")}
    shapes = [g.shape(x) for x in inputs.values()]
    if any(shape is None or shape[0] < 0 for shape in shapes) or g.shape(first(g.I("cu_seqlens_q"))) in (None, [-1]):
        raise GradError(f"{g.fwd.type}: a second derivative needs the token counts and cu_seqlens' length known, "
                        f"got q, k, v {shapes}")
    query = masked.tokens(f, "cu_seqlens_q", shapes[0][0], 0, False, "seqused_q")
    key = masked.tokens(f, "cu_seqlens_k", shapes[1][0], 0, False, "seqused_k")
    keep = masked.same_sequence(f, query, key)
    left, right = g.attr("window_size_left"), 0 if g.attr("causal") else g.attr("window_size_right")
    # the diagonal of query i: its place plus its sequence's key rows less its query rows
    key_rows = f.op("gather", {"X": key[4], "Index": query[0]}, query[3], {"axis": 0})
    diagonal = f.add(query[1], f.sub(key_rows, query[3], key_rows), key_rows)
    for bound, compare in ((right, "less_equal"), (-left, "greater_equal")):
        if (bound >= 0) if compare == "less_equal" else (bound <= 0):   # a negative window size: unbounded
            edge = masked.column(f, f.add(diagonal, masked.ints(f, diagonal, [bound]), diagonal))
            keep = masked.logic(f, "logical_and", keep, masked.logic(f, compare, key[1], edge))
    return grads_again(f, g, masked.packed_out(f, g, *inputs.values(), keep, g.attr("softmax_scale"),
                                               _softcapped(g)), inputs)


@expansion
def _flashmask_v2_again(f, g):
    inputs = {slot: first(g.I(slot)) for slot in ("q", "k", "v")}
    out = masked.flashmask_out(f, g, *inputs.values(), g.attr("softmax_scale"), "is_causal", bottom_right=True)
    return grads_again(f, g, out, inputs)


defgrad("flash_attn_v3_grad", grad=_v3_again, no_grad_inputs=["out", "softmax_lse"])
defgrad("flash_attn_v3_varlen_grad", grad=_varlen_again,
        no_grad_inputs=["out", "softmax_lse", "cu_seqlens_q", "cu_seqlens_k", "seqused_q", "seqused_k"])
defgrad("flashmask_attention_v2_grad", grad=_flashmask_v2_again,
        no_grad_inputs=["out", "softmax_lse", "startend_row_indices", "block_mask"])
