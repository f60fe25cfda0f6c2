"""Kernels of gradc.ops.complex_point: cumprod_grad_grad, reduce_prod_grad_grad and put_along_axis_grad_grad, the
tangents of cumprod's, reduce_prod's and put_along_axis's (Reduce mul) grads at complex factors carried as dual
numbers (a value and its tangent through every product); cumprod's and reduce_prod's along any number of directions,
the products written once for any number type and run on duals nested once per direction."""

from __future__ import annotations

import numpy as np

from ..dual import across, along_each, listed
from . import kernel
from .broadcast import unbroadcast
from .cumprod import _exclusive, along
from .put_along import Placement
from .reduce import _axes, _expand


def _products_and_tangents(a: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inclusive running products of a along its last axis and their tangents along v (P_i = P_{i-1} a_i,
    T_i = T_{i-1} a_i + P_{i-1} v_i)."""
    products, tangents = np.empty_like(a), np.empty_like(a)
    product, tangent = np.ones_like(a[..., 0]), np.zeros_like(a[..., 0])
    for i in range(a.shape[-1]):
        product, tangent = product * a[..., i], tangent * a[..., i] + product * v[..., i]
        products[..., i], tangents[..., i] = product, tangent
    return products, tangents


def _grouped_others_and_tangents(factors: np.ndarray, along: np.ndarray, groups: np.ndarray):
    """For each factor, the product of the others of its group and that product's tangent along ``along``: the
    groups laid out as rows padded with ones (tangent 0), then exclusive running products from both ends."""
    if not factors.size:
        return factors, factors
    order = np.argsort(groups, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(groups[order]) != 0])
    row = np.cumsum(np.r_[False, np.diff(groups[order]) != 0])
    col = np.arange(order.size) - starts[row]
    a = np.ones((starts.size, col.max() + 1), factors.dtype)
    v = np.zeros_like(a)
    a[row, col], v[row, col] = factors[order], along[order]
    before, dbefore = (_exclusive(p, first) for p, first in zip(_products_and_tangents(a, v), (1.0, 0.0)))
    after, dafter = (_exclusive(p, first)[..., ::-1] for p, first in
                     zip(_products_and_tangents(a[..., ::-1], v[..., ::-1]), (1.0, 0.0)))
    others, slopes = np.empty_like(factors), np.empty_like(factors)
    others[order], slopes[order] = (before * after)[row, col], (dbefore * after + before * dafter)[row, col]
    return others, slopes


@kernel("put_along_axis_grad_grad")
def put_along_axis_grad_grad(k):
    """put_along_axis_grad with Reduce mul is C = M(factors) dOut: Result@GRAD@GRAD = conj(M)^T ddC; a factor's grad
    is conj(dOut T), T its others' product's tangent along conj(ddC) (ddC of Input@GRAD and Value@GRAD: dd)."""
    place = Placement(k)
    x, index, value = place.x.reshape(-1), k.x("Index"), k.x("Value")
    dout = k.x("Result@GRAD").reshape(-1)
    dtype = np.result_type(x, value, dout)
    ddx, ddvalue = (k.optional(slot + "@GRAD@GRAD") for slot in ("Input", "Value"))
    ddx = np.zeros(x.size, dtype) if ddx is None else ddx.reshape(-1).astype(dtype)
    ddvalue = np.zeros(index.size, dtype) if ddvalue is None else \
        np.broadcast_to(ddvalue, index.shape).reshape(-1).astype(dtype)
    selves = np.flatnonzero(place.hit) if place.include_self else np.empty(0, np.int64)
    groups = np.concatenate([place.targets, selves])
    dd = np.concatenate([ddvalue, ddx[selves]])
    others, slopes = _grouped_others_and_tangents(np.concatenate([place.values, x[selves]]).astype(dtype),
                                                  np.conj(dd), groups)
    factor_grads = np.conj(dout[groups].astype(dtype) * slopes)

    def dout_grad():
        grad = np.where(place.hit, 0, ddx)
        np.add.at(grad, groups, np.conj(others) * dd)
        return grad.reshape(k.x("Result@GRAD").shape)

    def input_grad():
        grad = np.zeros(x.size, dtype)
        grad[selves] = factor_grads[place.values.size:]
        return grad.reshape(place.x.shape)

    return k.grads({"Result@GRAD@GRAD": dout_grad, "Input@GRAD": input_grad,
                    "Value@GRAD": lambda: unbroadcast(factor_grads[:place.values.size].reshape(index.shape),
                                                      value.shape)})


def _running(a):
    """The inclusive running products along the last axis."""
    products = [a[..., 0]] if a.shape[-1] else []
    for i in range(1, a.shape[-1]):
        products.append(products[-1] * a[..., i])
    return np.stack(products, axis=-1) if products else a.copy()


def _shifted(products):
    """Entry i holds entry i-1's, entry 0 a one: exclusive products."""
    return np.concatenate([np.ones_like(products[..., :1]), products[..., :-1]], axis=-1)


def _scan_weights(a, w, exclusive: bool):
    """J(a)^T w of cumprod along the last axis (no conjugates): before_j times S_j = own_j + a_{j+1} S_{j+1}."""
    n, tails = a.shape[-1], []
    tail = zero = np.zeros_like(a[..., :1]).sum(axis=-1)
    for j in reversed(range(n)):
        own = (w[..., j + 1] if j + 1 < n else zero) if exclusive else w[..., j]
        tail = own + a[..., j + 1] * tail if j + 1 < n else own
        tails.append(tail)
    return _shifted(_running(a)) * np.stack(tails[::-1], axis=-1) if n else a.copy()


def _directed(k):
    """X on duals along the directions X@GRAD@GRAD (gradc.executor.dual.along), the grad's weights conj(dOut), in
    one dtype, and how many directions."""
    x, dout = k.x("X"), k.x("Out@GRAD")
    directions = listed(k, "X@GRAD@GRAD")
    dtype = np.result_type(x, dout, *(d for d in directions if d is not None))
    return along_each(x.astype(dtype), directions), np.conj(dout.astype(dtype)), len(directions)


def _directional_grads(k, forward, weighted, count: int) -> dict:
    """X@GRAD = conj(grad D_V <conj dOut, F>), Out@GRAD@GRAD = D_V F: the parts along every direction."""
    return k.grads({"X@GRAD": lambda: np.conj(across(weighted, count)),
                    "Out@GRAD@GRAD": lambda: across(forward, count)})


@kernel("cumprod_grad_grad")
def cumprod_grad_grad(k):
    x, weights, count = _directed(k)
    run, back = along(k.x("X"), k.attr("dim"), k.attr("reverse"))
    products = _running(run(x))
    forward = _shifted(products) if k.attr("exclusive") else products
    return _directional_grads(k, back(forward), back(_scan_weights(run(x), run(weights), k.attr("exclusive"))),
                              count)


@kernel("reduce_prod_grad_grad")
def reduce_prod_grad_grad(k):
    x, weights, count = _directed(k)
    axes = list(_axes(k, k.x("X")))
    rest = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(x, rest + axes)
    flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
    others = _shifted(_running(flat)) * _shifted(_running(flat[..., ::-1]))[..., ::-1]
    others = np.transpose(others.reshape(moved.shape), np.argsort(rest + axes).tolist())
    product = _running(flat)[..., -1] if flat.shape[-1] else np.ones_like(flat.sum(axis=-1))
    return _directional_grads(k, product.reshape(weights.shape), _expand(k, weights, k.x("X"), axes) * others, count)
