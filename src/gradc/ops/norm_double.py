"""Second derivatives of the norms without a running statistic: group and instance norm, p_norm, renorm,
squared_l2_norm and lrn, composite (gradc.ops.composite) so third derivatives follow.

As batch and layer norm's makers (nn_double), the grad op's arithmetic is written again with differentiable ops
from X (``expansion``), so the statistics the forward saved (Mean, Variance, MidOut, Out) are constants.
"""

from __future__ import annotations

from math import isinf

from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from . import clip, nn, norm, reduce  # noqa: F401  (register the grad ops given makers here)
from .composite import differentiate, expansion, first
from .loss_double import reducing


def _channels_first(f, g, value: str, channel_last: bool) -> str:
    """``value`` with its last dim moved to dim 1 (NHWC to NCHW) when ``channel_last``."""
    if not channel_last:
        return value
    rank = len(g.shape(value))
    perm = [0, rank - 1, *range(1, rank - 1)]
    return f.op("transpose2", {"X": value}, value, {"axis": perm}, more={"XShape": f.xshape(value)},
                dims=lambda s: [s[i] for i in perm])


def _channels_back(f, g, value: str, channel_last: bool) -> str:
    if not channel_last:
        return value
    rank = len(g.shape(value))
    perm = [0, *range(2, rank), 1]
    return f.op("transpose2", {"X": value}, value, {"axis": perm}, more={"XShape": f.xshape(value)},
                dims=lambda s: [s[i] for i in perm])


def _grouped_norm_grad(f, g, groups: int, channel_last: bool = False) -> dict:
    """Group norm's grad (instance norm's with a group per channel): X as [N, groups, rest] rows normalised,
    scaled and shifted per channel. dBias = sum(dy), dScale = sum(dy xhat) over all but the channel axis;
    dX = inv (dy scale - mean(dy scale) - xhat mean(dy scale xhat)) along each row, mean and inv from X."""
    x = _channels_first(f, g, first(g.I("X")), channel_last)
    dy = _channels_first(f, g, first(g.I("Y@GRAD")), channel_last)
    scale = first(g.I("Scale"))
    split = {"shape": [0, groups, -1]}

    def rows(value):
        return f.op("reshape2", {"X": value}, value, split, more={"XShape": f.xshape(value)},
                    dims=lambda s: [s[0], groups or s[1], -1])   # 0: the channels kept

    def row_mean(value):
        return f.op("reduce_mean", {"X": value}, value, {"dim": [2], "keep_dim": False, "reduce_all": False},
                    dims=lambda s: s[:2])

    x_rows = rows(x)
    centred = f.sub(x_rows, row_mean(x_rows), x_rows, 0)
    inv = f.unary("rsqrt", f.scale(row_mean(f.unary("square", centred)), 1.0, g.attr("epsilon")))
    xhat_rows = f.mul(centred, inv, x_rows, 0)
    xhat = f.shaped_like(xhat_rows, x)
    others = [0, *range(2, len(g.shape(x)))]
    grads = {}
    if g.O("Bias@GRAD"):
        grads["Bias@GRAD"] = f.reduce("reduce_sum", dy, others, first(g.O("Bias@GRAD")))
    if g.O("Scale@GRAD"):
        grads["Scale@GRAD"] = f.reduce("reduce_sum", f.mul(dy, xhat, x), others, first(g.O("Scale@GRAD")))
    if g.O("X@GRAD"):
        scaled = rows(f.mul(dy, scale, x, 1) if scale else dy)
        spread = f.mul(xhat_rows, row_mean(f.mul(scaled, xhat_rows, x_rows)), x_rows, 0)
        centred_grad = f.sub(scaled, row_mean(scaled), x_rows, 0)
        dx = f.shaped_like(f.mul(f.sub(centred_grad, spread, x_rows), inv, x_rows, 0), x)
        grads["X@GRAD"] = _channels_back(f, g, dx, channel_last)
    return grads


@expansion
def _group_norm_grad(f, g):
    return _grouped_norm_grad(f, g, g.attr("groups"), g.attr("data_layout") == "NHWC")


@expansion
def _instance_norm_grad(f, g):
    return _grouped_norm_grad(f, g, 0)   # reshape2's 0 keeps the channels: a row per (sample, channel)


