"""Kernels of gradc.ops.products."""

from __future__ import annotations

import numpy as np

from ...ops.products import cross_axis, diag_embed_dims, diagonal_axes
from ...ops.rearrange import diagonal_length
from ...shapes import value_error
from . import kernel
from .broadcast import unbroadcast
from .math import conj
from .reduce import p_norm_slope

kernel("dot")(lambda k: {"Out": np.sum(k.x("X") * k.x("Y"), axis=-1, dtype=k.x("X").dtype)})   # int32 stays int32


@kernel("dot_grad")
def dot_grad(k):
    x, y, dout = k.x("X"), k.x("Y"), k.x("Out@GRAD")[..., None]
    return k.grads({"X@GRAD": lambda: dout * y, "Y@GRAD": lambda: dout * x})


def _cross_axis(k, x):
    return cross_axis(k.attr("dim"), list(x.shape), value_error)


kernel("cross")(lambda k: {"Out": np.cross(k.x("X"), k.x("Y"), axis=_cross_axis(k, k.x("X")))})


@kernel("cross_grad")
def cross_grad(k):
    """dOut . (x × y) = x . (y × dOut) = y . (dOut × x)."""
    x, y, dout = k.x("X"), k.x("Y"), k.x("Out@GRAD")
    axis = _cross_axis(k, x)
    return k.grads({"X@GRAD": lambda: np.cross(y, dout, axis=axis), "Y@GRAD": lambda: np.cross(dout, x, axis=axis)})


kernel("kron")(lambda k: {"Out": np.kron(k.x("X"), k.x("Y"))})


@kernel("kron_grad")
def kron_grad(k):
    """Out seen as [x0, y0, x1, y1, ...] (ranks padded with leading 1s) is x[i0, i1, ...] y[j0, j1, ...]: each
    grad contracts that view of dOut with the other operand."""
    x, y, dout = conj(k.x("X")), conj(k.x("Y")), k.x("Out@GRAD")   # complex: the other's conjugate factor
    rank = max(x.ndim, y.ndim)
    xs, ys = (1,) * (rank - x.ndim) + x.shape, (1,) * (rank - y.ndim) + y.shape
    pairs = dout.reshape([d for pair in zip(xs, ys) for d in pair])
    labels, x_labels, y_labels = list(range(2 * rank)), list(range(0, 2 * rank, 2)), list(range(1, 2 * rank, 2))
    return k.grads({
        "X@GRAD": lambda: np.einsum(pairs, labels, y.reshape(ys), y_labels, x_labels).reshape(x.shape),
        "Y@GRAD": lambda: np.einsum(pairs, labels, x.reshape(xs), x_labels, y_labels).reshape(y.shape)})


kernel("mv")(lambda k: {"Out": k.x("X") @ k.x("Vec")})


@kernel("mv_grad")
def mv_grad(k):
    x, vec, dout = k.x("X"), k.x("Vec"), k.x("Out@GRAD")
    return k.grads({"X@GRAD": lambda: np.outer(dout, vec), "Vec@GRAD": lambda: dout @ x})


def _scaled_product(k):
    product = np.matmul(k.x("X"), k.x("Y"))
    alpha, beta = (product.dtype.type(k.attr(name)) for name in ("Alpha", "Beta"))
    return {"Out": beta * k.x("Input") + alpha * product}


def _scaled_product_grad(k):
    x, y, dout = k.x("X"), k.x("Y"), k.x("Out@GRAD")
    alpha, beta = (dout.dtype.type(k.attr(name)) for name in ("Alpha", "Beta"))
    return k.grads({"Input@GRAD": lambda: beta * unbroadcast(dout, k.x("Input").shape),
                    "X@GRAD": lambda: alpha * np.matmul(dout, np.swapaxes(y, -1, -2)),
                    "Y@GRAD": lambda: alpha * np.matmul(np.swapaxes(x, -1, -2), dout)})


kernel("addmm", "baddbmm")(_scaled_product)
kernel("addmm_grad", "baddbmm_grad", shape_only=("Input",))(_scaled_product_grad)


def _as_chain(matrices):
    """multi_dot's operands as matrices: a leading vector as a row, a trailing one as a column."""
    chain = list(matrices)
    chain[0] = chain[0].reshape(1, -1) if chain[0].ndim == 1 else chain[0]
    chain[-1] = chain[-1].reshape(-1, 1) if chain[-1].ndim == 1 else chain[-1]
    return chain


kernel("multi_dot")(lambda k: {"Out": np.linalg.multi_dot(k.xs("X"))})


