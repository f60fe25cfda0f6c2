"""Kernels of gradc.ops.norm: instance_norm (the per-plane version of the norms in kernels.nn), spectral_norm
(power iteration on Weight as a [dim, rest] matrix) and lrn (sums over a window of channels)."""

from __future__ import annotations

import numpy as np

from ...ops import norm as ops
from . import kernel
from .channel_stats import per_channel
from .nn import moments, norm_grad


# ---------------------------------------------------------------- instance_norm
def _planes(x):
    """X [N, C, ...] as [N, C, cells]."""
    if not 2 <= x.ndim <= 5:
        raise ValueError(f"X must have rank 2 to 5 (N, C, ...), got shape {list(x.shape)}")
    return x.reshape(x.shape[0], x.shape[1], -1)


@kernel("instance_norm")
def instance_norm(k):
    x = k.x("X")
    planes = _planes(x)
    mean, var = moments(planes, 2)
    inv = 1 / np.sqrt(var + k.attr("epsilon"))
    y = (planes - mean) * inv
    scale, bias = k.optional("Scale"), k.optional("Bias")
    y = y if scale is None else y * per_channel(scale, y)
    y = y if bias is None else y + per_channel(bias, y)
    return {"Y": y.reshape(x.shape), "SavedMean": mean.reshape(-1), "SavedVariance": inv.reshape(-1)}


@kernel("instance_norm_grad")
def instance_norm_grad(k):
    x, scale = k.x("X"), k.optional("Scale")
    planes, dy = _planes(x), _planes(k.x("Y@GRAD"))
    inv = k.x("SavedVariance").reshape(*planes.shape[:2], 1)
    xhat = (planes - k.x("SavedMean").reshape(inv.shape)) * inv

    def dx():
        g = dy if scale is None else dy * per_channel(scale, dy)
        return norm_grad(xhat, g, inv, 2).reshape(x.shape)

    return k.grads({"X@GRAD": dx, "Scale@GRAD": lambda: (dy * xhat).sum(axis=(0, 2)),
                    "Bias@GRAD": lambda: dy.sum(axis=(0, 2))})


# ---------------------------------------------------------------- spectral_norm
def _normalised(a, eps):
    """(a / (|a| + eps), |a|)."""
    norm = np.sqrt((a * a).sum())
    return a / (norm + eps), norm


def _normalised_grad(a, norm, eps, d):
    """The vector-Jacobian product of a -> a / (|a| + eps) with d."""
    grad = d / (norm + eps)
    return grad if norm == 0 else grad - a * (a @ d) / ((norm + eps) ** 2 * norm)


def _spectral(k):
    """(Weight as a [dim, rest] matrix, dim, the power iteration's steps, u, v): each step holds the
    unnormalised v and u it made and their norms."""
    weight, dim, eps = k.x("Weight"), k.attr("dim"), k.attr("eps")
    rows, cols = ops.spectral_sizes(list(weight.shape), dim)
    u, v = k.x("U").reshape(-1), k.x("V").reshape(-1)
    if u.size != rows or v.size != cols:
        raise ValueError(f"U and V must have {rows} and {cols} values for Weight {list(weight.shape)}, dim {dim}")
    matrix = np.moveaxis(weight, dim, 0).reshape(rows, cols)
    steps = []
    for _ in range(k.attr("power_iters")):
        raw_v = matrix.T @ u
        v_next, v_norm = _normalised(raw_v, eps)
        raw_u = matrix @ v_next
        u_next, u_norm = _normalised(raw_u, eps)
        steps.append((u, raw_v, v_norm, v_next, raw_u, u_norm))
        u, v = u_next, v_next
    return matrix, dim, steps, u, v


def _as_weight(matrix, like, dim):
    return np.moveaxis(matrix.reshape(np.moveaxis(like, dim, 0).shape), 0, dim)


@kernel("spectral_norm")
def spectral_norm(k):
    matrix, dim, _, u, v = _spectral(k)
    return {"Out": _as_weight(matrix / (u @ matrix @ v), k.x("Weight"), dim)}


@kernel("spectral_norm_grad")
def spectral_norm_grad(k):
    """Out = W / sigma, sigma = u^T W v after the power iteration from U and V: the derivative through the
    iteration too (Paddle's is another formula; holding u and v fixed is exact only once they converged)."""
    matrix, dim, steps, u, v = _spectral(k)
    eps, sigma = k.attr("eps"), u @ matrix @ v
    dout = np.moveaxis(k.x("Out@GRAD"), dim, 0).reshape(matrix.shape)
    dsigma = -(dout * matrix).sum() / sigma ** 2
    dmatrix = dout / sigma + dsigma * np.outer(u, v)
    du, dv = dsigma * (matrix @ v), dsigma * (matrix.T @ u)
    for u_prev, raw_v, v_norm, v_next, raw_u, u_norm in reversed(steps):
        draw_u = _normalised_grad(raw_u, u_norm, eps, du)          # u = normalised(W v)
        dmatrix += np.outer(draw_u, v_next)
        draw_v = _normalised_grad(raw_v, v_norm, eps, dv + matrix.T @ draw_u)   # v = normalised(W^T u_prev)
        dmatrix += np.outer(u_prev, draw_v)
        du, dv = matrix @ draw_v, np.zeros_like(dv)
    return {"Weight@GRAD": _as_weight(dmatrix, k.x("Weight"), dim)}


# ---------------------------------------------------------------- lrn
def _channels_first(k, a):
    if a.ndim != 4:
        raise ValueError(f"X must be 4-D, got shape {list(a.shape)}")
    return np.moveaxis(a, -1, 1) if k.attr("data_format") == "NHWC" else a


def _channels_back(k, a):
    return np.moveaxis(a, 1, -1) if k.attr("data_format") == "NHWC" else a


def _window_sums(a, n: int):
    """Per channel c, the sum of a over channels [c - (n-1)/2, c + (n-1)/2] that exist."""
    before = (n - 1) // 2
    padded = np.pad(a, [(0, 0), (before + 1, n - 1 - before), (0, 0), (0, 0)])
    totals = np.cumsum(padded, axis=1)
    return totals[:, n:] - totals[:, :-n]


@kernel("lrn")
def lrn(k):
    x = _channels_first(k, k.x("X"))
    mid = k.attr("k") + k.attr("alpha") * _window_sums(x * x, k.attr("n"))
    return {"Out": _channels_back(k, x * mid ** -k.attr("beta")), "MidOut": _channels_back(k, mid)}


@kernel("lrn_grad")
def lrn_grad(k):
    x, out, mid, dout = (_channels_first(k, k.x(slot)) for slot in ("X", "Out", "MidOut", "Out@GRAD"))
    alpha, beta = k.attr("alpha"), k.attr("beta")
    # dOut_j/dx_i = [i == j] mid_i^-beta - 2 alpha beta x_i Out_j / mid_j for every j whose window holds i
    dx = dout * mid ** -beta - 2 * alpha * beta * x * _window_sums(dout * out / mid, k.attr("n"))
    return {"X@GRAD": _channels_back(k, dx)}
