"""Kernels of gradc.ops.cumprod. Both run along the last axis of X moved there, flipped first when reversed."""

from __future__ import annotations

import numpy as np

from ...shapes import normalize_axis
from . import kernel


def along(x: np.ndarray, axis: int, reverse: bool = False):
    """x (a 0-d x as [1]) with ``axis`` moved last, flipped when ``reverse`` (the order a scan runs), and the
    way back to x's layout."""
    shape = x.shape or (1,)
    axis = normalize_axis(axis, len(shape))

    def run(v):
        v = np.moveaxis(v.reshape(shape), axis, -1)
        return v[..., ::-1] if reverse else v

    def back(v):
        return np.moveaxis(v[..., ::-1] if reverse else v, -1, axis).reshape(x.shape)

    return run, back


def _exclusive(products: np.ndarray, first: float = 1.0) -> np.ndarray:
    """The products shifted one step on: entry i holds what entry i-1 held, entry 0 holds ``first`` (1; 0 for
    tangents)."""
    return np.concatenate([np.full_like(products[..., :1], first), products[..., :-1]], axis=-1)


@kernel("cumprod")
def cumprod(k):
    x = k.x("X")
    run, back = along(x, k.attr("dim"), k.attr("reverse"))
    products = np.cumprod(run(x), axis=-1, dtype=x.dtype)
    return {"Out": back(_exclusive(products) if k.attr("exclusive") else products)}


@kernel("cumprod_grad")
def cumprod_grad(k):
    """dx_j = (product of the factors before j) * S_j, S_j = sum over the outputs i that hold x_j of
    dout_i * (their factors after j): S_j = dout_j + x_{j+1} S_{j+1} (inclusive), S_j = dout_{j+1} +
    x_{j+1} S_{j+1} (exclusive). No division, so a zero x_j gets the other factors' product. Complex factors are
    conjugated, as Paddle's kernel does (dOut times the conjugate partials)."""
    x = k.x("X")
    run, back = along(x, k.attr("dim"), k.attr("reverse"))
    a, dout = run(np.conj(x) if np.iscomplexobj(x) else x), run(k.x("Out@GRAD"))
    before = _exclusive(np.cumprod(a, axis=-1, dtype=a.dtype))
    tail = np.zeros_like(dout[..., 0])
    tails = np.empty_like(dout)
    exclusive, n = k.attr("exclusive"), a.shape[-1]
    for j in range(n - 1, -1, -1):
        following = a[..., j + 1] if j + 1 < n else 0
        own = (dout[..., j + 1] if j + 1 < n else 0) if exclusive else dout[..., j]
        tail = own + following * tail
        tails[..., j] = tail
    return {"X@GRAD": back(before * tails)}

