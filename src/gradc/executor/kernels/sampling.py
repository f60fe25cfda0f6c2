"""Kernels of gradc.ops.sampling. grid_sampler works on flat pixel indices: each output point reads the 2^dims
corners around its position (bilinear) or the nearest pixel, gathered from X [N, C, pixels]; the grad scatters
Out@GRAD back with one bincount. Positions are computed in Grid's dtype (as Paddle does), weights and sums in
float64, and the results cast back to the inputs' dtypes."""

from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from ...ops import sampling as ops
from . import kernel


# ---------------------------------------------------------------- affine_grid
def _base_coords(size: int, align_corners: bool) -> np.ndarray:
    """Evenly spaced coordinates of ``size`` pixels in [-1, 1]: their centres at the ends with align_corners,
    else their outer edges; a single pixel at 0."""
    if size == 1:
        return np.zeros(1)
    coords = np.linspace(-1.0, 1.0, size)
    return coords if align_corners else coords * (size - 1) / size


def _base_grid(k, theta_shape) -> tuple[list[int], np.ndarray]:
    """(the output's spatial sizes, [pixels, dims + 1] rows (x, y, (z,) 1) in C order of the sizes)."""
    shape = k.optional("OutputShape")
    output_shape = k.attr("output_shape") if shape is None else shape.reshape(-1).tolist()
    sizes = ops.affine_sizes(theta_shape, output_shape)
    axes = [_base_coords(size, k.attr("align_corners")) for size in sizes]
    mesh = np.meshgrid(*axes, indexing="ij")
    return sizes, np.stack([*(m.ravel() for m in reversed(mesh)), np.ones(mesh[0].size)], axis=1)


def _theta(k):
    theta = k.x("Theta")
    if theta.ndim != 3 or list(theta.shape[1:]) not in ops.THETA_SHAPES.values():
        raise ValueError(f"Theta must be [N, 2, 3] or [N, 3, 4], got shape {list(theta.shape)}")
    return theta


@kernel("affine_grid")
def affine_grid(k):
    theta = _theta(k)
    sizes, base = _base_grid(k, theta.shape)
    grid = np.einsum("pk,njk->npj", base, theta.astype(np.float64))
    return {"Output": grid.reshape(theta.shape[0], *sizes, theta.shape[1]).astype(theta.dtype)}


@kernel("affine_grid_grad", shape_only=("Theta",))
def affine_grid_grad(k):
    theta = _theta(k)
    sizes, base = _base_grid(k, theta.shape)
    dout = k.x("Output@GRAD")
    if list(dout.shape) != [theta.shape[0], *sizes, theta.shape[1]]:
        raise ValueError(f"Output@GRAD has shape {list(dout.shape)}, but the grid is "
                         f"{[theta.shape[0], *sizes, theta.shape[1]]}")
    dout = dout.reshape(theta.shape[0], -1, theta.shape[1]).astype(np.float64)
    return {"Theta@GRAD": np.einsum("npj,pk->njk", dout, base).astype(theta.dtype)}


# ---------------------------------------------------------------- grid_sampler
def _positions(k, grid, sizes):
    """Per spatial axis of X (D, H, W order): pixel positions of the grid points after padding_mode, and
    d position / d grid coordinate (the subgradient Paddle's grad kernel takes at the clamps and folds).
    Computed in Grid's dtype as Paddle does, so a float32 point on a rounding tie or a border lands alike."""
    align_corners, padding_mode = k.attr("align_corners"), k.attr("padding_mode")
    dtype = grid.dtype.type if grid.dtype.kind == "f" else np.float64
    positions, slopes = [], []
    for axis, size in enumerate(sizes):
        coord = grid[..., len(sizes) - 1 - axis].astype(dtype)   # Grid's last dim is x (W) first
        scale = dtype((size - 1) / 2 if align_corners else size / 2)
        position = (coord + dtype(1)) * scale - dtype(0 if align_corners else 0.5)
        position, slope = _pad(position, size, padding_mode, align_corners)
        positions.append(position.astype(np.float64))
        slopes.append(slope * np.float64(scale))
    return positions, slopes


def _pad(position, size: int, padding_mode: str, align_corners: bool):
    """(position moved inside by padding_mode, its derivative)."""
    if padding_mode == "zeros":
        return position, np.ones(position.shape)
    if padding_mode == "reflection":
        position, slope = _reflect(position, size, align_corners)
    else:
        slope = np.ones(position.shape)
    clamped = np.clip(position, 0, size - 1)
    return clamped, slope * (clamped == position)