@kernel("multi_dot_grad")
def multi_dot_grad(k):
    """The grad of the i-th factor: (product before it)^T dOut (product after it)^T."""
    operands = k.xs("X")
    chain = _as_chain(operands)
    dout = k.x("Out@GRAD").reshape(chain[0].shape[0], chain[-1].shape[1])
    before = [np.eye(chain[0].shape[0], dtype=dout.dtype)]
    for matrix in chain[:-1]:
        before.append(before[-1] @ matrix)
    after = [np.eye(chain[-1].shape[1], dtype=dout.dtype)]
    for matrix in chain[:0:-1]:
        after.append(matrix @ after[-1])
    grads = [before[i].T @ dout @ after[-1 - i].T for i in range(len(chain))]
    return {"X@GRAD": [g.reshape(x.shape) for g, x in zip(grads, operands)]}


@kernel("dist")
def dist(k):
    diff, p = np.abs(k.x("X") - k.x("Y")), k.attr("p")
    if p == 0:
        return {"Out": np.array(np.count_nonzero(diff), diff.dtype)}
    if np.isinf(p):
        return {"Out": (np.max if p > 0 else np.min)(diff)}
    return {"Out": np.sum(diff ** diff.dtype.type(p)) ** diff.dtype.type(1 / p)}


@kernel("dist_grad")
def dist_grad(k):
    """Paddle's p_norm grad of X - Y: 0 for p 0; sign(d) at the entries equal to the norm for inf / -inf (each tie
    gets all of dOut); else sign(d) |d|^(p-1) / (norm^(p-1) + 1e-12). For 0 < p < 1 an entry with d = 0 gets 0
    (the central difference there), where Paddle computes 0 * inf = nan."""
    x, y, p = k.x("X"), k.x("Y"), k.attr("p")
    diff = x - y
    if p == 0:
        grad = np.zeros_like(diff)
    elif np.isinf(p):
        grad = p_norm_slope(diff, k.x("Out"), p, 1e-12) * k.x("Out@GRAD")
    else:
        with np.errstate(divide="ignore", invalid="ignore"):
            grad = np.where(diff == 0, 0, p_norm_slope(diff, k.x("Out"), p, 1e-12) * k.x("Out@GRAD")).astype(diff.dtype)
    return k.grads({"X@GRAD": lambda: unbroadcast(grad, x.shape), "Y@GRAD": lambda: -unbroadcast(grad, y.shape)})


def _diagonal_of(k, x):
    """(axis1, axis2, offset, length) of trace's or diagonal's diagonal in x."""
    a1, a2 = diagonal_axes(k.attr, x.ndim, value_error)
    # an offset past the matrix is its empty diagonal; numpy takes it only within a C int
    offset = max(min(k.attr("offset"), x.shape[a2]), -x.shape[a1])
    return a1, a2, offset, diagonal_length(x.shape[a1], x.shape[a2], offset)


def on_diagonal(values, shape, offset: int, axis1: int, axis2: int):
    """A zero tensor of ``shape`` with ``values`` (its dims but axis1 and axis2, then the diagonal's) on the
    diagonal ``offset`` of the (axis1, axis2) planes."""
    out = np.zeros(shape, values.dtype)
    planes = np.moveaxis(out, (axis1, axis2), (-2, -1))   # a view: writing it fills out
    steps = np.arange(values.shape[-1])
    planes[..., steps + max(-offset, 0), steps + max(offset, 0)] = values
    return out


@kernel("trace")
def trace(k):
    x = k.x("Input")
    a1, a2, offset, _ = _diagonal_of(k, x)
    return {"Out": np.trace(x, offset, a1, a2).astype(x.dtype, copy=False)}


@kernel("trace_grad", shape_only=("Input",))
def trace_grad(k):
    x, dout = k.x("Input"), k.x("Out@GRAD")
    a1, a2, offset, length = _diagonal_of(k, x)
    values = np.broadcast_to(dout[..., None], dout.shape + (length,))
    return {"Input@GRAD": on_diagonal(values, x.shape, offset, a1, a2)}


@kernel("diagonal")
def diagonal(k):
    x = k.x("Input")
    a1, a2, offset, _ = _diagonal_of(k, x)
    return {"Out": np.diagonal(x, offset, a1, a2).copy()}


@kernel("diagonal_grad", shape_only=("Input",))
def diagonal_grad(k):
    x = k.x("Input")
    a1, a2, offset, _ = _diagonal_of(k, x)
    return {"Input@GRAD": on_diagonal(k.x("Out@GRAD"), x.shape, offset, a1, a2)}


@kernel("diag_embed")
def diag_embed(k):
    x, offset = k.x("Input"), k.attr("offset")
    d1, d2 = diag_embed_dims(k.attr, x.ndim, value_error)
    size = x.shape[-1] + abs(offset)
    shape = list(x.shape[:-1])
    for dim in sorted((d1, d2)):
        shape.insert(dim, size)
    return {"Out": on_diagonal(x, shape, offset, d1, d2)}

