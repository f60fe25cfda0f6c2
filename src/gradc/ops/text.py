"""paddle.text's Viterbi decoder (viterbi_decode): the highest-scoring tag path of each sequence of a batch under
emission scores (Input [batch, time, tags]) and tag-to-tag transition scores (Transition [tags, tags]), with each
sequence's length (Length [batch]). include_bos_eos_tag: the last tag is the start tag (its Transition row scores
the first step) and the one before it the stop tag (its row is added at each sequence's last step). No gradient."""

from __future__ import annotations

from ..ir import VarType
from ..ir.types import INTEGER_DTYPES
from ..registry import NO_GRAD, defop
from ..shapes import dims_match
from .infer import check_float, one_dtype


def _viterbi_infer(ctx):
    emission, transition, length = ctx.shape("Input"), ctx.shape("Transition"), ctx.shape("Length")
    one_dtype(ctx, "Input", "Transition")
    check_float(ctx, "Input")
    if emission is None:
        return {"Scores": (None, None), "Path": (None, VarType.INT64)}
    if len(emission) != 3:
        ctx.fail(f"viterbi_decode needs Input [batch, time, tags], got {emission}")
    if transition is not None and (len(transition) != 2 or not all(dims_match(d, emission[2]) for d in transition)):
        ctx.fail(f"viterbi_decode needs Transition [tags, tags] for Input {emission}, got {transition}")
    if length is not None and (len(length) != 1 or not dims_match(length[0], emission[0])):
        ctx.fail(f"viterbi_decode needs Length [batch] for Input {emission}, got {length}")
    if ctx.dtype("Length") is not None and ctx.dtype("Length") not in INTEGER_DTYPES:
        ctx.fail("viterbi_decode needs integer lengths in Length")
    # Path [batch, longest length] is known when it runs (Paddle's legacy programs declare it []). Scores has
    # Input's dtype whatever the program declares: Paddle's legacy programs declare it int64
    return {"Scores": ([emission[0]], None), "Path": (None, VarType.INT64)}


defop("viterbi_decode", ["Input", "Transition", "Length"], ["Scores", "Path"], attrs={"include_bos_eos_tag": True},
      infer=_viterbi_infer, grad=NO_GRAD, kernel_dtype_outputs=["Scores"])