defgrad("group_norm_grad", grad=_group_norm_grad, no_grad_inputs=["Bias", "Y", "Mean", "Variance"])
defgrad("instance_norm_grad", grad=_instance_norm_grad, no_grad_inputs=["Bias", "SavedMean", "SavedVariance"])


@expansion
def _p_norm_grad(f, g):
    """X@GRAD = dOut sign(x) |x|^(p-1) / (norm^(p-1) + eps), the norm recomputed from X with its dims kept."""
    x, dout, p = first(g.I("X")), first(g.I("Out@GRAD")), g.attr("porder")
    norm_kept = f.op("p_norm", {"X": x}, x, {"keepdim": True}, same=True,
                     dims=lambda s: [1] * len(s) if g.attr("asvector") else
                     [1 if i == g.attr("axis") % len(s) else d for i, d in enumerate(s)])
    denominator = f.scale(f.unary("pow", norm_kept, {"factor": p - 1.0}), 1.0, g.attr("epsilon"))
    slope = f.mul(f.unary("sign", x), f.unary("pow", f.unary("abs", x), {"factor": p - 1.0}), x)
    return {"X@GRAD": f.div(f.mul(slope, f.shaped_like(dout, norm_kept), x), denominator, x)}


def _p_norm_axis(g, rank):
    return None if g.attr("asvector") else [g.attr("axis") % rank]


_p_norm_flat = reducing("Out@GRAD", _p_norm_axis)   # p = 0 and +-inf: piecewise constant in X


def _p_norm(g):
    p = g.attr("porder")
    return (_p_norm_flat if p == 0 or isinf(p) else _p_norm_grad)(g)


defgrad("p_norm_grad", grad=_p_norm, no_grad_inputs=["Out"])


@expansion
def _renorm_grad(f, g):
    """X@GRAD = scale dOut + W c sign(x) |x|^(p-1) per slice along axis: N its p-norm, M = max(N, max_norm),
    scale = max_norm / M, W = sum(x dOut), c = -max_norm M^(-1-p) where N > max_norm (a constant mask), else 0."""
    x, dout, p, max_norm = first(g.I("X")), first(g.I("Out@GRAD")), g.attr("p"), g.attr("max_norm")
    rank = len(g.shape(x))
    others = [i for i in range(rank) if i != g.attr("axis") % rank]

    def over_slice(value):
        return value if not others else f.op("reduce_sum", {"X": value}, value,
                                             {"dim": others, "keep_dim": True, "reduce_all": False},
                                             dims=lambda s: [1 if i in others else d for i, d in enumerate(s)])

    magnitude = f.unary("abs", x)
    norms = f.unary("pow", over_slice(f.unary("pow", magnitude, {"factor": p})), {"factor": 1.0 / p})
    limit = f.fill_like(norms, max_norm)
    capped = f.op("elementwise_max", {"X": norms, "Y": limit}, norms)
    over = f.op("greater_than", {"X": norms, "Y": limit}, norms, dtype=VarType.BOOL)
    mask = f.op("cast", {"X": over}, norms, {"in_dtype": int(VarType.BOOL), "out_dtype": int(g.block.var(x).dtype)})
    coefficient = f.scale(f.mul(mask, f.unary("pow", capped, {"factor": -1.0 - p}), norms), -max_norm)
    weight = f.mul(coefficient, over_slice(f.mul(x, dout, x)), norms)
    direction = f.mul(f.unary("sign", x), f.unary("pow", magnitude, {"factor": p - 1.0}), x)
    return {"X@GRAD": f.add(f.mul(f.div(limit, capped, norms), dout, x), f.mul(weight, direction, x), x)}


defgrad("renorm_grad", grad=_renorm_grad)


def _squared_l2_x(f, g, unit, ddx):
    """X@GRAD = 2 x dOut: d/dX = 2 ddX dOut, the grad op with X = ddX."""
    wanted = first(g.IG("X"))
    if wanted != EMPTY_VAR:
        f.into(wanted, g.fwd.type, {"X": ddx, "Out@GRAD": first(g.I("Out@GRAD"))}, slot="X@GRAD")


defgrad("squared_l2_norm_grad", grad=reducing("Out@GRAD", lambda g, rank: None, _squared_l2_x))


