"""Second derivatives of the network ops: convolutions, pooling, batch and layer norm, dropout and softmax
with cross entropy, composite (gradc.ops.composite) so third derivatives follow.

The norms' grad ops read the statistics the forward saved; their makers recompute the statistics from X
(an expansion), so the second derivative includes how the statistics move with X, and the saved ones are
no-grad inputs.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from . import conv, loss, nn, pool  # noqa: F401  (register the grad ops given makers here)
from .activation_double import unary_double
from .composite import Formula, bilinear, expansion, first, linear
from .conv import CONV_OPS, CONV_TRANSPOSE_OPS, POOL_OPS, channel_last, pool_geometry

for _name in (*CONV_OPS, *CONV_TRANSPOSE_OPS):
    defgrad(f"{_name}_grad", grad=bilinear(_name, "Input", "Filter", "Output"))


unary_double("dropout_grad", flat=("Mask",))   # dOut times the mask: linear, the same mask


def _pool(forward: str):
    """pool_grad is linear in dOut: average pooling spreads it (so d/d(dOut) pools ddX the same way), max
    pooling sends it to each window's first maximum (so d/d(dOut) picks ddX there, found by the with-index
    op on X channels first, padded with -inf where its paddings are not symmetric explicit ones)."""
    averaged, dims = linear(forward), POOL_OPS[forward]

    def maker(g):
        if g.attr("pooling_type") != "max":
            return averaged(g)
        wanted = first(g.IG("Out@GRAD"))
        if wanted == EMPTY_VAR:
            return []
        f = Formula(g)
        x, ddx, dout = first(g.I("X")), first(g.OG("X@GRAD")), first(g.I("Out@GRAD"))
        last = channel_last(g.attr("data_format"))
        to_first = [0, dims + 1, *range(1, dims + 1)] if last else None
        if last:  # ddX is not declared yet: its temporaries are declared like X's
            x, ddx = (_transposed(f, v, x, to_first) for v in (x, ddx))
        attrs = {name: g.attr(name) for name in ("ksize", "strides", "global_pooling", "adaptive", "ceil_mode")}
        pads = _pads(g.shape(x)[2:], {**attrs, "paddings": list(g.attr("paddings")),
                                      "padding_algorithm": g.attr("padding_algorithm")})
        if pads is None:   # SAME over sizes known at run time only
            x, ddx = _same_padded(f, x, ddx, dims, attrs)
            pads = [0] * 2 * dims
        elif pads[::2] != pads[1::2]:
            edges = {"paddings": [0] * 4 + pads}
            x = f.op("pad", {"X": x}, x, {**edges, "pad_value": float("-inf")}, dims=_padded(pads))
            ddx = f.op("pad", {"X": ddx}, x, {**edges, "pad_value": 0.0})
            pads = [0] * 2 * dims
        mask = f.op(f"max_pool{dims}d_with_index", {"X": x}, dout, {**attrs, "paddings": pads[::2]}, slot="Mask",
                    more={"Out": g.tmp(dout, _moved(to_first))}, dims=_moved(to_first), dtype=VarType.INT32)
        if not last:
            return _picked(f, ddx, x, mask, dout, wanted)
        picked = _picked(f, ddx, x, mask, g.tmp(dout, _moved(to_first)), None)
        back = [0, *range(2, dims + 2), 1]
        f.emit("transpose2", {"X": picked}, {"Out": wanted, "XShape": f.xshape(picked)}, {"axis": back})
        return f.ops

    return maker


def _pads(sizes: list[int], attrs: dict) -> list[int] | None:
    """The [before, after] paddings per spatial dim the forward pooled with; None for SAME over sizes known at run
    time only."""
    if attrs["padding_algorithm"] == "SAME" and not (attrs["global_pooling"] or attrs["adaptive"]) \
            and min(sizes) < 0:
        return None
    return pool_geometry(sizes, attrs)[1]


def _same_padded(f, x: str, ddx: str, dims: int, attrs: dict) -> tuple[str, str]:
    """x padded with -inf and ddX with zeros (channels first) by SAME's pads, computed at run time from x's spatial
    sizes n as the forward does: total max((ceil(n / s) - 1) s + k - n, 0), the odd one after (pad3d's Paddings)."""
    sizes = f.op("shape", {"Input": x}, x, dims=lambda s: [len(s)], dtype=VarType.INT32)

    def const(value: int) -> str:
        return f.op("fill_constant", {}, sizes, {"shape": [1], "value": float(value), "dtype": int(VarType.INT32)},
                    dims=lambda _: [1])

    pairs = []
    for i, (k, s) in enumerate(zip(attrs["ksize"], attrs["strides"])):
        n = f.slice(sizes, 0, 2 + i, 3 + i)
        out = f.op("elementwise_floordiv", {"X": f.scale(n, 1.0, s - 1), "Y": const(s)}, n)
        total = f.op("elementwise_max", {"X": f.sub(f.scale(out, s, k - s), n, n), "Y": const(0)}, n)
        before = f.op("elementwise_floordiv", {"X": total, "Y": const(2)}, n)
        pairs.append([before, f.sub(total, before, n)])
    order = [v for pair in reversed(pairs) for v in pair] + [const(0)] * (6 - 2 * dims)   # W, H (, D) first
    paddings = f.op("concat", {"X": order}, sizes, {"axis": 0}, dims=lambda _: [6])

    def padded(v: str, value: float) -> str:
        if dims == 2:
            v = f.op("unsqueeze2", {"X": v}, x, {"axes": [2]}, more={"XShape": f.xshape(x)},
                     dims=lambda s: [*s[:2], 1, *s[2:]])
        like = v if dims == 2 else x   # ddX itself is not declared yet
        v = f.op("pad3d", {"X": v, "Paddings": paddings}, like, {"mode": "constant", "value": value,
                                                                   "data_format": "NCDHW"},
                 dims=lambda s: s[:-dims] + [-1] * dims)
        if dims == 2:
            v = f.op("squeeze2", {"X": v}, x, {"axes": [2]}, more={"XShape": f.xshape(v)},
                     dims=lambda s: s[:2] + [-1] * dims)
        return v
    return padded(x, float("-inf")), padded(ddx, 0.0)


def _moved(perm: list[int] | None):
    return None if perm is None else (lambda s: [s[i] for i in perm])


def _padded(pads: list[int]):
    return lambda s: s[:2] + [d if d < 0 else d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(s[2:])]


def _transposed(f, v: str, like: str, perm: list[int]) -> str:
    return f.op("transpose2", {"X": v}, like, {"axis": perm}, more={"XShape": f.xshape(like)}, dims=_moved(perm))


def _picked(f, ddx: str, like: str, mask: str, out: str, wanted: str | None) -> list | str:
    """ddX (its temporaries declared like ``like``) at each window's maximum (``mask``: its position in the
    plane or volume, -1 for an empty window) in ``mask``'s shape, into ``wanted`` (the ops) or a new var declared
    like ``out`` (returned): take_along_axis from ddX's planes with a zero cell appended, which -1 picks."""
    planes = [f.op("reshape2", {"X": v}, v_like, {"shape": [0, 0, -1]}, more={"XShape": f.xshape(v_like)},
                   dims=lambda s: s[:2] + [-1]) for v, v_like in ((ddx, like), (mask, mask))]
    cells = f.op("pad", {"X": planes[0]}, planes[0], {"paddings": [0, 0, 0, 0, 0, 1], "pad_value": 0.0})
    picked = f.op("take_along_axis", {"Input": cells, "Index": planes[1]}, out, {"Axis": 2},
                  slot="Result", dims=lambda s: s[:2] + [-1])
    shape = f.op("shape", {"Input": mask}, mask, dims=lambda s: [len(s)], dtype=VarType.INT32)
    shaped = wanted or f.g.tmp(out)
    f.emit("reshape2", {"X": picked, "Shape": shape}, {"Out": shaped, "XShape": f.xshape(picked)})
    return f.ops if wanted else shaped


def _with_index(x: str = "X", out: str = "Out", mask: str = "Mask"):
    """max_pool{2,3}d_with_index_grad and fractional_max_pool{2,3}d_grad send dOut to the mask's positions (in
    the plane or volume): d/d(dOut) picks ddX there."""

    def maker(g):
        wanted = first(g.IG(out + "@GRAD"))
        return [] if wanted == EMPTY_VAR else _picked(Formula(g), first(g.OG(x + "@GRAD")), first(g.I(x)),
                                                      first(g.I(mask)), first(g.I(out + "@GRAD")), wanted)

    return maker


for _name in ("max_pool2d_with_index", "max_pool3d_with_index"):
    defgrad(f"{_name}_grad", grad=_with_index(), no_grad_inputs=["X", "Mask"])
for _name in ("fractional_max_pool2d", "fractional_max_pool3d"):
    defgrad(f"{_name}_grad", grad=_with_index("x", "out", "mask"), no_grad_inputs=["x", "mask"])


for _name in POOL_OPS:
    defgrad(f"{_name}_grad", grad=_pool(_name), no_grad_inputs=["X", "Out"])


def _channels(g, x: str) -> tuple[int, list[int]]:
    """batch_norm's channel axis and the axes it normalises over."""
    rank = len(g.shape(x))
    channel = rank - 1 if g.attr("data_layout") == "NHWC" else 1
    return channel, [i for i in range(rank) if i != channel]


def constant(f, x: str) -> str:
    """A copy of ``x`` that no later backward differentiates (stop_gradient): a value the grad op reads as a
    constant, such as a running statistic, whose own grad no maker would take."""
    copy = f.op("assign", {"X": x}, x)
    f.g.block.find_var(copy).stop_gradient = True
    return copy


def batch_norm_grad_formula(f, g) -> dict:
    """dBias = sum(dy), dScale = sum(dy xhat), dX = inv (dy scale - mean(dy scale) - xhat mean(dy scale xhat))
    over all but the channel axis, with the batch's mean and inv = 1/sqrt(var + eps) recomputed from X; in the
    global-statistics modes the running ones are constants and dX = dy scale inv."""
    x, dy, scale = first(g.I("X")), first(g.I("Y@GRAD")), first(g.I("Scale"))
    c, axes = _channels(g, x)
    global_stats = (g.attr("is_test") and not g.attr("trainable_statistics")) or g.attr("use_global_stats")
    # a per-channel var to declare sums like: Paddle's is_test forward leaves SavedMean's shape unset
    stats = first(g.I("MeanOut" if global_stats else "SavedMean"))
    if global_stats:
        mean, var = constant(f, first(g.I("MeanOut"))), constant(f, first(g.I("VarianceOut")))
    else:
        mean = f.reduce("reduce_mean", x, axes, stats)
        var = f.reduce("reduce_mean", f.unary("square", f.sub(x, mean, x, c)), axes, stats)
    inv = f.unary("rsqrt", f.scale(var, 1.0, g.attr("epsilon")))
    xhat = f.mul(f.sub(x, mean, x, c), inv, x, c)
    grads = {}
    if g.O("Bias@GRAD"):
        grads["Bias@GRAD"] = f.reduce("reduce_sum", dy, axes, stats)
    if g.O("Scale@GRAD"):
        grads["Scale@GRAD"] = f.reduce("reduce_sum", f.mul(dy, xhat, x), axes, stats)
    if g.O("X@GRAD"):
        scaled = f.mul(dy, scale, x, c) if scale else dy
        if global_stats:
            grads["X@GRAD"] = f.mul(scaled, inv, x, c)
        else:
            centred = f.sub(scaled, f.reduce("reduce_mean", scaled, axes, stats), x, c)
            spread = f.mul(xhat, f.reduce("reduce_mean", f.mul(scaled, xhat, x), axes, stats), x, c)
            grads["X@GRAD"] = f.mul(f.sub(centred, spread, x), inv, x, c)
    return grads


defgrad("batch_norm_grad", grad=expansion(batch_norm_grad_formula),
        no_grad_inputs=["MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace"])


def _flat_rows(f, g, value: str, like: str) -> str:
    """``value`` (shaped like X) as layer_norm sees it: its dims from begin_norm_axis folded into one (also where
    X's rank is not declared: a fold of its last dim alone changes nothing)."""
    axis, shape = g.attr("begin_norm_axis"), g.shape(like)
    if shape is not None and axis == len(shape) - 1:
        return value
    return f.op("flatten_contiguous_range", {"X": value}, like, {"start_axis": axis, "stop_axis": -1},
                more={"XShape": f.xshape(like)}, dims=lambda s: s[:axis] + [-1])


@expansion
def _layer_norm_grad(f, g):
    """Rows are the dims before begin_norm_axis: dBias and dScale sum dy and dy xhat over rows; dX = inv
    (dy scale - mean(dy scale) - xhat mean(dy scale xhat)) along each row, mean and inv recomputed from X."""
    x, dy, scale, stats = first(g.I("X")), first(g.I("Y@GRAD")), first(g.I("Scale")), first(g.I("Mean"))
    axis = g.attr("begin_norm_axis")
    x2, dy2 = _flat_rows(f, g, x, x), _flat_rows(f, g, dy, x)
    mean = f.reduce("reduce_mean", x2, [axis], stats)
    centred = f.sub(x2, mean, x2, 0)
    inv = f.unary("rsqrt", f.scale(f.reduce("reduce_mean", f.unary("square", centred), [axis], stats), 1.0,
                                   g.attr("epsilon")))
    xhat = f.mul(centred, inv, x2, 0)
    grads, rows = {}, list(range(axis))
    if g.O("Bias@GRAD"):
        grads["Bias@GRAD"] = f.reduce("reduce_sum", dy2, rows, first(g.I("Bias")))
    if g.O("Scale@GRAD"):
        grads["Scale@GRAD"] = f.reduce("reduce_sum", f.mul(dy2, xhat, x2), rows, scale)
    if g.O("X@GRAD"):
        scaled = f.mul(dy2, scale, x2) if scale else dy2
        spread = f.mul(xhat, f.reduce("reduce_mean", f.mul(scaled, xhat, x2), [axis], stats), x2, 0)
        centred_grad = f.sub(scaled, f.reduce("reduce_mean", scaled, [axis], stats), x2, 0)
        dx = f.mul(f.sub(centred_grad, spread, x2), inv, x2, 0)
        if x2 != x and g.shape(x) is None:   # back to X's shape, read at run time
            dx = f.shaped_like(dx, x)
        elif x2 != x:   # back to X's shape: the row dims as they are, the rest as X has them
            dx = f.op("reshape2", {"X": dx}, x, {"shape": [0] * axis + g.shape(x)[axis:]},
                      more={"XShape": f.xshape(x2)})
        grads["X@GRAD"] = dx
    return grads


defgrad("layer_norm_grad", grad=_layer_norm_grad, no_grad_inputs=["Mean", "Variance"])


def softmax_cross_entropy_again(g, sum_over_classes, use_softmax: bool = True):
    """The grad op G = (softmax sum(target) - target) dLoss along the class axis (-target / softmax dLoss
    without use_softmax), 0 where the label is ignored. Linear in dLoss: d/d(dLoss) = sum(ddLogits G(dLoss = 1)),
    the sum written by ``sum_over_classes(f, wanted, product)``; affine in softmax: d/d(softmax) = G(softmax =
    ddLogits) - G(softmax = 0) (-G ddLogits / softmax without)."""
    f = Formula(g)
    label, softmax, dloss = first(g.I("Label")), first(g.I("Softmax")), first(g.I("Loss@GRAD"))
    dd = first(g.OG("Logits@GRAD"))

    def grad(probabilities, loss_grad):
        return f.op(g.fwd.type, {"Label": label, "Softmax": probabilities, "Loss@GRAD": loss_grad}, softmax,
                    slot="Logits@GRAD", same=True)

    wanted = first(g.IG("Loss@GRAD"))
    if wanted != EMPTY_VAR:
        sum_over_classes(f, wanted, f.mul(dd, grad(softmax, f.fill_like(dloss, 1.0)), softmax))
    wanted = first(g.IG("Softmax"))
    if wanted != EMPTY_VAR and use_softmax:
        f.into(wanted, "elementwise_sub", {"X": grad(dd, dloss), "Y": grad(f.fill_like(softmax, 0.0), dloss)})
    elif wanted != EMPTY_VAR:
        f.into(wanted, "scale", {"X": f.div(f.mul(grad(softmax, dloss), dd, softmax), softmax, softmax)},
               {"scale": -1.0})
    return f.ops


def _softmax_cross_entropy(g):
    def along_axis(f, wanted, product):
        f.into(wanted, "reduce_sum", {"X": product}, {"dim": [g.attr("axis")], "keep_dim": True, "reduce_all": False})

    return softmax_cross_entropy_again(g, along_axis, g.attr("use_softmax"))


defgrad("softmax_with_cross_entropy_grad", grad=_softmax_cross_entropy, no_grad_inputs=["Label"])
