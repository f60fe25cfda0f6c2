"""paddle.signal's framing ops. frame cuts frames of frame_length samples, hop_length apart, from the sequence
along ``axis`` (0 or -1) of X: X [..., seq] -> Out [..., frame_length, n_frames] (axis -1), X [seq, ...] ->
Out [n_frames, frame_length, ...] (axis 0), n_frames = 1 + (seq - frame_length) // hop_length; samples past the
last whole frame are dropped. overlap_add is its adjoint: it sums frames [..., frame_length, n_frames] (or
[n_frames, frame_length, ...]) hop_length apart into a sequence of (n_frames - 1) * hop_length + frame_length.

Each grad op is the other op applied to dOut (frame_grad reads X for the sequence length); both are linear, so
their makers (gradc.ops.signal_double) give every higher derivative.
"""

from __future__ import annotations

from ..registry import defop, grad_op

AXES = (0, -1)


def _checked_attrs(ctx, *names: str) -> int:
    """The op's axis, after checking it is 0 or -1 and that the attributes ``names`` are positive."""
    axis = ctx.attr("axis")
    if axis not in AXES:
        ctx.fail(f"axis {axis} must be 0 or -1")
    for name in names:
        if ctx.attr(name) <= 0:
            ctx.fail(f"{name} {ctx.attr(name)} must be > 0")
    return axis


def frame_count(seq: int, frame_length: int, hop_length: int) -> int:
    """The number of whole frames in a sequence of ``seq`` samples (-1: unknown)."""
    return -1 if seq < 0 else 1 + (seq - frame_length) // hop_length


def _frame_infer(ctx):
    axis = _checked_attrs(ctx, "frame_length", "hop_length")
    x, length = ctx.shape("X"), ctx.attr("frame_length")
    if x is None:
        return {"Out": (None, ctx.dtype("X"))}
    if not x:
        ctx.fail("X must have at least 1 dim, got a 0-d tensor")
    seq = x[0] if axis == 0 else x[-1]
    if length > seq >= 0:
        ctx.fail(f"frame_length {length} is longer than the sequence ({seq} samples along axis {axis})")
    n = frame_count(seq, length, ctx.attr("hop_length"))
    return {"Out": ([n, length, *x[1:]] if axis == 0 else [*x[:-1], length, n], ctx.dtype("X"))}


def _overlap_add_infer(ctx):
    axis = _checked_attrs(ctx, "hop_length")
    x, hop = ctx.shape("X"), ctx.attr("hop_length")
    if x is None:
        return {"Out": (None, ctx.dtype("X"))}
    if len(x) < 2:
        ctx.fail(f"X must have at least 2 dims (frame_length, n_frames), got shape {x}")
    n, length, rest = (x[0], x[1], x[2:]) if axis == 0 else (x[-1], x[-2], x[:-2])
    if hop > length >= 0:
        ctx.fail(f"hop_length {hop} is longer than the frames (frame_length {length}): samples between them "
                 f"would have no value")
    seq = -1 if min(n, length) < 0 else (n - 1) * hop + length
    return {"Out": ([seq, *rest] if axis == 0 else [*rest, seq], ctx.dtype("X"))}


defop("frame", ["X"], attrs={"frame_length": 1, "hop_length": 1, "axis": -1}, infer=_frame_infer,
      grad=grad_op("X"))
defop("overlap_add", ["X"], attrs={"hop_length": 1, "axis": -1}, infer=_overlap_add_infer, grad=grad_op("X"))
