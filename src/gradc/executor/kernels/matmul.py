"""Kernels of gradc.ops.math's matrix products: mul, matmul, matmul_v2, bmm, bilinear_tensor_product."""

from __future__ import annotations

import math

import numpy as np

from . import blas_bits, kernel
from .math import conj


def as_matrix(a, axis: int):
    """``a`` as [prod(shape[:axis]), prod(shape[axis:])]: mul's flattening, one row per normalised slice."""
    return a.reshape(math.prod(a.shape[:axis]), math.prod(a.shape[axis:]))   # not -1: no rows leave it open


def _col_dims(k) -> tuple[int, int]:
    attrs = k.op.attrs   # read live, as k.attr does; its defaults only for an op that lacks one
    try:
        return attrs["x_num_col_dims"], attrs["y_num_col_dims"]
    except KeyError:
        return k.attr("x_num_col_dims"), k.attr("y_num_col_dims")


@kernel("mul")
def mul(k):
    x, y = k.x("X"), k.x("Y")
    xn, yn = _col_dims(k)
    if x.ndim == 2 and y.ndim == 2 and xn == yn == 1:   # already matrices (fc layers)
        return {"Out": x @ y}
    out = as_matrix(x, xn) @ as_matrix(y, yn)
    return {"Out": out.reshape(x.shape[:xn] + y.shape[yn:])}


@kernel("mul_grad")
def mul_grad(k):
    x, y, dout = k.x("X"), k.x("Y"), k.x("Out@GRAD")
    xn, yn = _col_dims(k)
    if x.ndim == 2 and y.ndim == 2 and dout.ndim == 2 and xn == yn == 1:   # matrices (fc layers): hot
        wanted, grads = k.wanted, {}
        if "X@GRAD" in wanted:
            grads["X@GRAD"] = times_transposed(dout, y)
        if "Y@GRAD" in wanted:
            grads["Y@GRAD"] = x.T @ dout
        return grads
    x2, y2 = as_matrix(x, xn), as_matrix(y, yn)
    d2 = dout.reshape(x2.shape[0], y2.shape[1])
    return k.grads({"X@GRAD": lambda: (d2 @ y2.T).reshape(x.shape), "Y@GRAD": lambda: (x2.T @ d2).reshape(y.shape)})


def times_transposed(d, w):
    """d @ w.T for matrices: a few float32 rows of d times a big C-ordered w as (w @ d.T).T, the same values bit for
    bit (checked on 1,110 float32 shapes, 1-512 rows) where BLAS packs far less: 1.5-2.2x faster from 2 to 32 rows
    against a w of 2^18 values and a contraction of 128 or more (AlexNet's [2, 4096] @ [9216, 4096].T: 49 -> 31 ms),
    up to 1.3x slower on smaller ones and 1.2-8x slower on more rows. Not taken where bits differ: float64 (40 of
    900 shapes), a transposed w ((y.T @ d.T).T: 3 of 80), and a machine whose BLAS gives other bits (blas_bits)."""
    if (2 <= d.shape[0] <= 32 and d.dtype == w.dtype == np.float32 and w.flags.c_contiguous and w.size >= 1 << 18
            and w.shape[1] >= 128 and blas_bits.few_rows_times_weight()):
        return np.ascontiguousarray((w @ d.T).T)
    return d @ w.T


def t(a):
    """The transposes of a batch of matrices (the formulas' ^T): its last two dims swapped."""
    return np.swapaxes(a, -1, -2)


def _operands(x, y, trans_x, trans_y):
    """X and Y as (batch..., m, n) operands: a 1-D X is a row and a 1-D Y a column (never transposed)."""
    xm = x[None, :] if x.ndim == 1 else (t(x) if trans_x else x)
    ym = y[:, None] if y.ndim == 1 else (t(y) if trans_y else y)
    return xm, ym


def _product(a, b):
    """a @ b; a stack of matrices times one matrix (a linear layer of a sequence model) as one product of the
    stack's rows: 1.1-1.4x faster than numpy's product per matrix ([8, 128, 256] @ [256, 8000]: 47 -> 34 ms). Each
    value is the same dot product, though BLAS may add its terms in another order (one value in 17 of a
    [3, 1, 33] @ [33, 17]; none of [8, 128, 256] @ [256, 8000]), as close to float64's."""
    if b.ndim == 2 and a.ndim > 2:
        return (a.reshape(-1, a.shape[-1]) @ b).reshape(*a.shape[:-1], b.shape[-1])
    return a @ b


def _matmul(x, y, trans_x, trans_y):
    xm, ym = _operands(x, y, trans_x, trans_y)
    out = _product(xm, ym)
    if x.ndim == 1:
        out = out[..., 0, :]
    if y.ndim == 1:
        out = out[..., 0]
    return out


