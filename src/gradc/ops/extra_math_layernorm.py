"""fused_bias_residual_layernorm (paddle.incubate.nn.functional.fused_layer_norm), its non-quantized path, as Paddle
3.3.1's CPU kernel computes it:

    h = x + residual_alpha residual + bias     residual_out = h
    out = (h - mean) variance norm_weight + norm_bias,    mean = mean(h),  variance = 1 / sqrt(var(h) + epsilon)

the statistics over the dims from begin_norm_axis on, one per row, float32 [rows] whatever x's dtype: ``variance``
holds the inverse standard deviation, not the variance. norm_weight and norm_bias are optional vectors of the
normalised size (missing: 1 and 0), bias is shaped like the normalised dims. With norm_weight or norm_bias, bias is
added only along with a residual (Paddle's kernel ignores it without one; its grad is zeros there); with neither,
out = h (no normalisation), bias added with or without a residual. Paddle writes residual_out only when normalising
with a residual and leaves it, and without norm_weight and norm_bias mean and variance too, unwritten; gradc writes
them all (residual_out = h, the statistics of h). begin_norm_axis runs from 0 to x's rank (Paddle takes no negative
one). The quantized path (quant_scale > 0, an int8 out) is refused, as Paddle 3.3.1's CPU kernel refuses it.

Paddle registers no grad op for it, so the grad maker is gradc's own, written with Paddle's ops: layer_norm recomputes
h's statistics (as layer_norm_grad reads them) and layer_norm_grad gives dh and the grads of norm_weight and
norm_bias; dh adds residual_out's grad, and x takes dh, residual residual_alpha dh, bias dh summed over the rows. So
second and higher derivatives come from those ops' makers.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR, VarType
from ..registry import defop
from ..shapes import dims_match, numel
from .composite import Formula, first
from .extra_math_rms import fused_norm_dtype

ATTRS = {"epsilon": 1e-5, "residual_alpha": 1.0, "begin_norm_axis": 1, "quant_scale": -1.0, "quant_round_type": 0,
         "quant_max_bound": 0.0, "quant_min_bound": 0.0}


def _infer(ctx):
    dtype = fused_norm_dtype(ctx)
    x = ctx.shape("x")
    if x is None:
        return {}
    axis = ctx.attr("begin_norm_axis")
    if not x or not 0 <= axis <= len(x):
        ctx.fail(f"begin_norm_axis {axis} must be in [0, {len(x)}] for x {x} (Paddle takes no negative axis"
                 ", nor a 0-d x)")
    size = numel(x[axis:])
    for slot in ("norm_weight", "norm_bias"):
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and (len(shape) != 1 or not dims_match(shape[0], size)):
            ctx.fail(f"{slot} {shape} must be a vector of one value per normalised element of x {x} ({size})")
    for slot, like in (("bias", x[axis:]), ("residual", x)):
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and (len(shape) != len(like) or not all(map(dims_match, shape, like))):
            ctx.fail(f"{slot} {shape} must be shaped like {like}" + (" (x's dims from begin_norm_axis on)"
                                                                      if slot == "bias" else " (x)"))
    stats = ([numel(x[:axis])], VarType.FP32)
    return {"out": (x, dtype), "residual_out": (x, dtype), "mean": stats, "variance": stats}


def _grad(g):
    """x takes dh, layer_norm_grad's X@GRAD (dOut itself without norm_weight and norm_bias) plus residual_out's grad;
    residual takes residual_alpha dh, bias dh summed over the rows (zeros where the kernel ignores bias)."""
    f = Formula(g)
    x, bias, residual = (first(g.I(slot)) for slot in ("x", "bias", "residual"))
    normalised = bool(g.I("norm_weight") or g.I("norm_bias"))
    grads = {slot: grad for slot in ("x", "bias", "residual")
             if (grad := first(g.IG(slot))) not in (None, EMPTY_VAR)}
    if "bias" in grads and normalised and residual is None:   # the kernel ignores bias without a residual
        f.into(grads.pop("bias"), "fill_any_like", {"X": bias}, {"value": 0.0, "dtype": -1})
    out, residual_out = first(g.O("out")), first(g.O("residual_out"))
    through_out = out is not None and g.wants(out)
    through_residual_out = residual_out is not None and g.wants(residual_out)
    if not (through_out or through_residual_out):   # no output on the path: zeros for whatever is asked
        for slot in ("x", "bias", "residual", "norm_weight", "norm_bias"):
            f.into(first(g.IG(slot)), "fill_any_like", {"X": first(g.I(slot))}, {"value": 0.0, "dtype": -1})
        return f.ops
    alone = list(grads) == ["x"] and not through_residual_out   # dh is x's grad: written there straight
    dh = None
    if through_out and normalised:   # the weights' grads, and dh where an input wants it
        into = grads["x"] if alone else None if grads else EMPTY_VAR
        dh = _normalised_grad(f, g, _h(f, g, residual_out), first(g.OG("out")), into)
        if into is not None:
            return f.ops
    elif through_out:
        dh = first(g.OG("out"))
    if not grads:
        return f.ops
    if through_residual_out:
        dh = f.add(dh, first(g.OG("residual_out")), x) if dh is not None else first(g.OG("residual_out"))
    f.into(grads.get("x"), "assign", {"X": dh})
    alpha = g.attr("residual_alpha")
    f.into(grads.get("residual"), "scale", {"X": dh}, {"scale": alpha, "bias": 0.0, "bias_after_scale": True})
    if "bias" in grads:
        axis = g.attr("begin_norm_axis")
        if axis == 0:
            f.into(grads["bias"], "assign", {"X": dh})
        else:
            f.into(grads["bias"], "reduce_sum", {"X": dh},
                   {"dim": list(range(axis)), "keep_dim": False, "reduce_all": False})
    return f.ops


def _h(f, g, residual_out: str | None) -> str:
    """The normalised value: x without a residual (bias ignored there), else residual_out, or, where the op names no
    residual_out, x + residual_alpha residual + bias again."""
    x, residual, bias = (first(g.I(slot)) for slot in ("x", "residual", "bias"))
    if residual is None:
        return x
    if residual_out is not None:
        return residual_out
    h = f.add(x, f.scale(residual, g.attr("residual_alpha")), x)
    return f.add(h, bias, x) if bias is not None else h


def _normalised_grad(f, g, h: str, dout: str, into: str | None) -> str:
    """dh by layer_norm_grad (written ``into`` a given var; none for @EMPTY@), the statistics recomputed by layer_norm
    (which takes 0 < begin_norm_axis < rank: at 0 or the rank, h and dOut get a dim of 1 there); the grads of
    norm_weight and norm_bias written on the way."""
    shape, axis = g.shape(h), g.attr("begin_norm_axis")
    if shape is None:
        raise GradError(f"fused_bias_residual_layernorm: the rank of {h} must be known")
    spread = axis in (0, len(shape))

    def unsqueezed(v: str) -> str:   # declared like h: dOut's grad var may not be declared yet
        return f.op("unsqueeze2", {"X": v}, h, {"axes": [axis]}, more={"XShape": f.xshape(h)},
                    dims=lambda s: [*s[:axis], 1, *s[axis:]])

    h2, dout2, axis2 = (unsqueezed(h), unsqueezed(dout), max(axis, 1)) if spread else (h, dout, axis)
    var = g.block.find_var(h) if g.block is not None else None
    dtype = VarType.FP32 if var is not None and var.dtype in (VarType.FP16, VarType.BF16) else None   # as layer_norm
    stats = [g.tmp(h2, lambda s: s[:axis2], dtype) for _ in range(2)]
    weights = {"Scale": g.I("norm_weight"), "Bias": g.I("norm_bias")}
    attrs = {"epsilon": g.attr("epsilon"), "begin_norm_axis": axis2, "is_test": False}
    f.emit("layer_norm", {"X": h2, **weights}, {"Y": g.tmp(h2), "Mean": stats[0], "Variance": stats[1]}, attrs)
    dh2 = into if into is not None and (not spread or into == EMPTY_VAR) else g.tmp(h2)
    f.emit("layer_norm_grad", {"X": h2, **weights, "Mean": stats[0], "Variance": stats[1], "Y@GRAD": dout2},
           {"X@GRAD": dh2, "Scale@GRAD": g.IG("norm_weight"), "Bias@GRAD": g.IG("norm_bias")}, attrs)
    if not spread or dh2 == EMPTY_VAR:
        return dh2
    dh = into if into is not None else g.tmp(h)
    f.emit("squeeze2", {"X": dh2}, {"Out": dh, "XShape": f.xshape(dh2)}, {"axes": [axis]})
    return dh


defop("fused_bias_residual_layernorm", ["x", "bias?", "residual?", "norm_weight?", "norm_bias?"],
      ["out", "residual_out?", "mean", "variance"], attrs=ATTRS, infer=_infer, no_grad_outputs=["mean", "variance"],
      grad=_grad)
