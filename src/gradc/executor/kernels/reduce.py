"""Kernels of gradc.ops.reduce, and of frobenius_norm (gradc.ops.products), a reduction over the same axes."""

from __future__ import annotations

import numpy as np

from ...ir.types import DTYPE_BY_NUMPY_NAME
from ...ops.reduce import logsumexp_axes, reduced_axes, sum_dtype
from ...shapes import normalize_axis
from . import kernel
from .tensor import numpy_dtype


def _axes(k, x):
    return reduced_axes(k.attr, x.ndim)


def _expand(k, dout, x, axes=None, keep=None):
    """The output grad broadcast back over the reduced axes of X (``keep``: the op's keep_dim by default)."""
    axes = _axes(k, x) if axes is None else axes
    if not (k.attr("keep_dim") if keep is None else keep):
        dout = np.expand_dims(dout, axes) if axes else dout
    return np.broadcast_to(dout, x.shape)


# (X's dtype, out_dtype) -> the dtype reduce_sum sums in: found once (dtype.name alone costs a microsecond)
_SUM_DTYPES: dict[tuple[np.dtype, int], np.dtype] = {}


@kernel("reduce_sum")
def reduce_sum(k):
    x, out_dtype = k.x("X"), k.attr("out_dtype")
    dtype = _SUM_DTYPES.get((x.dtype, out_dtype))
    if dtype is None:
        dtype = _SUM_DTYPES[x.dtype, out_dtype] = numpy_dtype(sum_dtype(DTYPE_BY_NUMPY_NAME[x.dtype.name], out_dtype))
    # np.sum of an ndarray is this ufunc reduction behind a few microseconds of dispatch; a subclass gets np.sum
    total = np.add.reduce if type(x) is np.ndarray else np.sum
    return {"Out": total(x, axis=_axes(k, x), keepdims=k.attr("keep_dim"), dtype=dtype)}


@kernel("reduce_sum_grad", shape_only=("X",))
def reduce_sum_grad(k):
    x = k.x("X")
    return {"X@GRAD": _expand(k, k.x("Out@GRAD"), x).astype(x.dtype)}   # dOut may be of another out_dtype


@kernel("reduce_mean")
def reduce_mean(k):
    x = k.x("X")
    return {"Out": np.mean(x, axis=_axes(k, x), keepdims=k.attr("keep_dim"))}


@kernel("reduce_mean_grad", shape_only=("X",))
def reduce_mean_grad(k):
    x = k.x("X")
    count = int(np.prod([x.shape[a] for a in _axes(k, x)]))
    return {"X@GRAD": _expand(k, k.x("Out@GRAD"), x) / count}


@kernel("frobenius_norm")
def frobenius_norm(k):
    x = k.x("X")
    return {"Out": np.sqrt(np.sum(x * x, axis=_axes(k, x), keepdims=k.attr("keep_dim")))}


@kernel("frobenius_norm_grad")
def frobenius_norm_grad(k):
    """X / (norm + 1e-12) dOut, as Paddle: 0 where the norm is 0."""
    x = k.x("X")
    norm, dout = (_expand(k, k.x(slot), x) for slot in ("Out", "Out@GRAD"))
    return {"X@GRAD": x / (norm + x.dtype.type(1e-12)) * dout}


def _logical_axes(k, x):
    """The axes of reduce_all / reduce_any: AxisTensor or AxisTensorList when given, else dim."""
    tensors = [k.optional("AxisTensor")] if k.has("AxisTensor") else k.xs("AxisTensorList")
    if not tensors:
        return _axes(k, x)
    dims = [int(d) for t in tensors for d in np.asarray(t).reshape(-1)]
    return reduced_axes(lambda name: dims if name == "dim" else k.attr(name), x.ndim)


kernel("reduce_all")(lambda k: {"Out": np.all(k.x("X"), axis=_logical_axes(k, k.x("X")), keepdims=k.attr("keep_dim"))})
kernel("reduce_any")(lambda k: {"Out": np.any(k.x("X"), axis=_logical_axes(k, k.x("X")), keepdims=k.attr("keep_dim"))})


