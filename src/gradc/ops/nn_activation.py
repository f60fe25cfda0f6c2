"""Activations that are more than one function of each element: prelu (learned slopes for the whole
tensor, per channel or per element), maxout (the max over groups of channels), the random ones,
rrelu (random negative slopes while training) and gumbel_softmax (a softmax of logits plus Gumbel noise), and
fused_softmax_mask (attention's softmax of scores plus a mask, paddle.incubate.softmax_mask_fuse) and
fused_softmax_mask_upper_triangle (a causal attention's softmax: each row of scores sees only the columns up to its
own, paddle.incubate.softmax_mask_fuse_upper_triangle, which Paddle 3.3.1 runs on GPU only).

Paddle's gumbel_softmax_grad leaves out the 1/temperature factor of the softmax's derivative; gradc's
gradient has it (docs/ops-activation-math.md).
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defop, grad_op
from ..shapes import dims_match, numel
from .composite import Formula, first
from .infer import same_as

PRELU_LAYOUTS = ("NCHW", "NHWC")   # channel mode: the channel is dim 1 or the last dim, at any rank >= 2


def _prelu_infer(ctx):
    x, alpha = ctx.shape("X"), ctx.shape("Alpha")
    mode, layout = ctx.attr("mode"), ctx.attr("data_format")
    if mode == "all":
        if not dims_match(numel(alpha), 1):
            ctx.fail(f"mode 'all' takes one slope, but Alpha has shape {alpha}")
    elif mode == "channel":
        if len(x) < 2:
            ctx.fail(f"mode 'channel' needs X of rank >= 2, got rank {len(x)}")
        if layout not in PRELU_LAYOUTS:
            ctx.fail(f"mode 'channel' takes data_format NCHW or NHWC, got {layout!r}")
        channels = x[1] if layout == "NCHW" else x[-1]
        if not dims_match(numel(alpha), channels):
            ctx.fail(f"mode 'channel' takes one slope per channel ({channels}), but Alpha has shape {alpha}")
    elif mode == "element":
        if not x or len(alpha) != len(x):
            ctx.fail(f"mode 'element' needs Alpha of X's rank (>= 1), got Alpha {alpha} for X {x}")
        if not dims_match(numel(alpha[1:]), numel(x[1:])):
            ctx.fail(f"mode 'element' takes one slope per element of a sample ({x[1:]}), but Alpha has shape {alpha}")
    else:
        ctx.fail(f"unknown mode {mode!r}: it must be 'all', 'channel' or 'element'")
    return {"Out": (x, ctx.dtype("X"))}


# Out = x for x > 0, alpha x otherwise; Alpha is a parameter and gets its gradient too
defop("prelu", ["X", "Alpha"], attrs={"mode": "all", "data_format": "NCHW"}, infer=_prelu_infer,
      grad=grad_op("X", "Alpha"))

MAXOUT_AXES = (1, -1, 3)   # NCHW (1) or NHWC (-1 or 3): Paddle's only layouts


def _maxout_infer(ctx):
    x, groups, axis = ctx.shape("X"), ctx.attr("groups"), ctx.attr("axis")
    if len(x) != 4:
        ctx.fail(f"maxout takes a 4-D X, got rank {len(x)}")
    if axis not in MAXOUT_AXES:
        ctx.fail(f"axis {axis} is not supported: it must be 1 (NCHW), 3 or -1 (NHWC)")
    if groups < 2:
        ctx.fail(f"attribute groups={groups} is out of range: it must be at least 2")
    channels = x[axis]
    if channels >= 0 and channels % groups:
        ctx.fail(f"the {channels} channels of X (axis {axis}) do not split into groups of {groups}")
    out = list(x)
    out[axis] = channels // groups if channels >= 0 else -1
    return {"Out": (out, ctx.dtype("X"))}


# Out holds the max of each run of `groups` adjacent channels; the first maximum gets the gradient
defop("maxout", ["X"], attrs={"groups": 0, "axis": 1}, infer=_maxout_infer, grad=grad_op("X", "Out"))


def _rrelu_infer(ctx):
    lower, upper = ctx.attr("lower"), ctx.attr("upper")
    if not 0 <= lower <= 1 or not 0 <= upper <= 1:
        ctx.fail(f"lower={lower} and upper={upper} must lie in [0, 1]")
    if upper < lower:
        ctx.fail(f"upper={upper} is below lower={lower}")
    shape, dtype = ctx.shape("X"), ctx.dtype("X")
    return {"Out": (shape, dtype), "Noise": (shape, dtype)}


# Out = x * Noise: Noise is 1 for x >= 0 and the slope for x < 0, uniform in [lower, upper] while
# training, their mean in test mode. Paddle requires the Noise output (an extra, intermediate slot).
defop("rrelu", ["X"], ["Out", "Noise!"], attrs={"lower": 0.125, "upper": 1 / 3, "is_test": False},
      infer=_rrelu_infer, no_grad_outputs=["Noise"], grad=grad_op("X", "Noise"))


def _gumbel_softmax_infer(ctx):
    ctx.axis(ctx.attr("axis"), len(ctx.shape("X")))
    if not ctx.attr("temperature") > 0:
        ctx.fail(f"attribute temperature={ctx.attr('temperature')} is out of range: it must be > 0")
    return same_as("X")(ctx)


# Out = softmax((x + g) / temperature) with Gumbel noise g; with `hard`, the one-hot of its argmax
defop("gumbel_softmax", ["X"], attrs={"temperature": 1.0, "hard": False, "axis": -1}, infer=_gumbel_softmax_infer,
      grad=grad_op("Out"))


def _softmax_mask_infer(ctx):
    x, mask = ctx.shape("X"), ctx.shape("Mask")
    if len(x) != 4 or len(mask) != 4:
        ctx.fail(f"X and Mask must be 4-D ([batch, heads, rows, cols] and [batch, 1, rows, cols]), got {x} and {mask}")
    if not dims_match(mask[1], 1) or not all(dims_match(x[i], mask[i]) for i in (0, 2, 3)):
        ctx.fail(f"Mask must be shaped [batch, 1, rows, cols] for X {x}, got {mask}")
    return same_as("X")(ctx)


def _softmax_mask_grad(g):
    """X@GRAD = Out (dOut - sum(dOut Out)) along the last axis (Paddle's fused_softmax_mask_grad). Mask is added to
    X, so its grad is X's summed over the heads; Paddle gives Mask none."""
    f = Formula(g)
    dx, dmask = first(g.IG("X")), first(g.IG("Mask"))
    if dmask != EMPTY_VAR and dx == EMPTY_VAR:
        dx = g.tmp(first(g.I("X")))
    f.into(dx, "fused_softmax_mask_grad", {"Softmax": g.O("Out"), "Out@GRAD": g.OG("Out")}, slot="X@GRAD")
    f.into(dmask, "reduce_sum", {"X": dx}, {"dim": [1], "keep_dim": True, "reduce_all": False})
    return f.ops


# Out = softmax(X + Mask) along the last axis, Mask broadcast over the heads (dim 1)
defop("fused_softmax_mask", ["X", "Mask"], infer=_softmax_mask_infer, grad=_softmax_mask_grad)


def _upper_triangle_infer(ctx):
    x = ctx.shape("X")
    if len(x) != 4 or not dims_match(x[2], x[3]):
        ctx.fail(f"X must be 4-D with as many rows as columns ([batch, heads, rows, rows]), got {x}")
    return same_as("X")(ctx)


def _upper_triangle_grad(g):
    """X@GRAD = Out (dOut - sum(dOut Out)) along the last axis, zero where Out is (the masked columns)."""
    f = Formula(g)
    f.into(first(g.IG("X")), "fused_softmax_mask_upper_triangle_grad", {"Out": g.O("Out"), "Out@GRAD": g.OG("Out")},
           slot="X@GRAD")
    return f.ops


# Out[..., i, :] = softmax of X[..., i, :i + 1], zeros after it (the CUDA kernel's causal mask)
defop("fused_softmax_mask_upper_triangle", ["X"], infer=_upper_triangle_infer, grad=_upper_triangle_grad)
