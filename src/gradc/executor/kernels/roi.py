"""Kernels of gradc.ops.roi: roi_align many boxes at once (their samples in gradc.executor.kernels.roi_samples),
roi_pool and psroi_pool one box at a time, each box's bins as arrays. Bin edges and sample positions are computed
in X's dtype with Paddle's operations in Paddle's order (so a float32 edge falls where Paddle's does); sums in
float64, cast back. Every grad is the adjoint of its forward: it sends dOut to the pixels (and bilinear weights)
the forward read."""

from __future__ import annotations

from itertools import chain

import numpy as np

from ...limits import check_allocation, check_shape
from ...ops.roi import psroi_channels
from ..lod import SETS_LOD
from . import kernel
from .roi_samples import align_runs, bin_sums, pooled_shape, spatial_scale

FAR = 2.0 ** 40   # a pixel coordinate beyond any image
SETS_LOD.update({"roi_align", "roi_pool"})   # a pooled map per box; Paddle's carry no LoD of the boxes'


def _box_images(k, images: int, boxes: int) -> np.ndarray:
    """The image of each box: RoisNum's counts in order, else the sequences of ROIs' LoD (its last level, as
    Paddle's kernels read a legacy program's boxes), else image 0 for all."""
    counts = k.optional("RoisNum")
    if counts is None:
        lod = k.lod("ROIs")
        if lod is None:
            if images != 1:
                raise ValueError(f"without RoisNum or a LoD on ROIs X must hold one image (nothing says which "
                                 f"boxes are whose), got {images}")
            return np.zeros(boxes, np.int64)
        counts, given = np.diff(lod[-1]), f"ROIs' LoD {list(lod[-1])}"
    else:
        counts = np.asarray(counts).reshape(-1)
        given = f"RoisNum {counts.tolist()}"
    if counts.size != images or (counts < 0).any() or counts.sum() != boxes:
        raise ValueError(f"{given} must give {images} box counts >= 0 (one per image of X) "
                         f"summing to the {boxes} boxes of ROIs")
    return np.repeat(np.arange(images), counts)


def _inputs(k):
    """X [N, C, H, W], ROIs [R, 4] and the image of each box, checked."""
    x, rois = k.x("X"), k.x("ROIs")
    if x.ndim != 4 or rois.ndim != 2 or rois.shape[1] != 4:
        raise ValueError(f"expects X [N, C, H, W] and ROIs [R, 4], got {list(x.shape)} and {list(rois.shape)}")
    rois = rois.astype(x.dtype, copy=False)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = rois * spatial_scale(k, x.dtype)
    if not np.isfinite(scaled).all():   # no bins or samples to place (Paddle's kernels cast them to int)
        raise ValueError(f"ROIs holds a box corner that is not finite times spatial_scale {k.attr('spatial_scale')}")
    if rois.shape[0] and not x.shape[2] * x.shape[3]:
        raise ValueError(f"X's planes {list(x.shape[2:])} hold no pixel for the boxes to pool")
    return x, rois, _box_images(k, x.shape[0], rois.shape[0])


def _dout(k, boxes: int, channels: int) -> np.ndarray:
    """Out@GRAD as float64, checked to be shaped like Out [R, channels, pooled_height, pooled_width]."""
    dout, expected = k.x("Out@GRAD"), (boxes, channels, *pooled_shape(k))
    if dout.shape != expected:
        raise ValueError(f"Out@GRAD {list(dout.shape)} must be shaped like Out {list(expected)}")
    return dout.astype(np.float64)


def _pooled_out(k, boxes: int, channels: int) -> np.ndarray:
    """Zeros for Out [R, channels, pooled_height, pooled_width] (float64), sized within the memory limit."""
    return np.zeros(check_shape((boxes, channels, *pooled_shape(k)), np.float64, "Out"))


# ---------------------------------------------------------------- roi_align
@kernel("roi_align")
def roi_align(k):
    x, rois, images = _inputs(k)
    pixels = np.ascontiguousarray(x.reshape(*x.shape[:2], -1).swapaxes(1, 2), np.float64)   # [N, H * W, C]
    out = _pooled_out(k, rois.shape[0], x.shape[1])
    for boxes, part, flat, weights, _, per_sample in chain.from_iterable(align_runs(k, rois, *x.shape[1:])):
        out[boxes, part] = bin_sums(pixels[:, :, part], images[boxes], flat, weights) * per_sample
    return {"Out": out.astype(x.dtype)}


