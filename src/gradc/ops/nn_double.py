"""Second derivatives of the network ops: convolutions, pooling, batch and layer norm, dropout and softmax
with cross entropy, composite (gradc.ops.composite) so third derivatives follow.

The norms' grad ops read the statistics the forward saved; their makers recompute the statistics from X
(an expansion), so the second derivative includes how the statistics move with X, and the saved ones are
no-grad inputs.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from . import conv, loss, nn, pool  # noqa: F401  (register the grad ops given makers here)
from .activation_double import unary_double
from .composite import Formula, bilinear, expansion, first, linear
from .conv import CONV_OPS, CONV_TRANSPOSE_OPS, POOL_OPS

for _name in (*CONV_OPS, *CONV_TRANSPOSE_OPS):
    defgrad(f"{_name}_grad", grad=bilinear(_name, "Input", "Filter", "Output"))

unary_double("dropout_grad", flat=("Mask",))   # dOut times the mask: linear, the same mask


def _pool(forward: str):
    """pool_grad is linear in dOut: average pooling spreads it (so d/d(dOut) pools ddX the same way), max
    pooling sends it to each window's first maximum (so d/d(dOut) picks ddX there, found by the with-index
    op; 2-D, NCHW, explicit symmetric paddings)."""
    averaged = linear(forward)

    def maker(g):
        if g.attr("pooling_type") != "max":
            return averaged(g)
        wanted = first(g.IG("Out@GRAD"))
        if wanted == EMPTY_VAR:
            return []
        paddings = list(g.attr("paddings"))
        if forward != "pool2d" or g.attr("data_format") == "NHWC" or g.attr("padding_algorithm") != "EXPLICIT" \
                or (len(paddings) == 4 and (paddings[0] != paddings[1] or paddings[2] != paddings[3])):
            raise GradError(f"{forward}_grad: gradc differentiates max pooling's grad only in 2-D, NCHW, with "
                            f"explicit symmetric paddings (got {g.attr('data_format')}, "
                            f"{g.attr('padding_algorithm')}, paddings {paddings})")
        f = Formula(g)
        x, dout = first(g.I("X")), first(g.I("Out@GRAD"))
        attrs = {name: g.attr(name) for name in ("ksize", "strides", "global_pooling", "adaptive", "ceil_mode")}
        mask = f.op("max_pool2d_with_index", {"X": x}, dout, {**attrs, "paddings": paddings[::2] if len(paddings) == 4
                                                               else paddings}, slot="Mask",
                    more={"Out": g.tmp(dout)}, dtype=VarType.INT32)
        return _picked(f, g, mask, wanted)

    return maker


def _picked(f, g, mask: str, wanted: str, x_slot: str = "X", out_slot: str = "Out") -> list:
    """ddX at each window's maximum (``mask``: its position in the plane), into ``wanted``: reshape both to
    [N, C, cells] planes, take_along_axis, reshape to dOut's shape."""
    x, dout, ddx = first(g.I(x_slot)), first(g.I(out_slot + "@GRAD")), first(g.OG(x_slot + "@GRAD"))
    planes = [f.op("reshape2", {"X": v}, like, {"shape": [0, 0, -1]}, more={"XShape": f.xshape(like)},
                   dims=lambda s: s[:2] + [-1]) for v, like in ((ddx, x), (mask, mask))]
    picked = f.op("take_along_axis", {"Input": planes[0], "Index": planes[1]}, dout, {"Axis": 2},
                  slot="Result", dims=lambda s: s[:2] + [-1])
    shape = f.op("shape", {"Input": dout}, dout, dims=lambda s: [len(s)], dtype=VarType.INT32)
    f.emit("reshape2", {"X": picked, "Shape": shape}, {"Out": wanted, "XShape": f.xshape(picked)})
    return f.ops


def _with_index(x: str = "X", out: str = "Out", mask: str = "Mask"):
    """max_pool{2,3}d_with_index_grad and fractional_max_pool{2,3}d_grad send dOut to the mask's positions (in
    the plane or volume): d/d(dOut) picks ddX there."""

    def maker(g):
        wanted = first(g.IG(out + "@GRAD"))
        return [] if wanted == EMPTY_VAR else _picked(Formula(g), g, first(g.I(mask)), wanted, x, out)

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


@expansion
def _batch_norm_grad(f, g):
    """dBias = sum(dy), dScale = sum(dy xhat), dX = inv (dy scale - mean(dy scale) - xhat mean(dy scale xhat))
    over all but the channel axis, with the batch's mean and inv = 1/sqrt(var + eps) recomputed from X; in the
    global-statistics modes the running ones are constants and dX = dy scale inv."""
    x, dy, scale = first(g.I("X")), first(g.I("Y@GRAD")), first(g.I("Scale"))
    stats = first(g.I("SavedMean"))
    c, axes = _channels(g, x)
    global_stats = (g.attr("is_test") and not g.attr("trainable_statistics")) or g.attr("use_global_stats")
    if global_stats:
        mean, var = first(g.I("MeanOut")), first(g.I("VarianceOut"))
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


defgrad("batch_norm_grad", grad=_batch_norm_grad,
        no_grad_inputs=["MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace"])


def _flat_rows(f, g, value: str, like: str) -> str:
    """``value`` (shaped like X) as layer_norm sees it: its dims from begin_norm_axis folded into one."""
    axis, rank = g.attr("begin_norm_axis"), len(g.shape(like))
    if axis == rank - 1:
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
        if x2 != x:   # back to X's shape: the row dims as they are, the rest as X has them
            dx = f.op("reshape2", {"X": dx}, x, {"shape": [0] * axis + g.shape(x)[axis:]},
                      more={"XShape": f.xshape(x2)})
        grads["X@GRAD"] = dx
    return grads


defgrad("layer_norm_grad", grad=_layer_norm_grad, no_grad_inputs=["Mean", "Variance"])


def _softmax_cross_entropy(g):
    """The grad op G = (softmax sum(target) - target) dLoss along the class axis (-target / softmax dLoss
    without use_softmax), 0 where the label is ignored. Linear in dLoss: d/d(dLoss) = sum(ddLogits G(dLoss = 1));
    affine in softmax: d/d(softmax) = G(softmax = ddLogits) - G(softmax = 0) (-G ddLogits / softmax without)."""
    f = Formula(g)
    label, softmax, dloss = first(g.I("Label")), first(g.I("Softmax")), first(g.I("Loss@GRAD"))
    dd = first(g.OG("Logits@GRAD"))

    def grad(probabilities, loss_grad):
        return f.op(g.fwd.type, {"Label": label, "Softmax": probabilities, "Loss@GRAD": loss_grad}, softmax,
                    slot="Logits@GRAD", same=True)

    wanted = first(g.IG("Loss@GRAD"))
    if wanted != EMPTY_VAR:
        f.into(wanted, "reduce_sum", {"X": f.mul(dd, grad(softmax, f.fill_like(dloss, 1.0)), softmax)},
               {"dim": [g.attr("axis")], "keep_dim": True, "reduce_all": False})
    wanted = first(g.IG("Softmax"))
    if wanted != EMPTY_VAR and g.attr("use_softmax"):
        f.into(wanted, "elementwise_sub", {"X": grad(dd, dloss), "Y": grad(f.fill_like(softmax, 0.0), dloss)})
    elif wanted != EMPTY_VAR:
        f.into(wanted, "scale", {"X": f.div(f.mul(grad(softmax, dloss), dd, softmax), softmax, softmax)},
               {"scale": -1.0})
    return f.ops


defgrad("softmax_with_cross_entropy_grad", grad=_softmax_cross_entropy, no_grad_inputs=["Label"])
