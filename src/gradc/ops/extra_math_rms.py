"""fused_rms_norm_quant (paddle.incubate.nn.functional.fused_rms_norm, Llama's RMSNorm), its non-quantized path:

    h = x + residual + bias (each optional; residual_out = h)    inv_var = 1 / sqrt(mean(h^2) + epsilon)
    out = h inv_var norm_weight + norm_bias

the mean over the dims from begin_norm_axis on, norm_weight / norm_bias / bias flat vectors of their size; bias is
added only along with a residual (Paddle's kernels ignore it without one, so it gets no gradient there). The
quantized path (quant_scale > 0, an int8 out) is refused: Paddle 3.3.1's CPU kernel lacks it too, and it has no
gradient to give (its rounded out is constant between steps: 0 almost everywhere). The float path is differentiated
to any order (fused_rms_norm_quant_grad's maker below). Paddle 3.3.1 has no CPU grad kernel, and its grad op has no
slots for residual and bias: gradc's maker gives them dh (bias summed over the rows) and adds residual_out's grad to
dh, which Paddle's grad op leaves out.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad, defop
from ..shapes import numel
from .composite import Formula, expansion, first
from .infer import check_float, one_dtype

RMS_ATTRS = {"begin_norm_axis": 1, "epsilon": 1e-5, "quant_scale": -1.0, "quant_round_type": 0,
             "quant_max_bound": 0.0, "quant_min_bound": 0.0}


def fused_norm_dtype(ctx):
    """x and its optional companions (bias, residual, norm_weight, norm_bias) share one float dtype, and the
    quantized path (quant_scale > 0, an int8 out) is refused, as Paddle 3.3.1's CPU kernels refuse it."""
    check_float(ctx, "x")
    dtype = one_dtype(ctx, "x", *(slot for slot in ("bias", "residual", "norm_weight", "norm_bias") if ctx.has(slot)))
    if ctx.attr("quant_scale") > 0:
        ctx.fail(f"attribute quant_scale={ctx.attr('quant_scale')}: the quantized path (an int8 out) is not supported"
                 ", as Paddle 3.3.1's CPU kernel does not support it")
    return dtype


def _rms_infer(ctx):
    fused_norm_dtype(ctx)
    x = ctx.shape("x")
    if x is None:
        return {}
    axis = ctx.axis(ctx.attr("begin_norm_axis"), len(x))
    size = numel(x[axis:])
    for slot in ("norm_weight", "norm_bias", "bias"):
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and size >= 0 and numel(shape) >= 0 and numel(shape) != size:
            ctx.fail(f"{slot} {shape} must hold one value per normalised element of x {x} ({size})")
    if ctx.has("residual") and ctx.shape("residual") not in (None, x):
        ctx.fail(f"residual {ctx.shape('residual')} must be shaped like x {x}")
    dtype = ctx.dtype("x")
    # residual_out is written only with a residual (Paddle declares it [] otherwise)
    residual_out = x if ctx.has("residual") else None
    return {"out": (x, dtype), "residual_out": (residual_out, dtype), "inv_var": (x[:axis], VarType.FP32)}


def _rms_grad(g):
    """The grad op gives dh (as x@GRAD) and the weights' grads; x, residual and bias each take dh, plus
    residual_out's grad where it has one (bias takes zeros without a residual)."""
    f = Formula(g)
    grads_of = {slot: first(g.IG(slot)) for slot in ("x", "bias", "residual")}
    grads_of = {slot: grad for slot, grad in grads_of.items() if grad not in (None, EMPTY_VAR)}
    if "bias" in grads_of and not first(g.I("residual")):   # the kernels ignore bias without a residual
        f.into(grads_of.pop("bias"), "fill_any_like", {"X": first(g.I("bias"))}, {"value": 0.0, "dtype": -1})
    residual_out = first(g.O("residual_out"))
    through_residual_out = residual_out is not None and g.wants(residual_out)
    reused = through_residual_out or "bias" in grads_of or "residual" in grads_of
    dh = g.tmp(first(g.I("x"))) if reused else grads_of.get("x", EMPTY_VAR)
    inputs = {slot: g.I(slot) for slot in ("x", "bias", "residual", "norm_weight", "norm_bias")}
    f.emit("fused_rms_norm_quant_grad", {**inputs, "inv_var": g.O("inv_var"), "out@GRAD": g.OG("out")},
           {"x@GRAD": dh, "norm_weight@GRAD": g.IG("norm_weight"), "norm_bias@GRAD": g.IG("norm_bias")}, same=True)
    if not reused:
        return f.ops
    if through_residual_out:
        dh = f.add(dh, first(g.OG("residual_out")), dh)
    for slot in ("x", "residual"):
        f.into(grads_of.get(slot), "assign", {"X": dh})
    if "bias" in grads_of:
        _summed_rows(f, g, dh, first(g.I("bias")), out=grads_of["bias"])
    return f.ops