def _window_sums(f, g, value: str) -> str:
    """Per channel, the sum of ``value`` (channels first) over the n channels around it: an average pool of
    [N, 1, C, H W] over n x 1 windows with zero padding counted, times n."""
    n, channels = g.attr("n"), g.shape(value)[1]
    column = f.op("reshape2", {"X": value}, value, {"shape": [0, 1, channels, -1]}, more={"XShape": f.xshape(value)},
                  dims=lambda s: [s[0], 1, channels, -1])
    pooled = f.op("pool2d", {"X": column}, column, {"pooling_type": "avg", "ksize": [n, 1], "strides": [1, 1],
                                                    "paddings": [(n - 1) // 2, 0], "exclusive": False})
    return f.shaped_like(f.scale(pooled, float(n)), value)


@expansion
def _lrn_grad(f, g):
    """mid = k + alpha W(x^2), W the window sums (symmetric): X@GRAD = dOut mid^-beta
    - 2 alpha beta x W(dOut out / mid), with mid and out recomputed from X."""
    channel_last = g.attr("data_format") == "NHWC"
    x = _channels_first(f, g, first(g.I("X")), channel_last)
    dout = _channels_first(f, g, first(g.I("Out@GRAD")), channel_last)
    alpha, beta = g.attr("alpha"), g.attr("beta")
    mid = f.scale(_window_sums(f, g, f.unary("square", x)), alpha, g.attr("k"))
    damping = f.unary("pow", mid, {"factor": -beta})
    out = f.mul(x, damping, x)
    spread = f.mul(x, _window_sums(f, g, f.div(f.mul(dout, out, x), mid, x)), x)
    dx = f.sub(f.mul(dout, damping, x), f.scale(spread, 2 * alpha * beta), x)
    return {"X@GRAD": _channels_back(f, g, dx, channel_last)}


defgrad("lrn_grad", grad=_lrn_grad, no_grad_inputs=["Out", "MidOut"])


def _spectral_out(f, g) -> str:
    """spectral_norm's Out written with differentiable ops: Weight as a [dim, rest] matrix, power_iters rounds
    v = normalised(W^T u), u = normalised(W v) from U and V, Out = Weight / (u^T W v)."""
    weight, dim, eps = first(g.I("Weight")), g.attr("dim"), g.attr("eps")
    shape = g.shape(weight)
    matrix = weight
    if dim != 0:
        perm = [dim, *(i for i in range(len(shape)) if i != dim)]
        matrix = f.op("transpose2", {"X": weight}, weight, {"axis": perm}, more={"XShape": f.xshape(weight)},
                      dims=lambda s: [s[i] for i in perm])
    matrix = f.op("reshape2", {"X": matrix}, weight, {"shape": [shape[dim], -1]}, more={"XShape": f.xshape(matrix)},
                  dims=lambda s: [shape[dim], -1])

    def column(vector):
        return f.op("reshape2", {"X": vector}, vector, {"shape": [-1, 1]}, more={"XShape": f.xshape(vector)},
                    dims=lambda s: [-1, 1])

    def total(value):
        return f.op("reduce_sum", {"X": value}, value, {"dim": [0], "keep_dim": False, "reduce_all": True},
                    dims=lambda s: [])

    def normalised(value):
        return f.div(value, f.scale(f.unary("sqrt", total(f.unary("square", value))), 1.0, eps), value)

    def times(vector, transposed=False):
        return f.op("matmul_v2", {"X": matrix, "Y": vector}, vector, {"trans_x": transposed, "trans_y": False},
                    dims=lambda s: [-1, 1])

    u, v = column(first(g.I("U"))), column(first(g.I("V")))
    for _ in range(g.attr("power_iters")):
        v = normalised(times(u, transposed=True))
        u = normalised(times(v))
    sigma = total(f.mul(u, times(v), u))
    return f.div(weight, sigma, weight)


@expansion
def _spectral_norm_grad(f, g):
    """The grad op differentiates Out through the power iteration: its Weight@GRAD is the backward of Out written
    with differentiable ops (``differentiate``), so the maker differentiates that backward again."""
    out = _spectral_out(f, g)
    grad = g.tmp(first(g.I("Weight")))
    f.ops.extend(differentiate(g, list(f.ops), {out: first(g.I("Out@GRAD"))}, {first(g.I("Weight")): grad}))
    return {"Weight@GRAD": grad}


defgrad("spectral_norm_grad", grad=_spectral_norm_grad, no_grad_inputs=["U", "V"])
