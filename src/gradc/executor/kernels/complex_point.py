"""Kernels of gradc.ops.complex_point: cumprod_grad_grad, reduce_prod_grad_grad and put_along_axis_grad_grad, the
tangents of cumprod's, reduce_prod's and put_along_axis's (Reduce mul) grads at complex factors carried as dual
numbers (a value and its tangent through every product)."""

from __future__ import annotations

import numpy as np

from ..dual import Dual
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


def _values(k):
    """X, Out@GRAD and X@GRAD@GRAD in one (complex) dtype."""
    names = ("X", "Out@GRAD", "X@GRAD@GRAD")
    dtype = np.result_type(*(k.x(name) for name in names))
    return (k.x(name).astype(dtype) for name in names)


@kernel("cumprod_grad_grad")
def cumprod_grad_grad(k):
    """Out@GRAD@GRAD = cumprod's tangent along V = X@GRAD@GRAD; X@GRAD = conj of the tangent along V of cumprod_grad's
    formula without its conjugates (before_j S_j, S_j = own_j + x_{j+1} S_{j+1}) at X, with conj(dOut)."""
    x, dout, v = _values(k)
    run, back = along(x, k.attr("dim"), k.attr("reverse"))
    a, v, dout = run(x), run(v), run(np.conj(dout))
    exclusive, n = k.attr("exclusive"), a.shape[-1]
    products, tangents = _products_and_tangents(a, v)
    before, dbefore = _exclusive(products), _exclusive(tangents, 0.0)
    tail, dtail = np.zeros_like(a[..., 0]), np.zeros_like(a[..., 0])
    tails, dtails = np.empty_like(a), np.empty_like(a)
    for j in range(n - 1, -1, -1):
        following, dfollowing = (a[..., j + 1], v[..., j + 1]) if j + 1 < n else (0, 0)
        own = (dout[..., j + 1] if j + 1 < n else 0) if exclusive else dout[..., j]
        tail, dtail = own + following * tail, dfollowing * tail + following * dtail
        tails[..., j], dtails[..., j] = tail, dtail
    return {"Out@GRAD@GRAD": back(dbefore if exclusive else tangents),
            "X@GRAD": back(np.conj(dbefore * tails + before * dtails))}


def _others_and_tangents(x: np.ndarray, v: np.ndarray, axes) -> tuple[np.ndarray, np.ndarray]:
    """For each element, the product of the others it is reduced with, and its tangent along v: exclusive running
    products from both ends (as reduce.py's _prod_of_others), each with its tangent."""
    rest = [i for i in range(x.ndim) if i not in axes]
    order = np.argsort(rest + list(axes))

    def flat(value):
        moved = np.transpose(value, rest + list(axes))
        return moved.reshape(moved.shape[:len(rest)] + (-1,)), moved.shape

    (a, shape), (w, _) = flat(x), flat(v)
    before, dbefore = (_exclusive(p, first) for p, first in zip(_products_and_tangents(a, w), (1.0, 0.0)))
    after, dafter = (_exclusive(p, first)[..., ::-1] for p, first in
                     zip(_products_and_tangents(a[..., ::-1], w[..., ::-1]), (1.0, 0.0)))
    return tuple(np.transpose(p.reshape(shape), order) for p in (before * after, dbefore * after + before * dafter))


@kernel("reduce_prod_grad_grad")
def reduce_prod_grad_grad(k):
    """With P the products of the others and V = X@GRAD@GRAD: Out@GRAD@GRAD = the sum over the reduced axes of V P
    (the product's tangent); X@GRAD = dOut conj(P's tangent along V)."""
    x, dout, v = _values(k)
    axes = _axes(k, x)
    others, slope = _others_and_tangents(x, v, axes)
    summed = np.sum(v * others, axis=axes, keepdims=k.attr("keep_dim"))
    return {"Out@GRAD@GRAD": summed.reshape(dout.shape), "X@GRAD": _expand(k, dout, x, axes) * np.conj(slope)}


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


# cumprod_grad_grad_grad, reduce_prod_grad_grad_grad (gradc.ops.complex_point): the products written for any number
# type, run on nested duals X + eps A + delta V with the grad's weights conj(dOut) + eps conj(B)

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


def _hyperduals(k):
    """(X + eps A + delta V, conj(dOut) + eps conj(B)) in one dtype, and X, dOut."""
    values = [k.x(name) for name in ("X", "Out@GRAD", "X@GRAD@GRAD")]
    cotangents = [k.optional(name) for name in ("X@GRAD@COTANGENT", "Out@GRAD@GRAD@COTANGENT")]
    dtype = np.result_type(*values, *(c for c in cotangents if c is not None))
    x, dout, v = (value.astype(dtype) for value in values)
    a, b = (np.zeros_like(like) if c is None else c.astype(dtype).reshape(like.shape)
            for c, like in zip(cotangents, (x, dout)))
    return (Dual(Dual(x, v), Dual(a, np.zeros_like(x))),
            Dual(Dual(np.conj(dout), np.zeros_like(dout)), Dual(np.conj(b), np.zeros_like(dout))), x, dout)


def _once_more(k, forward, weights) -> dict:
    """The grads from F and G at the hyperduals (gradc.ops.complex_point's formulas)."""
    return k.grads({"X@GRAD": lambda: np.conj(weights.tangent.tangent),
                    "X@GRAD@GRAD@GRAD": lambda: np.conj(weights.tangent.value),
                    "Out@GRAD@GRAD": lambda: forward.tangent.tangent})


@kernel("cumprod_grad_grad_grad")
def cumprod_grad_grad_grad(k):
    xh, wh, x, _ = _hyperduals(k)
    run, back = along(x, k.attr("dim"), k.attr("reverse"))
    products = _running(run(xh))
    forward = _shifted(products) if k.attr("exclusive") else products
    return _once_more(k, back(forward), back(_scan_weights(run(xh), run(wh), k.attr("exclusive"))))


@kernel("reduce_prod_grad_grad_grad")
def reduce_prod_grad_grad_grad(k):
    xh, wh, x, dout = _hyperduals(k)
    axes = list(_axes(k, x))
    rest = [i for i in range(x.ndim) if i not in axes]
    moved = np.transpose(xh, rest + axes)
    flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
    others = _shifted(_running(flat)) * _shifted(_running(flat[..., ::-1]))[..., ::-1]
    others = np.transpose(others.reshape(moved.shape), np.argsort(rest + axes).tolist())
    product = _running(flat)[..., -1] if flat.shape[-1] else np.ones_like(flat.sum(axis=-1))
    return _once_more(k, product.reshape(dout.shape), _expand(k, wh, x, axes) * others)
