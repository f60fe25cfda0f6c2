"""Kernels of gradc.ops.pool, on the window helpers of the pool2d/pool3d kernels (gradc.executor.kernels.conv).

Max pooling with a mask takes each window's first maximum in row-major order (Paddle's strict `<` scan); an
empty ceil_mode window gives -FLT_MAX and mask -1, and no gradient. Grads scatter Out@GRAD to the masked
positions (summed where windows overlap). lp_pool2d is separable like average pooling: sums of x^p over the
windows, then ^(1/p).
"""

from __future__ import annotations

import math
from functools import reduce

import numpy as np

from ...limits import check_shape
from ...ops import pool as ops
from ...ops.conv import attr_values, channel_last, pool_geometry
from .. import paddle_random, randomness
from . import kernel
from .conv import channels_back, channels_first
from .pool_windows import along_axes, axis_windows, max_windows, membership


def _planes(a):
    """[N, C, *S] as [N * C, prod(S)]."""
    return a.reshape(a.shape[0] * a.shape[1], -1)


def max_with_mask(x, bounds):
    """Each window's maximum (an empty window's: -FLT_MAX, the fill of max_windows) and its flat position
    in the (N, C) plane (-1 for an empty window)."""
    win, flat = max_windows(x, bounds)
    first = win.argmax(1)
    out = np.take_along_axis(win, first[:, None], 1)[:, 0]
    nonempty = reduce(np.logical_and.outer, [end > start for start, end in bounds]).ravel()
    mask = np.where(nonempty, flat[first, np.arange(flat.shape[1])], -1).astype(np.int32)
    shape = (*x.shape[:2], *(len(start) for start, _ in bounds))
    return out.reshape(shape), mask.reshape(shape)


def scatter_to_mask(dout, mask, x_shape):
    """X@GRAD of y = x[mask] per plane: Out@GRAD summed into the masked positions (-1: none)."""
    planes, size = x_shape[0] * x_shape[1], math.prod(x_shape[2:])
    m, d = _planes(mask).astype(np.int64), _planes(dout)
    if (m >= size).any() or (m < -1).any():
        raise ValueError(f"the mask holds a position outside the {size} cells of a plane of X {list(x_shape)}")
    keep = m >= 0
    target = (np.arange(planes)[:, None] * size + m)[keep]
    return np.bincount(target, weights=d[keep], minlength=planes * size).astype(dout.dtype).reshape(x_shape)


# ---------------------------------------------------------------- max_pool2d/3d_with_index
def _with_index_bounds(k, x):
    attrs = ops.with_index_attrs(attr_values(k, ops.WITH_INDEX_ATTRS))
    ksize, pads, out = pool_geometry(x.shape[2:], attrs)
    return [axis_windows(size, o, kk, s, pads[2 * i], k.attr("adaptive"), True)[0]
            for i, (size, o, kk, s) in enumerate(zip(x.shape[2:], out, ksize, k.attr("strides")))]


def _with_index_kernels(dims: int) -> None:
    name = f"max_pool{dims}d_with_index"

    @kernel(name)
    def forward(k):
        x = channels_first(k.x("X"), False, dims)
        out, mask = max_with_mask(x, _with_index_bounds(k, x))
        return {"Out": out, "Mask": mask}

    @kernel(name + "_grad")
    def backward(k):
        return {"X@GRAD": scatter_to_mask(k.x("Out@GRAD"), k.x("Mask"), k.x("X").shape)}


# ---------------------------------------------------------------- fractional_max_pool2d/3d
def fractional_bounds(size: int, out: int, k: int, u: np.float32):
    """Paddle's pseudo-random windows along one axis (float32 arithmetic, as its kernel): overlapping
    windows of k cells, or with k == 0 disjoint windows covering the axis."""
    f = np.float32
    alpha = f(size - k) / f(out - (1 if k > 0 else 0))
    if k == 0:  # u rescaled so the last window ends inside the input
        base = size // out
        u = u * min(f(base + 2) / alpha - f(1), f(size + 1 - base) / alpha - f(out - 1))
    i = np.arange(out).astype(f)
    offset = int(u * alpha)
    start = np.trunc((i + u) * alpha).astype(np.int64) - offset
    end = start + k if k > 0 else np.trunc((i + f(1) + u) * alpha).astype(np.int64) - offset
    return np.maximum(start, 0), np.minimum(end, size)


