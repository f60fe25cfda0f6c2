"""Kernels of gradc.ops.sequence_lod's windowed ops: sequence_conv (a window of rows around each row, within
its sequence) and im2sequence (windows of an image's pixels, one sequence per image)."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from ...ops import sequence_lod as ops
from ..lod import SETS_LOD
from . import kernel
from .sequence_lod import offsets, segment_ids

SETS_LOD.add("im2sequence")


# ---------------------------------------------------------------- sequence_conv

def _context(k):
    """(X, Filter, per context position j: (each row's source row, which rows it is inside their sequence, the
    PaddingData row of the others))."""
    x = k.x("X")
    length, start = k.attr("contextLength"), k.attr("contextStart")
    if length < 1 or k.attr("contextStride") != 1:
        raise ValueError(f"contextLength must be at least 1 and contextStride 1, got {length} and "
                         f"{k.attr('contextStride')}")
    if x.ndim != 2:
        raise ValueError(f"X must be 2-D [rows, width], got {list(x.shape)}")
    w = _filter(k, x)   # first: its rows bound contextLength, the loop's length (X of width 0 has no context)
    bounds = offsets(k, "X", at_most=1)
    ids = segment_ids(bounds)
    first, end = bounds[:-1][ids], bounds[1:][ids]
    up, _ = ops.context_pads(start, length)
    rows, positions = np.arange(x.shape[0]), length if x.shape[1] else 0
    # each row's context: a source row, a flag and a padding row per position, then the values of each
    check_shape((x.shape[0], positions, x.shape[1] + 3), np.int64, "sequence_conv's contexts")
    taps = []
    for j in range(positions):
        source = rows + start + j
        inside = (source >= first) & (source < end)
        pad_row = np.where(source < first, source - first + up, up + source - end)
        taps.append((np.where(inside, source, 0), inside, pad_row))
    return x, w, taps


def _padding(k, x) -> np.ndarray | None:
    """PaddingData when trainable (checked), else None (zeros)."""
    if not k.attr("paddingTrainable"):
        return None
    pad = k.optional("PaddingData")
    up, down = ops.context_pads(k.attr("contextStart"), k.attr("contextLength"))
    if pad is None or pad.shape != (up + down, x.shape[1]):
        raise ValueError(f"paddingTrainable needs PaddingData of shape [{up + down}, {x.shape[1]}], got "
                         f"{None if pad is None else list(pad.shape)}")
    return pad


def _columns(x, taps, pad) -> np.ndarray:
    """[rows, contextLength * width]: each row's context, the rows past its sequence's ends padded."""
    parts = []
    for source, inside, pad_row in taps:
        part = np.where(inside[:, None], x[source], 0 if pad is None else pad[np.clip(pad_row, 0, None)])
        parts.append(part.astype(x.dtype, copy=False))
    return np.concatenate(parts, axis=1) if parts else np.zeros((x.shape[0], 0), x.dtype)


def _filter(k, x):
    w = k.x("Filter")
    if w.ndim != 2 or w.shape[0] != k.attr("contextLength") * x.shape[1]:
        raise ValueError(f"Filter {list(w.shape)} must be [contextLength * width, size] = "
                         f"[{k.attr('contextLength') * x.shape[1]}, size]")
    return w


def context_columns(k) -> np.ndarray:
    """The [rows, contextLength * width] context matrix sequence_conv multiplies by Filter (checked)."""
    x, _, taps = _context(k)
    return _columns(x, taps, _padding(k, x))


@kernel("sequence_conv")
def sequence_conv(k):
    return {"Out": (context_columns(k) @ k.x("Filter")).astype(k.x("X").dtype, copy=False)}


@kernel("sequence_conv_grad")
def sequence_conv_grad(k):
    x, w, taps = _context(k)
    pad, dout = _padding(k, x), k.x("Out@GRAD")
    width = x.shape[1]
    dcols = dout @ w.T

    def input_grad():
        dx = np.zeros_like(x)
        for j, (source, inside, _) in enumerate(taps):
            np.add.at(dx, source[inside], dcols[inside, j * width:(j + 1) * width])
        return dx

    def padding_grad():
        if pad is None:
            return None
        dpad = np.zeros_like(pad)
        for j, (_, inside, pad_row) in enumerate(taps):
            np.add.at(dpad, pad_row[~inside], dcols[~inside, j * width:(j + 1) * width])
        return dpad

    return k.grads({"X@GRAD": input_grad, "PaddingData@GRAD": padding_grad,
                    "Filter@GRAD": lambda: (_columns(x, taps, pad).T @ dout).astype(w.dtype, copy=False)})


# ---------------------------------------------------------------- im2sequence

def _patches(k):
    """(X zero-padded, the patch grid's (rows, cols) per image, its full (rows, cols))."""
    x = k.x("X")
    if x.ndim != 4:
        raise ValueError(f"X must be 4-D [N, C, H, W], got {list(x.shape)}")
    (kh, kw), (sh, sw), (top, left, bottom, right) = k.attr("kernels"), k.attr("strides"), k.attr("paddings")
    full = [ops.im2sequence_size(x.shape[2], kh, top, bottom, sh),
            ops.im2sequence_size(x.shape[3], kw, left, right, sw)]
    if min(full) < 1:
        raise ValueError(f"kernels {[kh, kw]} do not fit the padded image {list(x.shape[2:])}")
    n, channels, height, width = x.shape
    check_shape((n * full[0] * full[1], channels * kh * kw), x.dtype, "Out")   # at most: every patch of each image
    check_shape((n, channels, height + top + bottom, width + left + right), x.dtype, "X padded")
    grids = np.tile(full, (n, 1))
    real = k.optional("Y")
    if real is not None and n > 1:   # as Paddle: real sizes count only in a batch of several images
        if real.size != 2 * n or not np.isfinite(real).all():
            raise ValueError(f"Y must hold each image's real [height, width]: {n} x 2 finite values, got "
                             f"{real.dtype}{list(real.shape)}")
        stride = np.asarray(k.attr("out_stride"))
        sizes = -(-real.reshape(n, 2).astype(np.int64) // stride)   # divided, rounded up
        grids = np.stack([(sizes[:, 0] + top + bottom - kh) // sh + 1, (sizes[:, 1] + left + right - kw) // sw + 1], 1)
        if (grids > full).any() or (grids < 1).any():
            raise ValueError(f"Y's image sizes {real.reshape(-1, 2).tolist()} give patch grids {grids.tolist()} "
                             f"outside the image's {full}")
    padded = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
    return padded, grids, full


@kernel("im2sequence")
def im2sequence(k):
    padded, grids, (rows, cols) = _patches(k)
    (kh, kw), (sh, sw) = k.attr("kernels"), k.attr("strides")
    windows = np.lib.stride_tricks.sliding_window_view(padded, (kh, kw), axis=(2, 3))
    windows = windows[:, :, ::sh, ::sw][:, :, :rows, :cols]
    per_image = windows.transpose(0, 2, 3, 1, 4, 5)   # [N, rows, cols, C, kh, kw]
    parts = [per_image[i, :h, :w].reshape(h * w, -1) for i, (h, w) in enumerate(grids)]
    k.set_lod("Out", ((0, *np.cumsum(grids[:, 0] * grids[:, 1]).tolist()),))
    out = np.concatenate(parts) if parts else np.zeros((0, padded.shape[1] * kh * kw), padded.dtype)   # no images
    return {"Out": out.astype(padded.dtype, copy=False)}


@kernel("im2sequence_grad")
def im2sequence_grad(k):
    """The adjoint of the forward (Paddle's ignores Y: wrong for images smaller than the batch's)."""
    padded, grids, (rows, cols) = _patches(k)
    (kh, kw), (sh, sw), (top, left, _, _) = k.attr("kernels"), k.attr("strides"), k.attr("paddings")
    n, channels = padded.shape[:2]
    dout = k.x("Out@GRAD")
    grid = np.zeros((n, rows, cols, channels, kh, kw), dout.dtype)
    at = 0
    for i, (h, w) in enumerate(grids):
        grid[i, :h, :w] = dout[at:at + h * w].reshape(h, w, channels, kh, kw)
        at += h * w
    dpadded = np.zeros_like(padded)
    for p in range(kh):
        for q in range(kw):
            dpadded[:, :, p:p + sh * rows:sh, q:q + sw * cols:sw] += grid[..., p, q].transpose(0, 3, 1, 2)
    height, width = k.x("X").shape[2:]
    return {"X@GRAD": dpadded[:, :, top:top + height, left:left + width]}
