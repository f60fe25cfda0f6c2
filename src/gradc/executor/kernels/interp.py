"""Kernels of gradc.ops.interp. Every method is linear in X and separable: per spatial axis an [out, in]
weight matrix holds Paddle's source positions and weights, applied axis by axis; the grad applies the
transposed matrices to Out@GRAD. When every output size equals its input size, Paddle copies: so do these
kernels (a scale then does not resample)."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from ...ops import interp as ops
from . import kernel
from .conv import channels_back, channels_first
from .pool_windows import along_axes

CUBIC_A = -0.75


def _ratio(size: int, out: int, scale: float, align_corners: bool) -> np.float32:
    """Input positions per output position (Paddle: float32; 0 for a single output)."""
    if out <= 1:
        return np.float32(0)
    if align_corners:
        return np.float32(size - 1) / np.float32(out - 1)
    return np.float32(1.0 / scale) if scale > 0 else np.float32(size) / np.float32(out)


def _matrix(out: int, size: int, rows, cols, weights, dtype) -> np.ndarray:
    m = np.zeros((out, size), dtype)
    np.add.at(m, (rows, cols), weights)
    return m


def _arithmetic(method: str, axis: int, grad: bool):
    """How Paddle 3.3.1 computes the sampling positions and weights of an axis: (centre positions in
    double?, weight dtype; None: X's). Its loops differ by method, by axis (bilinear's H loop is not its
    W loop), and between forward and grad; matching them makes results agree to the last bits (a float64 grad
    excepted: it is the forward's adjoint, as central differences say, where Paddle's is not)."""
    if grad:
        return False, None if method == "bicubic" else np.float32
    if method in ("linear", "bicubic"):
        return True, None
    return method == "bilinear" and axis == 0, np.float32


def _positions(ratio, out: int, centred: bool, in_double: bool):
    """Source positions of the outputs: ratio * o (float32), or pixel centres ratio * (o + 0.5) - 0.5."""
    o = np.arange(out)
    if not centred:
        return ratio * o.astype(np.float32)
    if in_double:
        return np.float64(ratio) * (o + 0.5) - 0.5
    return ratio * (o.astype(np.float32) + np.float32(0.5)) - np.float32(0.5)


def _linear(size, out, ratio, centred, arithmetic, dtype):
    """Two taps: the source position's floor and the next cell (clamped), weighted by the distances."""
    in_double, weight_dtype = arithmetic
    weight_dtype = np.dtype(weight_dtype or dtype).type
    position = _positions(ratio, out, centred, in_double)
    lo = np.maximum(np.trunc(position).astype(np.int64), 0)
    far = np.maximum(position, 0).astype(weight_dtype) - lo.astype(weight_dtype)
    hi = np.minimum(lo + 1, size - 1)
    o = np.arange(out)
    return _matrix(out, size, np.r_[o, o], np.r_[lo, hi], np.r_[weight_dtype(1) - far, far].astype(dtype), dtype)


def _nearest_index(size, out, ratio, align_corners):
    position = _positions(ratio, out, False, False)
    index = np.trunc(position.astype(np.float64) + 0.5) if align_corners else np.trunc(position)
    return np.minimum(index.astype(np.int64), size - 1)


def _cubic_weights(t):
    """Keys' cubic convolution weights (a = -0.75) of the four taps around a fractional offset t."""
    near = lambda x: ((CUBIC_A + 2) * x - (CUBIC_A + 3)) * x * x + 1                  # noqa: E731 - |x| <= 1
    far = lambda x: ((CUBIC_A * x - 5 * CUBIC_A) * x + 8 * CUBIC_A) * x - 4 * CUBIC_A  # noqa: E731 - 1 < |x| < 2
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _bicubic(size, out, ratio, align_corners, arithmetic, dtype):
    """Four taps around the source position (clamped to the edges)."""
    position = _positions(ratio, out, not align_corners, arithmetic[0]).astype(dtype)
    start = np.floor(position.astype(np.float32)).astype(np.int64)   # floorf
    weights = _cubic_weights(position - start.astype(dtype))
    cols = [np.clip(start - 1 + j, 0, size - 1) for j in range(4)]
    rows = np.tile(np.arange(out), 4)
    return _matrix(out, size, rows, np.concatenate(cols), np.concatenate(weights).astype(dtype), dtype)