@kernel("roi_align_grad")
def roi_align_grad(k):
    x, rois, images = _inputs(k)
    dout = _dout(k, rois.shape[0], x.shape[1])
    dx = np.zeros(x.size)
    plane, channels = x.shape[2] * x.shape[3], np.arange(x.shape[1])
    for run in align_runs(k, rois, *x.shape[1:]):
        pieces = {}   # box -> its (positions in X, values), put back in box order: each pixel's sum in box order
        for boxes, part, flat, weights, valid, per_sample in run:
            spread = np.where(valid[:, None], dout[boxes, part][..., None] * (weights * per_sample)[:, None], 0.0)
            at = ((images[boxes, None] * x.shape[1] + channels[part]) * plane)[..., None, None, None] + flat[:, None]
            pieces.update(zip(boxes.tolist(), zip(at.reshape(len(boxes), -1), spread.reshape(len(boxes), -1))))
        if len(run) == 1:   # one sample grid: its boxes are the run, already in order
            np.add.at(dx, at.reshape(-1), spread.reshape(-1))
            continue
        ordered = [pieces[box] for box in sorted(pieces)]
        np.add.at(dx, np.concatenate([at for at, _ in ordered]), np.concatenate([value for _, value in ordered]))
    return {"X@GRAD": dx.reshape(x.shape).astype(x.dtype)}


# ---------------------------------------------------------------- roi_pool
def _round(values: np.ndarray) -> np.ndarray:
    """C's round: halves away from zero (numpy's round goes to even), as int64; a corner far beyond any image
    (a huge spatial_scale) is clipped to +-2^40 first, where it is still outside."""
    values = np.clip(values.astype(np.float64), -FAR, FAR)
    return (np.sign(values) * np.floor(np.abs(values) + 0.5)).astype(np.int64)


def _pool_edges(start: int, size: int, pooled: int, extent: int) -> tuple[np.ndarray, np.ndarray]:
    """roi_pool's bins along one axis, [first, end) each, clipped to [0, extent]: float32 floor / ceil of a
    (size / pooled)-wide step from ``start``."""
    step = np.float32(size) / np.float32(pooled)
    index = np.arange(pooled + 1, dtype=np.float32)
    first, end = np.floor(index[:-1] * step).astype(np.int64), np.ceil(index[1:] * step).astype(np.int64)
    return np.clip(first + start, 0, extent), np.clip(end + start, 0, extent)


def _in_bins(first: np.ndarray, end: np.ndarray, extent: int) -> np.ndarray:
    """[bins, extent]: whether each position lies in each bin."""
    at = np.arange(extent)
    return (at >= first[:, None]) & (at < end[:, None])


def _first_max(values: np.ndarray, bins: np.ndarray, axis: int):
    """The maximum over each bin of ``bins`` [bins, extent] along ``axis`` of ``values`` (moved to the end, the bins
    put before it) and its first position; -inf where the bin holds nothing."""
    values = np.moveaxis(values, axis, -1)[..., None, :]
    masked = np.where(bins, values, -np.inf)
    return masked.max(-1), masked.argmax(-1)


def _roi_pool_box(plane: np.ndarray, box_edges) -> tuple[np.ndarray, np.ndarray]:
    """Out and Argmax of one box over its image's [C, H, W]: the first (row-major) maximum of each bin, columns
    first, then rows. Values Paddle's kernel never takes (NaN, and those at or below -max, its starting value)
    are left out; a bin without any gives -max and -1, an empty bin 0 and -1."""
    (row_first, row_end), (col_first, col_end) = box_edges
    width = plane.shape[2]
    (top, bottom), (left, right) = _window(row_first, row_end, plane.shape[1]), _window(col_first, col_end, width)
    plane = plane[:, top:bottom, left:right]   # the box's pixels only: every bin lies within them
    lowest = -np.finfo(plane.dtype).max
    candidates = np.where(plane > lowest, plane, -np.inf).astype(np.float64)
    by_column, columns = _first_max(candidates, _in_bins(col_first - left, col_end - left, right - left), 2)
    best, rows = _first_max(by_column, _in_bins(row_first - top, row_end - top, bottom - top), 1)   # [C, pw, ph]
    best, rows = best.swapaxes(1, 2), rows.swapaxes(1, 2)                                           # [C, ph, pw]
    column = np.take_along_axis(columns, rows, 1)
    found = best > -np.inf
    empty = (row_end <= row_first)[:, None] | (col_end <= col_first)[None, :]
    out = np.where(found, best, np.where(empty, 0.0, lowest))
    return out, np.where(found, (rows + top) * width + column + left, -1)


def _window(first: np.ndarray, end: np.ndarray, extent: int) -> tuple[int, int]:
    """[start, stop) of the positions the bins [first, end) along one axis cover, at least one (bins that hold
    nothing still take a max over none)."""
    start = min(int(first.min()), extent - 1)
    return start, max(int(end.max()), start + 1)


def _roi_pool_edges(k, box, height: int, width: int):
    x1, y1, x2, y2 = _round(box * spatial_scale(k, box.dtype))
    ph, pw = pooled_shape(k)
    return (_pool_edges(y1, max(y2 - y1 + 1, 1), ph, height), _pool_edges(x1, max(x2 - x1 + 1, 1), pw, width))