def _reflect(position, size: int, align_corners: bool):
    """Mirror positions at the border pixels' centres (align_corners) or their outer edges, period twice the span."""
    dtype = position.dtype.type
    offset = dtype(0 if align_corners else 0.5)
    period = dtype(2 * (size - 1) if align_corners else 2 * size)
    if period == 0:
        return np.zeros_like(position), np.zeros(position.shape)
    shifted = position + offset
    distance = np.abs(shifted)
    folded = distance - np.floor(distance / period) * period
    flipped = folded > period - folded
    slope = np.where((shifted < 0) == flipped, 1.0, -1.0)
    return np.minimum(folded, period - folded) - offset, slope


def _pixel_index(indices, sizes):
    """(flat pixel index of integer positions per axis, in bounds?): out-of-bound points read index 0."""
    inside = np.logical_and.reduce([(i >= 0) & (i < size) for i, size in zip(indices, sizes)])
    clipped = [np.where(inside, i, 0) for i in indices]
    return np.ravel_multi_index(clipped, sizes), inside


def _integer(values, size: int) -> np.ndarray:
    """Integer positions, kept in [-2, size + 1] so huge and non-finite ones stay out of bounds without overflow."""
    return np.clip(np.nan_to_num(values, nan=-2.0), -2, size + 1).astype(np.int64)


class Tap(NamedTuple):
    """One of the points each output reads: its flat index, in bounds?, weight and d weight / d position per
    axis (None for nearest); bilinear's weight is the product of ``factors`` (one per axis), whose slopes are
    ``signs`` (+1 or -1)."""
    index: np.ndarray
    inside: np.ndarray
    weight: np.ndarray
    slopes: list | None
    factors: list | None = None
    signs: tuple | None = None

    def cross(self, a: int, b: int):
        """d^2 weight / d position_a d position_b (a != b; along one axis the weight is linear)."""
        return self.signs[a] * self.signs[b] * math.prod(f for c, f in enumerate(self.factors) if c not in (a, b))


def _taps(k, positions, sizes) -> list[Tap]:
    """The points each output reads."""
    if k.attr("mode") == "nearest":   # std::nearbyint: half to even
        index, inside = _pixel_index([_integer(np.rint(p), size) for p, size in zip(positions, sizes)], sizes)
        return [Tap(index, inside, np.ones_like(positions[0]), None)]
    # a point on the last pixel reads the cell below it: Paddle's cell above lies outside, and with border or
    # reflection padding its Grid@GRAD there (minus the pixel's value) is neither one-sided derivative
    floors = [np.floor(p) for p in positions]
    lows = floors if k.attr("padding_mode") == "zeros" else [np.minimum(f, max(size - 2, 0))
                                                             for f, size in zip(floors, sizes)]
    fracs = [p - low for p, low in zip(positions, lows)]
    starts = [_integer(low, size) for low, size in zip(lows, sizes)]
    taps = []
    for corner in itertools.product((0, 1), repeat=len(sizes)):
        factors = [frac if high else 1 - frac for frac, high in zip(fracs, corner)]
        index, inside = _pixel_index([start + high for start, high in zip(starts, corner)], sizes)
        slopes = [math.prod(f for b, f in enumerate(factors) if b != a) * (1 if high else -1)
                  for a, high in enumerate(corner)]
        taps.append(Tap(index, inside, math.prod(factors), slopes, factors,
                        tuple(1 if high else -1 for high in corner)))
    return taps


def setup(k):
    """(X as [N, C, pixels], Grid, the output's shape [N, C, *Grid's sizes], the taps, d position / d Grid)."""
    x, grid = k.x("X"), k.x("Grid")
    ops.check_sampler_attrs(k.attr)
    ops.check_sampler_shapes(x.shape, grid.shape)
    sizes = list(x.shape[2:])
    with np.errstate(invalid="ignore"):   # an infinite grid point reads NaN weights, as in Paddle
        positions, slopes = _positions(k, grid, sizes)
        taps = _taps(k, positions, sizes)
    out_shape = [*x.shape[:2], *grid.shape[1:-1]]
    return x.reshape(*x.shape[:2], -1), grid, out_shape, taps, slopes