def _axis_matrix(k, axis, size, out, scale, dtype, grad):
    method, align_corners = k.attr("interp_method"), k.attr("align_corners")
    ratio = _ratio(size, out, scale, align_corners)
    if method == "nearest":
        return _matrix(out, size, np.arange(out), _nearest_index(size, out, ratio, align_corners), 1, dtype)
    # a float64 grad is the forward's adjoint: Paddle's rounds its positions to float32 (bicubic 4.5e-5 off)
    arithmetic = _arithmetic(method, axis, grad and dtype != np.float64)
    if method == "bicubic":
        return _bicubic(size, out, ratio, align_corners, arithmetic, dtype)
    centred = k.attr("align_mode") == 0 and not align_corners
    return _linear(size, out, ratio, centred, arithmetic, dtype)


def planned_by(planner):
    """The plan_of of ``resize``: ``planner(attr, spatial sizes, SizeTensor, OutSize, Scale values)``."""

    def plan_of(k, sizes) -> ops.Plan:
        size_tensor = [int(t.reshape(-1)[0]) for t in k.xs("SizeTensor")] or None
        out_size, scale = k.optional("OutSize"), k.optional("Scale")
        return planner(k.attr, sizes, size_tensor, None if out_size is None else out_size.reshape(-1).tolist(),
                       None if scale is None else scale.reshape(-1).tolist())

    return plan_of


_plan = planned_by(ops.plan)


def _setup(k, plan_of):
    """(channels-last?, X channels first, the resize plan)."""
    x = k.x("X")
    ops.check_attrs(k.attr, x.ndim)
    last = k.attr("data_layout") == "NHWC"
    x = channels_first(x, last, x.ndim - 2)
    plan = plan_of(k, list(x.shape[2:]))
    check_shape([*x.shape[:2], *plan.sizes], x.dtype, "the resized tensor")
    return last, x, plan


def _matrices(k, x, plan, dtype, grad=False):
    return [_axis_matrix(k, axis, size, out, scale, dtype, grad)
            for axis, (size, out, scale) in enumerate(zip(x.shape[2:], plan.sizes, plan.scales))]


@kernel(*ops.INTERP_OPS)
def interp(k):
    return resize(k, _plan)


def resize(k, plan_of):
    """Out of a resize whose plan ``plan_of(k, spatial sizes)`` gives (the v1 ops plan theirs otherwise)."""
    last, x, plan = _setup(k, plan_of)
    if list(x.shape[2:]) == plan.sizes:
        return {"Out": channels_back(x.copy(), last)}
    if k.attr("interp_method") == "nearest":  # a gather: exact in any dtype
        out = x
        for axis, (size, o, scale) in enumerate(zip(x.shape[2:], plan.sizes, plan.scales), start=2):
            ratio = _ratio(size, o, scale, k.attr("align_corners"))
            out = np.take(out, _nearest_index(size, o, ratio, k.attr("align_corners")), axis=axis)
        return {"Out": channels_back(out, last)}
    if x.dtype.kind != "f":  # uint8 images: weighed in float32, truncated back as Paddle's kernels store them
        return {"Out": channels_back(along_axes(x.astype(np.float32), _matrices(k, x, plan, np.float32)),
                                     last).astype(x.dtype)}
    return {"Out": channels_back(along_axes(x, _matrices(k, x, plan, x.dtype)), last)}


@kernel(*(name + "_grad" for name in ops.INTERP_OPS))
def interp_grad(k):
    return resize_grad(k, _plan)


def resize_grad(k, plan_of):
    """X@GRAD of a resize whose plan ``plan_of(k, spatial sizes)`` gives."""
    last, x, plan = _setup(k, plan_of)
    dout = channels_first(k.x("Out@GRAD"), last, x.ndim - 2)
    if list(dout.shape[2:]) != plan.sizes:
        raise ValueError(f"Out@GRAD has spatial sizes {list(dout.shape[2:])}, but the resize gives {plan.sizes}")
    if list(x.shape[2:]) == plan.sizes:
        return {"X@GRAD": channels_back(dout.copy(), last)}
    adjoints = [m.T for m in _matrices(k, x, plan, dout.dtype, grad=True)]
    return {"X@GRAD": channels_back(along_axes(dout, adjoints), last)}