@kernel("roi_pool")
def roi_pool(k):
    x, rois, images = _inputs(k)
    check_allocation(x[0].size * k.attr("pooled_width"), 8, "the column maxima of a box's bins")
    out = _pooled_out(k, rois.shape[0], x.shape[1])
    argmax = np.full(out.shape, -1, np.int64)
    for r, (box, image) in enumerate(zip(rois, images)):
        out[r], argmax[r] = _roi_pool_box(x[image], _roi_pool_edges(k, box, *x.shape[2:]))
    return {"Out": out.astype(x.dtype), "Argmax": argmax}


@kernel("roi_pool_grad", shape_only=("X",))
def roi_pool_grad(k):
    x, rois, images = _inputs(k)
    argmax, dout, plane = k.x("Argmax"), k.x("Out@GRAD"), x.shape[2] * x.shape[3]
    expected = (rois.shape[0], x.shape[1], *pooled_shape(k))
    if argmax.shape != expected or dout.shape != expected or (argmax >= plane).any():
        raise ValueError(f"Argmax {list(argmax.shape)} and Out@GRAD {list(dout.shape)} must be {list(expected)}, "
                         f"Argmax positions in a plane of {plane}")
    # each output's flat position in X: (image * C + channel) * H * W + Argmax
    channels = (images[:, None] * x.shape[1] + np.arange(x.shape[1]))[:, :, None, None]
    taken = argmax >= 0
    flat = (channels * plane + argmax)[taken]
    dx = np.bincount(flat, dout[taken].astype(np.float64), minlength=x.size)
    return {"X@GRAD": dx.reshape(x.shape).astype(x.dtype)}


# ---------------------------------------------------------------- psroi_pool
def _psroi_bins(k, box, height: int, width: int) -> np.ndarray:
    """[ph, pw, H, W]: the pixels of each bin of a box (rounded corners, the far one + 1, times spatial_scale;
    at least 0.1 wide; floor / ceil bin edges in X's dtype, clipped to the plane)."""
    dtype = box.dtype.type
    scale = spatial_scale(k, box.dtype)
    corners = (_round(box) + np.array([0, 0, 1, 1])).astype(box.dtype) * scale
    masks = []
    for start, end, pooled, extent in ((corners[1], corners[3], k.attr("pooled_height"), height),
                                       (corners[0], corners[2], k.attr("pooled_width"), width)):
        step = max(end - start, dtype(0.1)) / dtype(pooled)
        index = np.arange(pooled + 1, dtype=box.dtype)
        first = np.clip(np.floor(index[:-1] * step + start), 0, extent)
        last = np.clip(np.ceil(index[1:] * step + start), 0, extent)
        masks.append(_in_bins(first, last, extent))
    return masks[0][:, None, :, None] & masks[1][None, :, None, :]


@kernel("psroi_pool")
def psroi_pool(k):
    x, rois, images = _inputs(k)
    ph, pw = pooled_shape(k)
    channels = psroi_channels(x.shape[1], k.attr)
    out = _pooled_out(k, rois.shape[0], channels)
    for r, (box, image) in enumerate(zip(rois, images)):
        bins = _psroi_bins(k, box, *x.shape[2:])
        area = bins.sum((-2, -1))
        sums = np.where(bins, x[image].reshape(channels, ph, pw, *x.shape[2:]), 0.0).sum((-2, -1))
        out[r] = np.divide(sums, area, out=np.zeros_like(sums), where=area > 0)   # an empty bin: 0
    return {"Out": out.astype(x.dtype)}


@kernel("psroi_pool_grad", shape_only=("X",))
def psroi_pool_grad(k):
    x, rois, images = _inputs(k)
    ph, pw = pooled_shape(k)
    channels = psroi_channels(x.shape[1], k.attr)
    dout = _dout(k, rois.shape[0], channels)
    dx = np.zeros((x.shape[0], channels, ph, pw, *x.shape[2:]))
    for r, (box, image) in enumerate(zip(rois, images)):
        bins = _psroi_bins(k, box, *x.shape[2:])
        area = bins.sum((-2, -1))
        share = np.divide(dout[r], area, out=np.zeros_like(dout[r]), where=area > 0)
        # only the box's pixels: elsewhere it adds +0, which changes no sum that starts at +0 (none becomes -0)
        rows, columns = np.flatnonzero(bins.any((0, 1, 3))), np.flatnonzero(bins.any((0, 1, 2)))
        if rows.size:
            window = np.s_[..., rows[0]:rows[-1] + 1, columns[0]:columns[-1] + 1]
            dx[image][window] += np.where(bins[window], share[..., None, None], 0.0)
    return {"X@GRAD": dx.reshape(x.shape).astype(x.dtype)}
