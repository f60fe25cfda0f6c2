"""Kernels of gradc.ops.signal. Both ops work on the sequence as the last axis (axis 0 moves it there and back):
frame gathers each frame's samples, overlap_add adds the frames back, one shifted slice per step."""

from __future__ import annotations

import numpy as np

from ...ops.signal import AXES
from . import kernel


def _axis(k) -> int:
    axis = k.attr("axis")
    if axis not in AXES:
        raise ValueError(f"axis {axis} must be 0 or -1")
    return axis


def _hop(k) -> int:
    hop = k.attr("hop_length")
    if hop <= 0:
        raise ValueError(f"hop_length {hop} must be > 0")
    return hop


def frames(x: np.ndarray, length: int, hop: int, axis: int) -> np.ndarray:
    """The whole frames of ``x``'s sequence along ``axis``: [..., length, n] (axis -1) or [n, length, ...] (axis 0)."""
    seq = x.shape[axis] if x.ndim else 0
    if not 0 < length <= seq:
        raise ValueError(f"frame_length {length} must be in [1, {seq}], the sequence's length along axis {axis}")
    # a view of every window (sized by X, which may be empty), every hop-th one copied: [..., n, length]
    windows = np.lib.stride_tricks.sliding_window_view(x, length, axis)
    if axis == 0:
        return np.moveaxis(windows[::hop], -1, 1).copy()
    return np.swapaxes(windows[..., ::hop, :], -1, -2).copy()


def overlap(framed: np.ndarray, hop: int, axis: int, seq: int | None = None) -> np.ndarray:
    """The frames of ``framed`` (laid out as ``frames`` gives them) added hop samples apart into a sequence of
    ``seq`` samples (default: up to the last frame's end) along ``axis``."""
    if framed.ndim < 2:
        raise ValueError(f"the frames need at least 2 dims (frame_length, n_frames), got shape {list(framed.shape)}")
    if axis == 0:
        framed = np.moveaxis(framed, (0, 1), (-1, -2))
    length, n = framed.shape[-2:]
    end = (n - 1) * hop + length
    out = np.zeros((*framed.shape[:-2], max(end, 0) if seq is None else seq), framed.dtype)
    if n <= length:   # one slice per frame, or one strided write per offset in the frame: the fewer
        for j in range(n if framed.size else 0):   # (an empty X may have many frames or offsets: none to add)
            out[..., j * hop:j * hop + length] += framed[..., j]
    else:
        for offset in range(length if framed.size else 0):
            out[..., offset:offset + (n - 1) * hop + 1:hop] += framed[..., offset, :]
    return np.moveaxis(out, -1, 0) if axis == 0 else out


@kernel("frame")
def frame(k):
    return {"Out": frames(k.x("X"), k.attr("frame_length"), _hop(k), _axis(k))}


@kernel("frame_grad", shape_only=("X",))
def frame_grad(k):
    axis = _axis(k)
    return {"X@GRAD": overlap(k.x("Out@GRAD"), _hop(k), axis, k.x("X").shape[axis])}


@kernel("overlap_add")
def overlap_add(k):
    x, hop = k.x("X"), _hop(k)
    axis = _axis(k)
    length = x.shape[1 if axis == 0 else -2] if x.ndim >= 2 else 0
    if hop > length:
        raise ValueError(f"hop_length {hop} must not exceed frame_length {length}")
    return {"Out": overlap(x, hop, axis)}


@kernel("overlap_add_grad", shape_only=("X",))
def overlap_add_grad(k):
    axis, x = _axis(k), k.x("X")
    return {"X@GRAD": frames(k.x("Out@GRAD"), x.shape[1 if axis == 0 else -2], _hop(k), axis)}