def _summed_rows(f, g, value: str, vector: str, out: str | None = None) -> str:
    """``value`` summed over the rows (the dims before begin_norm_axis) and flattened to the vector's shape, by
    attributes where the shapes are known (a PIR export takes no Shape tensor for reshape2)."""
    shape, target = g.shape(value), g.shape(vector)
    axis = g.attr("begin_norm_axis") % len(shape)
    if target is None or -1 in target or -1 in shape[axis:]:
        return f.summed_like(value, vector, list(range(axis)), out=out)
    total = f.op("reduce_sum", {"X": value}, value, {"dim": list(range(axis)), "keep_dim": False, "reduce_all": False},
                 dims=lambda s: s[axis:])
    out = out or g.tmp(vector)
    f.emit("reshape2", {"X": total}, {"Out": out, "XShape": f.xshape(total)}, {"shape": list(target)})
    return out


defop("fused_rms_norm_quant", ["x", "bias?", "residual?", "norm_weight", "norm_bias?"],
      ["out", "residual_out?", "inv_var"], attrs=RMS_ATTRS, infer=_rms_infer, no_grad_outputs=["inv_var"],
      grad=_rms_grad)
defop("fused_rms_norm_quant_grad", ["x", "bias?", "residual?", "norm_weight", "norm_bias?", "inv_var", "out@GRAD"],
      ["x@GRAD?", "norm_weight@GRAD?", "norm_bias@GRAD?"], attrs=RMS_ATTRS,
      infer=lambda ctx: {f"{slot}@GRAD": (ctx.shape(slot), ctx.dtype(slot))
                         for slot in ("x", "norm_weight", "norm_bias") if ctx.has(slot)}
      ).grad_op_of = "fused_rms_norm_quant"


@expansion
def _rms_again(f, g):
    """The grad op's computation from its inputs (inv_var recomputed), as its kernel: with xhat = h inv_var and
    dxhat = dOut norm_weight, dh = inv_var (dxhat - xhat mean(dxhat xhat)), norm_weight@GRAD = sum(dOut xhat),
    norm_bias@GRAD = sum(dOut), the means over the normalised dims, the sums over the rows."""
    x, dout = first(g.I("x")), first(g.I("out@GRAD"))
    shape = g.shape(x)
    if shape is None:
        raise GradError(f"fused_rms_norm_quant_grad: the rank of {x} must be known (begin_norm_axis counts on it)")
    axis = g.attr("begin_norm_axis") % len(shape)
    norm_dims = list(range(axis, len(shape)))
    h = x
    if first(g.I("residual")):
        h = f.add(h, first(g.I("residual")), x)
        if first(g.I("bias")):
            h = f.add(h, _spread(f, first(g.I("bias")), shape[axis:], x), x)
    def mean(v: str) -> str:
        return f.op("reduce_mean", {"X": v}, x, {"dim": norm_dims, "keep_dim": True, "reduce_all": False},
                    dims=lambda s: [*s[:axis], *[1] * len(norm_dims)])

    inverse = f.unary("rsqrt", f.scale(mean(f.mul(h, h, x)), 1.0, g.attr("epsilon")))
    xhat = f.mul(h, inverse, x)
    scaled = f.mul(dout, _spread(f, first(g.I("norm_weight")), shape[axis:], x), dout)
    results = {"x@GRAD": f.mul(inverse, f.sub(scaled, f.mul(xhat, mean(f.mul(scaled, xhat, x)), x), x), x)}
    if g.O("norm_weight@GRAD"):
        results["norm_weight@GRAD"] = _summed_rows(f, g, f.mul(dout, xhat, dout), first(g.I("norm_weight")))
    if g.O("norm_bias@GRAD"):
        results["norm_bias@GRAD"] = _summed_rows(f, g, dout, first(g.I("norm_bias")))
    return results


def _spread(f, vector: str, dims: list[int], like: str) -> str:
    """A flat vector reshaped to the normalised dims (``like``'s last ones), to broadcast over the rows; dims known
    at run time only are read from ``like``'s shape (where all are known, attributes: a PIR export takes no Shape
    tensor for reshape2)."""
    if min(dims, default=0) >= 0:
        return f.op("reshape2", {"X": vector}, like, {"shape": list(dims)}, more={"XShape": f.xshape(vector)},
                    dims=lambda _: list(dims))
    rank = len(f.g.shape(like))
    sizes = f.op("shape", {"Input": like}, like, dims=lambda _: [rank], dtype=VarType.INT32)
    last = f.slice(sizes, 0, rank - len(dims), rank)
    return f.op("reshape2", {"X": vector, "Shape": last}, like, {"shape": [-1] * len(dims)},
                more={"XShape": f.xshape(vector)}, dims=lambda _: list(dims))


defgrad("fused_rms_norm_quant_grad", grad=_rms_again, no_grad_inputs=["inv_var"])