@kernel("mean")
def mean(k):
    return {"Out": np.mean(k.x("X"))}


@kernel("mean_grad", shape_only=("X",))
def mean_grad(k):
    x = k.x("X")
    return {"X@GRAD": np.full(x.shape, k.x("Out@GRAD").reshape(()) / max(x.size, 1), dtype=x.dtype)}


def _reduce(name, fn, grad, axes_of=_axes):
    """fn(x, axes, keepdims) -> out; grad(x, out, dout, axes) -> dX, with out and dout broadcast back over X."""
    kernel(name)(lambda k: {"Out": fn(k.x("X"), axis=axes_of(k, k.x("X")), keepdims=k.attr("keep_dim"))})

    @kernel(name + "_grad")
    def reduce_grad(k):
        x = k.x("X")
        axes = axes_of(k, x)
        return {"X@GRAD": grad(x, _expand(k, k.x("Out"), x, axes), _expand(k, k.x("Out@GRAD"), x, axes), axes)}


def _prod_of_others(x, axes):
    """For each element, the product of the other elements it is reduced with: exclusive running
    products from both ends, so zeros in X are handled exactly (no division by X)."""
    if not axes:
        return np.ones_like(x)
    rest = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, rest + list(axes))
    flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
    ones = np.ones_like(flat[..., :1])
    before = np.cumprod(np.concatenate([ones, flat[..., :-1]], -1), -1)
    after = np.cumprod(np.concatenate([ones, flat[..., :0:-1]], -1), -1)[..., ::-1]
    return np.transpose((before * after).reshape(moved.shape), np.argsort(rest + list(axes)))


def _shared_among_ties(x, out, dout, axes):
    """dOut split evenly among the elements equal to the extreme, as Paddle 3.3.1's max/min/amax/amin grads split
    it (dOut * mask / count, in dOut's dtype); its docs say max gives each the whole."""
    mask = (x == out).astype(dout.dtype)
    return dout * mask / mask.sum(axis=axes, keepdims=True)


_reduce("reduce_max", np.max, _shared_among_ties)
_reduce("reduce_min", np.min, _shared_among_ties)
_reduce("reduce_amax", np.max, _shared_among_ties, _logical_axes)
_reduce("reduce_amin", np.min, _shared_among_ties, _logical_axes)
_reduce("reduce_prod", np.prod, lambda x, out, dout, axes: dout * _prod_of_others(np.conj(x), axes))   # as cumprod


def _logsumexp_axes(k, x):
    return logsumexp_axes(k.attr, x.ndim)


@kernel("logsumexp")
def logsumexp(k):
    """log(sum(exp(x))) with each slice's maximum taken out first (so no exp overflows); -inf for a slice of -inf."""
    x, keep = k.x("X"), k.attr("keepdim")
    axes = _logsumexp_axes(k, x)
    peak = np.max(x, axis=axes, keepdims=True) if x.size else np.zeros((1,) * x.ndim, x.dtype)
    peak = np.where(np.isfinite(peak), peak, 0).astype(x.dtype)
    with np.errstate(divide="ignore"):   # log(0) = -inf: a slice of -inf
        out = np.log(np.sum(np.exp(x - peak), axis=axes, keepdims=True)) + peak
    return {"Out": out if keep else out.reshape([d for i, d in enumerate(out.shape) if i not in axes])}


@kernel("logsumexp_grad")
def logsumexp_grad(k):
    x = k.x("X")
    axes = _logsumexp_axes(k, x)
    dout, out = (_expand(k, k.x(slot), x, axes, k.attr("keepdim")) for slot in ("Out@GRAD", "Out"))
    return {"X@GRAD": dout * np.exp(x - out)}


def _norm_axis(k, x):
    """(axis argument for numpy, shape of Out with kept dims) of p_norm."""
    if k.attr("asvector"):
        return None, (1,) * x.ndim
    axis = normalize_axis(k.attr("axis"), x.ndim)
    return axis, x.shape[:axis] + (1,) + x.shape[axis + 1:] if x.ndim else ()


