"""Kernels of gradc.ops.product_directions: cumprod_grad_grad, reduce_prod_grad_grad and put_along_axis_grad_grad, the
grads of cumprod's, reduce_prod's and put_along_axis's (Reduce mul) grads along any number of directions: the
products written once for any number type (cumprod's and reduce_prod's complex too) and run on duals nested once per
direction."""

from __future__ import annotations

import numpy as np

from ..dual import across, along_each, listed
from . import kernel
from .broadcast import unbroadcast
from .cumprod import along
from .put_along import Placement
from .reduce import _axes, _expand


def _rows_of_groups(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each group's id, and each member's row (its group's place among the ids) and column (its place within the
    group): the groups laid out as rows."""
    ids, row = np.unique(groups, return_inverse=True)
    order = np.argsort(row, kind="stable")
    col = np.empty_like(row)
    col[order] = np.arange(row.size) - np.searchsorted(row[order], row[order])
    return ids, row, col


@kernel("put_along_axis_grad_grad")
def put_along_axis_grad_grad(k):
    """put_along_axis_grad (Reduce mul) along the directions Input@GRAD@GRAD, Value@GRAD@GRAD
    (gradc.ops.directional_double): Input and Value on duals nested once per direction, each group's factors laid out
    as a row padded with ones, the products of the others from both ends of it (no division, zeros too); the grads
    of <dOut, Result> and Result itself read along all directions."""
    place = Placement(k)
    x, value, dout = k.x("Input"), k.x("Value"), k.x("Result@GRAD")
    index_shape = k.x("Index").shape
    directions = {slot: listed(k, slot + "@GRAD@GRAD") for slot in ("Input", "Value")}
    dtype = np.result_type(x, value, dout, *(d for ds in directions.values() for d in ds if d is not None))
    count = len(directions["Input"])
    flat_x = along_each(x.astype(dtype), directions["Input"]).reshape(-1)
    values = np.broadcast_to(along_each(value.astype(dtype), directions["Value"]), index_shape).reshape(-1)
    weights = dout.astype(dtype).reshape(-1)
    selves = np.flatnonzero(place.hit) if place.include_self else np.empty(0, np.int64)
    factors = np.concatenate([values, flat_x[selves]])
    ids, row, col = _rows_of_groups(np.concatenate([place.targets, selves]))
    cells = np.full((ids.size, col.max() + 1 if col.size else 0), row.size)
    cells[row, col] = np.arange(row.size)
    padded = np.concatenate([factors, np.ones(1, dtype)])[cells]   # a cell past a group's end holds a one
    others = (_shifted(_running(padded)) * _shifted(_running(padded[..., ::-1]))[..., ::-1])[row, col]
    products = _running(padded)[..., -1] if padded.size else np.ones(0, dtype)
    group_of = np.full(x.size, ids.size)
    group_of[ids] = np.arange(ids.size)
    result = np.where(place.hit, np.concatenate([products, np.ones(1, dtype)])[group_of], flat_x)
    self_at = np.full(x.size, selves.size)
    self_at[selves] = np.arange(selves.size)
    own = np.concatenate([weights[selves] * others[values.size:], np.zeros(1, dtype)])[self_at]
    input_grad = own + np.where(place.hit, 0, weights)
    value_grad = weights[place.targets] * others[:values.size]
    return k.grads({"Input@GRAD": lambda: across(input_grad, count).reshape(x.shape),
                    "Value@GRAD": lambda: unbroadcast(across(value_grad, count).reshape(index_shape), value.shape),
                    "Result@GRAD@GRAD": lambda: across(result, count).reshape(dout.shape)})


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