def _fractional_kernels(dims: int) -> None:
    name = f"fractional_max_pool{dims}d"

    @kernel(name)
    def forward(k):
        x = channels_first(k.x("x"), False, dims)
        output_size, kernel_size = k.attr("output_size"), k.attr("kernel_size")
        ops.fractional_check(x.shape[2:], output_size, kernel_size)
        # 0: a float uniform drawn from the global engine each run, as Paddle's
        u = np.float32(k.attr("random_u") or paddle_random.uniform(randomness.engine(), 1, 0.0, 1.0)[0])
        bounds = [fractional_bounds(*args, u) for args in zip(x.shape[2:], output_size, kernel_size)]
        out, mask = max_with_mask(x, bounds)
        return {"out": out, "mask": mask}

    @kernel(name + "_grad")
    def backward(k):
        return {"x@GRAD": scatter_to_mask(k.x("out@GRAD"), k.x("mask"), k.x("x").shape)}


for _dims in (2, 3):
    _with_index_kernels(_dims)
    _fractional_kernels(_dims)


# ---------------------------------------------------------------- unpool / unpool3d
def _winners(k, dims: int):
    """(flat positions in Out of the X cells that land there, the X cells): of X cells sent to the same
    position the last one wins, as in Paddle's sequential loop."""
    x, indices = channels_first(k.x("X"), False, dims), k.x("Indices").astype(np.int64)
    out_shape = (*x.shape[:2], *k.attr("output_size"))
    size = math.prod(out_shape[2:])
    if indices.shape != x.shape or (indices < 0).any() or (indices >= size).any():
        raise ValueError(f"Indices must have X's shape {list(x.shape)} and hold positions in [0, {size})")
    target = (np.arange(x.shape[0] * x.shape[1])[:, None] * size + _planes(indices)).ravel()
    last = target.size - 1 - np.unique(target[::-1], return_index=True)[1]
    return out_shape, target[last], last


def _unpool_kernels(name: str, dims: int) -> None:
    @kernel(name)
    def forward(k):
        out_shape, target, cells = _winners(k, dims)
        out = np.zeros(math.prod(check_shape(out_shape, k.x("X").dtype, "the unpooled tensor")), k.x("X").dtype)
        out[target] = k.x("X").ravel()[cells]
        return {"Out": out.reshape(out_shape)}

    @kernel(name + "_grad")
    def backward(k):
        # a cell another one overwrote does not reach Out: no gradient (Paddle gives it the winner's)
        _, target, cells = _winners(k, dims)
        dx = np.zeros(k.x("X").size, k.x("Out@GRAD").dtype)
        dx[cells] = k.x("Out@GRAD").ravel()[target]
        return {"X@GRAD": dx.reshape(k.x("X").shape)}


_unpool_kernels("unpool", 2)
_unpool_kernels("unpool3d", 3)


# ---------------------------------------------------------------- lp_pool2d
def _lp_setup(k):
    """(channels last?, x channels first, p, the window membership matrices per axis)."""
    last = channel_last(k.attr("data_format"))
    x = channels_first(k.x("x"), last, 2)
    tensor, tensors = k.optional("KernelSizeTensor"), k.xs("KernelSizeTensorList")
    kernel_size = (tensor.reshape(-1).tolist() if tensor is not None else
                   [int(t.reshape(-1)[0]) for t in tensors] if tensors else k.attr("kernel_size"))
    attrs = ops.lp_pool_attrs(attr_values(k, ops.LP_ATTRS), kernel_size)
    ksize, pads, out = pool_geometry(x.shape[2:], attrs)
    matrices = [membership(size, axis_windows(size, o, kk, s, pads[2 * i], k.attr("adaptive"), True)[0], x.dtype)
                for i, (size, o, kk, s) in enumerate(zip(x.shape[2:], out, ksize, k.attr("strides")))]
    return last, x, x.dtype.type(k.attr("norm_type")), matrices


@kernel("lp_pool2d")
def lp_pool2d(k):
    last, x, p, matrices = _lp_setup(k)
    return {"out": channels_back(along_axes(x ** p, matrices) ** (1 / p), last)}


@kernel("lp_pool2d_grad")
def lp_pool2d_grad(k):
    last, x, p, matrices = _lp_setup(k)
    out, dout = (channels_first(k.x(slot), last, 2) for slot in ("out", "out@GRAD"))
    # d out / d x = (x / out)^(p - 1) per window; a window of zeros (or none) passes no gradient
    with np.errstate(divide="ignore", invalid="ignore"):
        scaled = np.where(out == 0, 0, dout * out ** (1 - p))
    return {"x@GRAD": channels_back(along_axes(scaled, [m.T for m in matrices]) * x ** (p - 1), last)}