@kernel("p_norm")
def p_norm(k):
    x, p = k.x("X"), k.attr("porder")
    axis, _ = _norm_axis(k, x)
    keep = k.attr("keepdim")
    xs = x.reshape(1) if x.ndim == 0 else x  # a 0-d X is normed as [1], then given back its shape
    if p == 0:
        out = np.sum(xs != 0, axis=axis, keepdims=keep).astype(x.dtype)
    elif np.isinf(p):
        out = (np.max if p > 0 else np.min)(np.abs(xs), axis=axis, keepdims=keep)
    else:
        out = np.sum(np.abs(xs) ** p, axis=axis, keepdims=keep) ** (1.0 / p)
    return {"Out": out.reshape(()) if x.ndim == 0 else out}


@kernel("p_norm_grad")
def p_norm_grad(k):
    x, p, eps = k.x("X"), k.attr("porder"), k.attr("epsilon")
    _, kept = _norm_axis(k, x)
    norm, dout = k.x("Out").reshape(kept), k.x("Out@GRAD").reshape(kept)
    if p == 0:  # a count of nonzeros: piecewise constant
        return {"X@GRAD": np.zeros_like(x)}
    return {"X@GRAD": p_norm_slope(x, norm, p, eps) * dout}


def p_norm_slope(diff, norm, p: float, eps: float):
    """d(norm)/d(diff) of ``norm``, the p-norm of ``diff`` (p not 0), as Paddle's p_norm grad: for inf / -inf,
    sign(diff) at the entries equal to the norm (each tie gets the whole); else sign(diff) |diff|^(p-1) /
    (norm^(p-1) + eps)."""
    if np.isinf(p):
        return np.sign(diff) * (np.abs(diff) == norm)
    return np.abs(diff) ** (p - 1) / (norm ** (p - 1) + eps) * np.sign(diff)


def _renorm_slices(k, x):
    """(float64 X, the axes its slices' norms sum over, each slice's sum of |x|^p, its norm, its scale)."""
    x64, p, max_norm = x.astype(np.float64), k.attr("p"), k.attr("max_norm")
    axis = normalize_axis(k.attr("axis"), x.ndim)
    others = tuple(i for i in range(x.ndim) if i != axis)
    power_sum = np.sum(np.abs(x64) ** p, axis=others, keepdims=True)
    norm = power_sum ** (1.0 / p)
    scale = np.where(norm > max_norm, max_norm / np.where(norm > max_norm, norm, 1.0), 1.0)
    return x64, others, power_sum, norm, scale


@kernel("renorm")
def renorm(k):
    x = k.x("X")
    x64, _, _, _, scale = _renorm_slices(k, x)
    return {"Out": (x64 * scale).astype(x.dtype)}


@kernel("renorm_grad")
def renorm_grad(k):
    """dX = scale dOut, plus, on a scaled slice, d(max_norm / norm)/dX times sum(X dOut); at x = 0 the sign of x
    counts as +1 (Paddle's subgradient for p = 1)."""
    x, dout = k.x("X"), k.x("Out@GRAD").astype(np.float64)
    x64, others, power_sum, norm, scale = _renorm_slices(k, x)
    p, max_norm = k.attr("p"), k.attr("max_norm")
    scaled = norm > max_norm
    # d(max_norm / norm) / d|x| = -max_norm S^(-1 - 1/p) |x|^(p - 1), with S the slice's sum of |x|^p
    slope = np.where(scaled, -max_norm * np.where(scaled, power_sum, 1.0) ** (-1.0 - 1.0 / p), 0.0)
    with np.errstate(divide="ignore"):   # p < 1 at x = 0: an infinite slope, as Paddle gives
        direction = np.abs(x64) ** (p - 1.0) * np.where(x64 >= 0, 1.0, -1.0)
    dx = scale * dout + np.sum(x64 * dout, axis=others, keepdims=True) * slope * direction
    return {"X@GRAD": dx.astype(x.dtype)}
