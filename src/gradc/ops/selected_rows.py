"""Ops on SelectedRows values (sparse gradients, gradc.executor.selected_rows) that Paddle's gradient clipping
writes before it takes a sparse gradient's norm. Neither has a gradient in Paddle: they only ever read
gradients, after the backward."""

from __future__ import annotations

from ..registry import NO_GRAD, defop


def _merge_infer(ctx):
    return {"Out": (ctx.shape("X"), ctx.dtype("X"))}


def _values_infer(ctx):
    """The values tensor: one row per selected row, how many only the run knows."""
    return {"Out": ([-1, *ctx.shape("X")[1:]], ctx.dtype("X"))}


defop("merge_selected_rows", ["X"], infer=_merge_infer, grad=NO_GRAD)
defop("get_tensor_from_selected_rows", ["X"], infer=_values_infer, grad=NO_GRAD)
