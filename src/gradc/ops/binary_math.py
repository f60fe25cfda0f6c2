"""Binary math of the tensor API: atan2, fmax/fmin, heaviside, lerp, copysign, masked_fill, the isnan/isinf/
isfinite tests, isclose/allclose, conj and fill_diagonal_tensor (paddle.diagonal_scatter).

Operands broadcast as numpy does (trailing dims): none of these ops has the `axis` attribute of the
elementwise_* arithmetic. Bool results have no gradient.
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR, AttrType, VarType, dtype_name
from ..registry import NO_GRAD, defop, grad_op, typed
from ..shapes import broadcast_dims, dims_match, numel
from .bitwise import BOOL_OR_INTEGER_DTYPES
from .composite import Formula
from .infer import broadcast_shapes, one_dtype, same_as
from .rearrange import diagonal_length


def _broadcast_infer(first: str, second: str, out: str = "Out"):
    """Operands of one dtype (Paddle's kernels take one type), broadcast."""
    def infer(ctx):
        dtype = one_dtype(ctx, first, second)
        return {out: (broadcast_shapes(ctx, ctx.shape(first), ctx.shape(second)), dtype)}
    return infer


def _atan2_infer(ctx):
    """Integer operands give float64, as Paddle's kernel computes them."""
    dtype = one_dtype(ctx, "X1", "X2")
    return {"Out": (broadcast_shapes(ctx, ctx.shape("X1"), ctx.shape("X2")),
                    VarType.FP64 if dtype in BOOL_OR_INTEGER_DTYPES else dtype)}


# d atan2(x1, x2) = (x2 dx1 - x1 dx2) / (x1^2 + x2^2)
defop("atan2", ["X1", "X2"], infer=_atan2_infer, grad=grad_op("X1", "X2"))
# fmax/fmin ignore a NaN operand; the grad goes to X on a tie (and where Y is NaN), to Y otherwise, as Paddle's
defop("elementwise_fmax", ["X", "Y"], infer=_broadcast_infer("X", "Y"), grad=grad_op("X", "Y"))
defop("elementwise_fmin", ["X", "Y"], infer=_broadcast_infer("X", "Y"), grad=grad_op("X", "Y"))
# heaviside(x, y) = y where x == 0, else (x > 0): flat in X, dY = dOut where x == 0
defop("elementwise_heaviside", ["X", "Y"], infer=_broadcast_infer("X", "Y"), grad=grad_op("X", "Y"))
# copysign(x, y) = |x| with the sign bit of y: dx = dOut sign(x) sign(y) (0 at x = 0), flat in y
defop("copysign", ["x", "y"], ["out"], infer=_broadcast_infer("x", "y", "out"), grad=grad_op("x", "y"))


def _lerp_infer(ctx):
    dtype = one_dtype(ctx, "X", "Y", "Weight")
    shape = broadcast_shapes(ctx, ctx.shape("X"), ctx.shape("Y"))
    return {"Out": (broadcast_shapes(ctx, shape, ctx.shape("Weight")), dtype)}


def _lerp_grad(g):
    """lerp = x + w (y - x): lerp_grad gives dX = dOut (1 - w) and dY = dOut w, as Paddle's. Paddle gives Weight no
    gradient (its lerp_grad has no Weight@GRAD); gradc gives it dOut (y - x), which elementwise_mul_grad sums back
    to Weight's shape."""
    f = Formula(g)
    f.emit("lerp_grad", {"X": g.I("X"), "Y": g.I("Y"), "Weight": g.I("Weight"), "Out": g.O("Out"),
                         "Out@GRAD": g.OG("Out")}, {"X@GRAD": g.IG("X"), "Y@GRAD": g.IG("Y")})
    if g.IG("Weight")[0] != EMPTY_VAR:
        x, y = g.shape(g.I("X")[0]), g.shape(g.I("Y")[0])
        span = f.op("elementwise_sub", {"X": g.I("Y"), "Y": g.I("X")}, g.I("Y")[0], {"axis": -1},
                    dims=None if x is None or y is None else lambda _: broadcast_dims(x, y))
        f.emit("elementwise_mul_grad", {"X": g.I("Weight"), "Y": span, "Out@GRAD": g.OG("Out")},
               {"X@GRAD": g.IG("Weight")}, {"axis": -1})
    return f.ops


defop("lerp", ["X", "Y", "Weight"], infer=_lerp_infer, grad=_lerp_grad)
defop("lerp_grad", ["X", "Y", "Weight", "Out", "Out@GRAD"], ["X@GRAD?", "Y@GRAD?"],
      infer=lambda ctx: {"X@GRAD": (ctx.shape("X"), ctx.dtype("X")), "Y@GRAD": (ctx.shape("Y"), ctx.dtype("Y"))}
      ).grad_op_of = "lerp"


def _masked_fill_infer(ctx):
    if ctx.dtype("mask") != VarType.BOOL:
        ctx.fail(f"mask must be a bool tensor, got {dtype_name(ctx.dtype('mask'))}")
    shape = broadcast_shapes(ctx, ctx.shape("x"), ctx.shape("mask"))
    if broadcast_shapes(ctx, shape, ctx.shape("value")) != shape:
        ctx.fail(f"value {ctx.shape('value')} does not broadcast to the output {shape}")
    return {"out": (shape, ctx.dtype("x"))}


# out = value where mask, else x: dx = dOut where not mask, dvalue = dOut where mask, summed to value's shape. Paddle
# 3.3.1's masked_fill_grad kernel gives value zeros (or stale memory) instead, for every shape of value
defop("masked_fill", ["x", "mask", "value"], ["out"], infer=_masked_fill_infer, no_grad_inputs=["mask"],
      grad=grad_op("x", "mask", "value"))

for _name in ("isnan_v2", "isinf_v2", "isfinite_v2"):
    defop(_name, ["X"], infer=lambda ctx: {"Out": (ctx.shape("X"), VarType.BOOL)}, grad=NO_GRAD)


def _tolerance(ctx, name: str) -> None:
    """rtol and atol are decimal strings (Paddle parses them into doubles)."""
    text = ctx.attr(name)
    try:
        value = float(text)
    except ValueError:
        ctx.fail(f"attribute {name}={text!r} is not a number")
    if not value >= 0:
        ctx.fail(f"attribute {name}={text!r} must be >= 0")


def _close_infer(out_shape):
    def infer(ctx):
        x, y = ctx.shape("Input"), ctx.shape("Other")
        known = x is not None and y is not None   # a var declared without a shape: checked when it runs
        if known and (len(x) != len(y) or not all(map(dims_match, x, y))):
            ctx.fail(f"Input {x} and Other {y} must have one shape")
        for name, slot in (("rtol", "Rtol"), ("atol", "Atol")):
            _tolerance(ctx, name)
            if ctx.has(slot) and ctx.shape(slot) not in ([], [1], None):
                ctx.fail(f"{slot} must hold one value, but has shape {ctx.shape(slot)}")
        return {"Out": (out_shape(x), VarType.BOOL)}
    return infer


CLOSE_ATTRS = {"rtol": "1e-5", "atol": "1e-8", "equal_nan": False}
# |input - other| <= atol + rtol |other|, elementwise (isclose) or over all elements into a 0-d bool (allclose);
# the Rtol/Atol tensors, when given, override the attributes
defop("isclose", ["Input", "Other", "Rtol?", "Atol?"], attrs=CLOSE_ATTRS, infer=_close_infer(lambda x: x),
      grad=NO_GRAD)
defop("allclose", ["Input", "Other", "Rtol?", "Atol?"], attrs=CLOSE_ATTRS, infer=_close_infer(lambda x: []),
      grad=NO_GRAD)


def _conj_grad(g):
    """The grad of conj is the conj of the output grad (the identity on real tensors), as Paddle's maker emits."""
    return [g.op("conj", {"X": g.OG("Out")}, {"Out": g.IG("X")})]


defop("conj", ["X"], infer=same_as("X"), grad=_conj_grad)


def _fill_diagonal_tensor_infer(ctx):
    x, y = ctx.shape("X"), ctx.shape("Y")
    if len(x) < 2:
        ctx.fail(f"X must have at least 2 dims, got {x}")
    d1, d2, offset = ctx.axis(ctx.attr("dim1"), len(x)), ctx.axis(ctx.attr("dim2"), len(x)), ctx.attr("offset")
    if d1 == d2:
        ctx.fail(f"dim1 {ctx.attr('dim1')} and dim2 {ctx.attr('dim2')} are one dim of X {x}")
    length = -1 if x[d1] < 0 or x[d2] < 0 else diagonal_length(x[d1], x[d2], offset)
    if length == 0:
        ctx.fail(f"offset {offset} leaves no diagonal in dims {d1} and {d2} of X {x}")
    rest = [d for i, d in enumerate(x) if i not in (d1, d2)]
    # Paddle's kernel reads Y as [the other dims, length] flattened to 2-D: paddle.diagonal_scatter passes a
    # diagonal of a matrix as [1, length]
    if not y or not dims_match(y[-1], length) or not dims_match(numel(y[:-1]), numel(rest)):
        ctx.fail(f"Y must be shaped like the diagonal it replaces, {rest + [length]}, got {y}")
    return same_as("X")(ctx)


def _fill_diagonal_tensor_grad(g):
    """Out is X with its diagonal replaced by Y: fill_diagonal_tensor_grad gives dX = dOut with the diagonal zeroed,
    as Paddle's. Paddle gives Y no gradient; gradc gives it the diagonal of dOut (the diagonal op lays it out as Y:
    the other dims, then the diagonal's), reshaped to Y's shape where that differs ([1, length] for
    paddle.diagonal_scatter's matrix)."""
    f = Formula(g)
    out, dout, dy = g.O("Out")[0], g.OG("Out")[0], g.IG("Y")[0]
    f.emit("fill_diagonal_tensor_grad", {"Out@GRAD": dout}, {"X@GRAD": g.IG("X")}, same=True)
    if dy == EMPTY_VAR:
        return f.ops
    x, y = g.shape(g.I("X")[0]), g.shape(g.I("Y")[0])
    if x is None or y is None or y[-1] < 0:
        raise GradError(f"op '{g.fwd.type}': the grad of Y needs the declared shapes of X and Y (got {x}, {y})")
    d1, d2 = g.attr("dim1") % len(x), g.attr("dim2") % len(x)
    attrs = {"offset": int(g.attr("offset")), "axis1": d1, "axis2": d2}
    diagonal_shape = [d for i, d in enumerate(x) if i not in (d1, d2)] + [y[-1]]
    if y == diagonal_shape:
        f.emit("diagonal", {"Input": dout}, {"Out": dy}, attrs)
        return f.ops
    diagonal = f.op("diagonal", {"Input": dout}, out, attrs, dims=lambda _: diagonal_shape)
    if y.count(-1) <= 1:   # a static shape (PIR can write it)
        f.emit("reshape2", {"X": diagonal}, {"Out": dy, "XShape": f.xshape(diagonal)}, {"shape": y})
    else:
        f.shaped_like(diagonal, g.I("Y")[0], dy)
    return f.ops


FILL_DIAGONAL_ATTRS = {"offset": typed(0, AttrType.LONG), "dim1": 0, "dim2": 1}
defop("fill_diagonal_tensor", ["X", "Y"], attrs=FILL_DIAGONAL_ATTRS, infer=_fill_diagonal_tensor_infer,
      grad=_fill_diagonal_tensor_grad)
defop("fill_diagonal_tensor_grad", ["Out@GRAD"], ["X@GRAD"], attrs=FILL_DIAGONAL_ATTRS,
      infer=same_as("Out@GRAD", "X@GRAD")).grad_op_of = "fill_diagonal_tensor"
