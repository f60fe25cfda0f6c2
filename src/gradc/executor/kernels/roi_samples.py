"""roi_align's bilinear samples for gradc.executor.kernels.roi, many boxes at once: the boxes that share a sample
grid (samples per bin side) go together, in runs of at most CHUNK values, and every float operation on a sample,
and every sum, is the one (in the order) a loop over the boxes made, so the kernels' results are bit for bit
those of one box at a time. Also the attributes every RoI kernel reads."""

from __future__ import annotations

import math

import numpy as np

from ...limits import check_allocation

CHUNK = 1 << 22   # values roi_align reads or writes in one step


def spatial_scale(k, dtype) -> np.floating:
    """spatial_scale as Paddle holds it (a float32 attribute), in X's dtype."""
    return dtype.type(np.float32(k.attr("spatial_scale")))


def pooled_shape(k) -> tuple[int, int]:
    """(pooled_height, pooled_width)."""
    return k.attr("pooled_height"), k.attr("pooled_width")


def _align_samples(start, size, pooled: int, grid: int, extent: int):
    """One axis of boxes' bilinear samples, from their starts and sizes [B]: (cells, weights, valid), each
    [B, pooled, grid, 2] ([..., 0] the lower cell, [..., 1] the upper). A sample more than a pixel outside
    [0, extent] is not valid; one at or past the last pixel center reads that pixel."""
    dtype = start.dtype.type
    steps = (np.arange(grid, dtype=start.dtype) + dtype(0.5)) / dtype(grid)
    offsets = np.arange(pooled, dtype=start.dtype)[:, None] + steps
    pos = start[:, None, None] + (size / dtype(pooled))[:, None, None] * offsets
    valid = (pos >= -1) & (pos <= extent)
    pos = np.where(valid & (pos > 0), pos, dtype(0))
    low = pos.astype(np.int64)
    last = low >= extent - 1
    low = np.where(last, extent - 1, low)
    pos = np.where(last, low.astype(start.dtype), pos)
    high = np.where(last, low, low + 1)
    below = high.astype(start.dtype) - pos   # the lower cell's weight
    cells = np.stack([low, high], -1)
    weights = np.stack([below, dtype(1) - below], -1)
    return cells, weights, np.broadcast_to(valid[..., None], cells.shape)


def _align_frames(k, rois):
    """Every box's (y1, x1, height, width), each [R] in X's dtype, and its sample grid per side (gh, gw) [R],
    each grid's samples checked against the memory limit (first box first, as one box at a time would)."""
    aligned, ratio = k.attr("aligned"), k.attr("sampling_ratio")
    dtype = rois.dtype.type
    x1, y1, x2, y2 = (rois * spatial_scale(k, rois.dtype) - dtype(0.5 if aligned else 0)).T
    sizes = (y2 - y1, x2 - x1)
    if not aligned:
        sizes = tuple(np.maximum(size, dtype(1)) for size in sizes)
    ph, pw = pooled_shape(k)
    grids = []
    for size, pooled in zip(sizes, (ph, pw)):
        if ratio > 0:
            grids.append(np.full(size.shape, ratio, np.int64))
            continue
        cells = size / dtype(pooled)
        for far in cells[~np.isfinite(cells)][:1]:
            math.ceil(far)   # OverflowError, as for one box
        grids.append(np.maximum(np.ceil(cells), 0).astype(np.int64))
    for gh, gw in dict.fromkeys(zip(grids[0].tolist(), grids[1].tolist())):
        check_allocation(ph * pw * gh * gw * 4, 8, f"the {gh} x {gw} samples of each of the {ph} x {pw} bins of a box")
    return (y1, x1, *sizes), grids


def _align_group(k, frames, grid: tuple[int, int], height: int, width: int):
    """Boxes sharing a sample grid, as _align_samples' [B] rows: each [B, ph, pw, samples * 4], flat plane
    positions, weights (a sample that is not valid reads position 0 with weight 0, as Paddle's does) and
    validity; and 1 / the samples per bin."""
    (y1, x1, box_height, box_width), (gh, gw), (ph, pw) = frames, grid, pooled_shape(k)
    boxes = y1.shape[0]
    row, row_weight, row_valid = (a[:, :, None, :, None, :, None]
                                  for a in _align_samples(y1, box_height, ph, gh, height))
    col, col_weight, col_valid = (a[:, None, :, None, :, None, :]
                                  for a in _align_samples(x1, box_width, pw, gw, width))
    valid = row_valid & col_valid                                      # [B, ph, pw, gh, gw, 2, 2]
    flat = np.where(valid, row * width + col, 0).reshape(boxes, ph, pw, -1)
    weights = np.where(valid, row_weight.astype(np.float64) * col_weight, 0.0).reshape(boxes, ph, pw, -1)
    return flat, weights, valid.reshape(boxes, ph, pw, -1), (1.0 / (gh * gw) if gh * gw else 0.0)


def align_runs(k, rois, channels: int, height: int, width: int):
    """Runs of consecutive boxes of at most CHUNK values read (a large box's many samples times many channels
    in groups of channels), in order, each a list of (boxes, channels, flat, weights, valid, 1 / samples per
    bin): the run's boxes that share a sample grid, together."""
    frames, (gh, gw) = _align_frames(k, rois)
    per_box = math.prod(pooled_shape(k)) * 4 * gh * gw
    width_step = max(1, CHUNK // max(int(per_box.max(initial=1)), 1))
    ends = np.cumsum(per_box)
    for part in (slice(start, start + width_step) for start in range(0, channels, width_step)):
        budget, first = CHUNK // max(len(range(channels)[part]), 1), 0
        while first < rois.shape[0]:
            done = ends[first - 1] if first else 0
            last = max(int(np.searchsorted(ends, done + budget, "right")), first + 1)
            run = np.arange(first, last)
            groups = [run[(gh[run] == grid[0]) & (gw[run] == grid[1])]
                      for grid in dict.fromkeys(zip(gh[run].tolist(), gw[run].tolist()))]
            yield [(boxes, part, *_align_group(k, tuple(a[boxes] for a in frames), (gh[boxes[0]], gw[boxes[0]]),
                                               height, width)) for boxes in groups]
            first = last


def bin_sums(pixels, images, flat, weights):
    """Each bin's weighted samples summed as numpy summed one box's read [C, ph, pw, samples] (laid out with C
    innermost): with one channel along contiguous memory (pairwise), else sample by sample from +0, which this
    does without holding every sample's read at once. pixels [N, H * W, C]; out [B, C, ph, pw]."""
    rows = np.ascontiguousarray(pixels).reshape(-1, pixels.shape[-1])       # one row of channels per pixel
    at = images[:, None, None, None] * pixels.shape[1] + flat                  # [B, ph, pw, samples]
    if pixels.shape[-1] == 1 or not flat.shape[-1]:
        return np.moveaxis((rows[at] * weights[..., None]).sum(-2), -1, 1)
    total = np.zeros((*flat.shape[:-1], pixels.shape[-1]))                    # numpy's sum starts at +0
    term = np.empty_like(total)
    for at_sample, weight in zip(np.moveaxis(at, -1, 0), np.moveaxis(weights, -1, 0)):
        np.multiply(rows.take(at_sample, 0), weight[..., None], out=term)
        total += term
    return np.moveaxis(total, -1, 1)