def gather(flat_x, index, inside):
    """X's values at flat pixel indices [N, points]: [N, C, points], 0 outside (whatever X's first pixel holds)."""
    values = np.take_along_axis(flat_x, index.reshape(index.shape[0], 1, -1), axis=2)
    return np.where(inside.reshape(index.shape[0], 1, -1), values, 0)


@kernel("grid_sampler")
def grid_sampler(k):
    flat_x, _, out_shape, taps, _ = setup(k)
    out = sum(gather(flat_x, tap.index, tap.inside).astype(np.float64) * tap.weight.reshape(tap.weight.shape[0], 1, -1)
              for tap in taps)
    return {"Output": out.reshape(out_shape).astype(flat_x.dtype)}


def x_grad(flat_x, taps, dout):
    """Scatter Out@GRAD [N, C, points] to the pixels each point read, weighted."""
    n, c, pixels = flat_x.shape
    rows = np.arange(n * c).reshape(n, c, 1) * pixels
    targets = [rows + tap.index.reshape(n, 1, -1) for tap in taps]
    weights = [dout * (tap.weight * tap.inside).reshape(n, 1, -1) for tap in taps]
    grad = np.bincount(np.concatenate([t.ravel() for t in targets]), np.concatenate([w.ravel() for w in weights]),
                       minlength=n * c * pixels)
    return grad.reshape(flat_x.shape)


def grid_grad(flat_x, taps, slopes, dout, grid):
    """d loss / d Grid: per axis, the bilinear weights' derivatives times the values read, summed over
    channels, times d position / d coordinate. Nearest sampling (taps without slopes) is piecewise constant: 0."""
    if taps[0].slopes is None:
        return np.zeros_like(grid)
    dims = len(slopes)
    per_axis = [np.zeros(grid.shape[:-1]) for _ in range(dims)]
    for tap in taps:
        read = (dout * gather(flat_x, tap.index, tap.inside)).sum(axis=1).reshape(grid.shape[:-1])
        for axis in range(dims):
            per_axis[axis] += read * tap.slopes[axis]
    return np.stack([per_axis[axis] * slopes[axis] for axis in reversed(range(dims))], axis=-1).astype(grid.dtype)


@kernel("grid_sampler_grad")
def grid_sampler_grad(k):
    flat_x, grid, out_shape, taps, slopes = setup(k)
    dout = k.x("Output@GRAD")
    if list(dout.shape) != out_shape:
        raise ValueError(f"Output@GRAD has shape {list(dout.shape)}, but the output is {out_shape}")
    dout = dout.reshape(*out_shape[:2], -1).astype(np.float64)
    return k.grads({"X@GRAD": lambda: x_grad(flat_x, taps, dout).reshape(k.x("X").shape).astype(flat_x.dtype),
                    "Grid@GRAD": lambda: grid_grad(flat_x, taps, slopes, dout, grid)})


# ---------------------------------------------------------------- temporal_shift
def _shift(k, x, offsets):
    """Shift the first channel group by offsets[0] segments and the second by offsets[1] (0 where the source
    falls outside the clip); the forward reads the previous then the next segment, the grad the reverse."""
    seg_num, ratio, data_format = k.attr("seg_num"), k.attr("shift_ratio"), k.attr("data_format")
    ops.check_shift(x.shape, seg_num, ratio, data_format)
    last = data_format == "NHWC"
    clips = x.reshape(-1, seg_num, *x.shape[1:])
    if last:
        clips = np.moveaxis(clips, -1, 2)   # [clips, segments, C, H, W]
    first, second = ops.shift_channels(clips.shape[2], ratio)
    out = clips.copy()
    for channels, offset in ((slice(0, first), offsets[0]), (slice(first, second), offsets[1])):
        out[:, :, channels] = 0
        if offset < 0:   # segment t reads t - 1
            out[:, 1:, channels] = clips[:, :-1, channels]
        else:
            out[:, :-1, channels] = clips[:, 1:, channels]
    return (np.moveaxis(out, 2, -1) if last else out).reshape(x.shape)


@kernel("temporal_shift")
def temporal_shift(k):
    return {"Out": _shift(k, k.x("X"), (-1, 1))}


@kernel("temporal_shift_grad")
def temporal_shift_grad(k):
    return {"X@GRAD": _shift(k, k.x("Out@GRAD"), (1, -1))}