def _matmul_grads(k, x, y, dout, trans_x, trans_y):
    xm, ym = _operands(x, y, trans_x, trans_y)
    if y.ndim == 1:  # restore the dropped dims: Y's column first, so a 0-d dout works too
        dout = dout[..., None]
    if x.ndim == 1:
        dout = np.expand_dims(dout, -2)

    def dx():
        dxm = times_transposed(dout, ym) if dout.ndim == ym.ndim == 2 else _product(dout, t(ym))
        return _sum_batch(dxm if x.ndim == 1 or not trans_x else t(dxm), x.shape)

    def dy():
        if y.ndim == 2 and _summed_by_loop(xm, dout):
            dym = _batch_sum_of_products(t(xm), dout)
            return dym if not trans_y else t(dym)
        dym = t(xm) @ dout
        return _sum_batch(dym if y.ndim == 1 or not trans_y else t(dym), y.shape)

    return k.grads({"X@GRAD": dx, "Y@GRAD": dy})


LOOP_PRODUCT = 1 << 20   # multiply-adds a product of the stack must have for the loop to pay (~3 us a product)


def _summed_by_loop(xm, dout) -> bool:
    """Whether a matrix's grad from a stack of products is summed as they are made: a stack of big products."""
    stacked = xm.ndim > 2 and xm.shape[:-2] == dout.shape[:-2]
    return stacked and math.prod(xm.shape[-2:]) * dout.shape[-1] >= LOOP_PRODUCT


def _batch_sum_of_products(a, b):
    """The sum over the stack of a[i] @ b[i], each product added as it is made: the values of (a @ b).sum over the
    stack (which adds the products in the same order), without holding the stack of products ([8, 256, 8000] for
    one [256, 8000] grad: 77 -> 59 ms)."""
    stack = a.shape[:-2]
    total = product = None
    for index in np.ndindex(stack):
        if total is None:
            total = a[index] @ b[index]
            product = np.empty_like(total)
        else:
            total += np.matmul(a[index], b[index], out=product)
    return total


def _sum_batch(grad, shape):
    """Undo batch broadcasting (and 1-D promotion) of a matmul operand."""
    if len(shape) == 1:
        return grad.reshape(-1, shape[0]).sum(0)
    lead = grad.ndim - len(shape)
    if lead:
        grad = grad.sum(axis=tuple(range(lead)))
    axes = tuple(i for i, s in enumerate(shape[:-2]) if s == 1 and grad.shape[i] != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


@kernel("matmul_v2")
def matmul_v2(k):
    return {"Out": _matmul(k.x("X"), k.x("Y"), k.attr("trans_x"), k.attr("trans_y"))}


@kernel("matmul_v2_grad")
def matmul_v2_grad(k):   # dX = dOut conj(Y)^T, dY = conj(X)^T dOut: a complex operand is the other's conjugate factor
    return _matmul_grads(k, conj(k.x("X")), conj(k.x("Y")), k.x("Out@GRAD"), k.attr("trans_x"), k.attr("trans_y"))


@kernel("matmul")
def matmul(k):
    x, y = k.x("X"), k.x("Y")
    out = _matmul(x, y, k.attr("transpose_X"), k.attr("transpose_Y")) * k.attr("alpha")
    return {"Out": out.reshape(1) if x.ndim == y.ndim == 1 else out}


@kernel("matmul_grad")
def matmul_grad(k):
    x, y = k.x("X"), k.x("Y")
    dout = k.x("Out@GRAD") * k.attr("alpha")
    dout = dout.reshape(()) if x.ndim == y.ndim == 1 else dout
    return _matmul_grads(k, x, y, dout, k.attr("transpose_X"), k.attr("transpose_Y"))


kernel("bmm")(lambda k: {"Out": k.x("X") @ k.x("Y")})
kernel("bmm_grad")(lambda k: _matmul_grads(k, k.x("X"), k.x("Y"), k.x("Out@GRAD"), False, False))


@kernel("bilinear_tensor_product")
def bilinear_tensor_product(k):
    out = np.einsum("bm,kmn,bn->bk", k.x("X"), k.x("Weight"), k.x("Y"))
    bias = k.optional("Bias")
    return {"Out": out if bias is None else out + bias}


@kernel("bilinear_tensor_product_grad")
def bilinear_tensor_product_grad(k):
    x, y, w, d = k.x("X"), k.x("Y"), k.x("Weight"), k.x("Out@GRAD")
    return k.grads({"X@GRAD": lambda: np.einsum("bk,kmn,bn->bm", d, w, y),
                    "Y@GRAD": lambda: np.einsum("bk,kmn,bm->bn", d, w, x),
                    "Weight@GRAD": lambda: np.einsum("bk,bm,bn->kmn", d, x, y),
                    "Bias@GRAD": lambda: d.sum(axis=0, keepdims=True)})
