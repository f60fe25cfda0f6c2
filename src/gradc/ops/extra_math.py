"""Extra math of Paddle's tensor API: gammaln, the regularized upper incomplete gamma gammaincc (paddle.gammainc
writes 1 - gammaincc with other ops), nextafter, multiplex, reduce_as, the is_empty / equal_all tests, swiglu, the
legacy L2 normalisation `norm` and margin_cross_entropy (ArcFace / CosFace / SphereFace). Their derivatives:

    gammaln' = digamma
    d gammaincc(x, y) / dy = -exp(-y) y^(x - 1) / Gamma(x)    (Paddle differentiates y only: x is the shape)
    multiplex: dX[k] = dOut on the rows whose Ids is k, 0 elsewhere
    reduce_as: dx = dOut broadcast back to x's shape
    swiglu = silu(x) y: dx = dOut y silu'(x), dy = dOut silu(x)
    norm: Out = X / Norm, Norm = sqrt(sum X^2 + epsilon) along axis: dX = (dOut - Out sum(dOut Out)) / Norm
    margin_cross_entropy: dLogits = scale (Softmax - onehot) dLoss, times m1 sin(m1 acos(c) + m2) / sin(acos(c)) at
        the label (the derivative of its margin)

Paddle 3.3.1 has no CPU kernel of margin_cross_entropy; gradc follows its GPU kernels on one device (nranks 1).
gradc computes gammaincc and its grad in float64 and differs where Paddle 3.3.1 is wrong: its gammaincc_grad divides
y^(x-1) by tgamma(x), which overflow (NaN at x = 40, y = 35 in float32, at x = 200 in float64: gradc goes through
logs), it computes float32 input in float32 (Q(200, 190) 1.5e-5 off), and at x < 1e-3, y < 1 its 1 - P loses the
tiny Q (Q(1e-20, 1e-20) 7.8e-16 for 4.5e-19). At large x its prefactor's log cancels terms of size x log(x):
Q(1e12, 1e12 + 1e6) is 0.15895 for 0.15866, Q(1e13, 1e13) 0.4766 for 0.5 (its grad NaN from x ~ 200); gradc takes
the log through Stirling's tail from x = 100 and Temme's uniform expansion from x = 1e6, to 5e-14 of Q up to
x = 1e15 (gradc.executor.kernels.incomplete_gamma).
"""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..registry import NO_GRAD, defop, grad_op
from .activation import activation
from .composite import Formula, first
from .infer import broadcast_shapes, check_float, float_like, one_dtype

activation("gammaln", "x", lowercase=True, infer=float_like("x", "out"))


def _same_shape(ctx, one: str, other: str) -> list[int]:
    """Paddle's kernel pairs the operands element by element: they must have one shape (no broadcasting)."""
    x, y = ctx.shape(one), ctx.shape(other)
    if x is not None and y is not None and (len(x) != len(y) or any(a != b and a >= 0 and b >= 0
                                                                     for a, b in zip(x, y))):
        ctx.fail(f"{one} {x} and {other} {y} must have one shape")
    return x if x is not None else y


def _gammaincc_infer(ctx):
    for slot in ("x", "y"):
        check_float(ctx, slot)
    return {"out": (_same_shape(ctx, "x", "y"), one_dtype(ctx, "x", "y"))}


defop("gammaincc", ["x", "y"], ["out"], infer=_gammaincc_infer, no_grad_inputs=["x"], grad=grad_op("x", "y"))


def _nextafter_infer(ctx):
    dtype = one_dtype(ctx, "x", "y")
    check_float(ctx, "x")
    return {"out": (broadcast_shapes(ctx, ctx.shape("x"), ctx.shape("y")), dtype)}


defop("nextafter", ["x", "y"], ["out"], infer=_nextafter_infer, grad=NO_GRAD)


def _multiplex_infer(ctx):
    shapes, ids = ctx.shapes("X"), ctx.shape("Ids")
    if not shapes:
        ctx.fail("X holds no tensor to pick rows from")
    if ctx.dtype("Ids") not in (None, VarType.INT32, VarType.INT64):
        ctx.fail(f"Ids must be int32 or int64, got {dtype_name(ctx.dtype('Ids'))}")
    if ids is not None and (len(ids) != 2 or ids[1] not in (1, -1)):
        ctx.fail(f"Ids must have shape [batch, 1], got {ids}")
    known = [shape for shape in shapes if shape is not None]
    if any(shape != known[0] for shape in known):
        ctx.fail(f"the tensors of X must have one shape, got {known}")
    dtypes = {ctx.dtype("X", i) for i in range(len(shapes))} - {None}
    if len(dtypes) > 1:
        ctx.fail(f"the tensors of X must have one dtype, got {sorted(map(dtype_name, dtypes))}")
    if known and not known[0]:
        ctx.fail("the tensors of X must have a batch dim to pick rows from, got 0-d tensors")
    if known and ids is not None and -1 not in (ids[0], known[0][0]) and ids[0] != known[0][0]:
        ctx.fail(f"Ids {ids} must hold one index per row of X's tensors {known[0]}")
    return {"Out": (known[0] if known else None, ctx.dtype("X"))}


defop("multiplex", ["X[]", "Ids"], infer=_multiplex_infer, no_grad_inputs=["Ids"], grad=grad_op("X", "Ids"))


def _reduce_as_infer(ctx):
    x, target = ctx.shape("x"), ctx.shape("target")
    if x is not None and target is not None:
        lead = len(x) - len(target)
        if lead < 0 or any(t not in (1, d) and -1 not in (t, d) for t, d in zip(target, x[lead:])):
            ctx.fail(f"target {target} does not broadcast to x {x}: x cannot be summed to it")
    widened = ctx.dtype("x") in (VarType.BOOL, VarType.INT32)   # summed into int64, as Paddle's sum
    return {"out": (target, VarType.INT64 if widened else ctx.dtype("x"))}


defop("reduce_as", ["x", "target"], ["out"], infer=_reduce_as_infer, no_grad_inputs=["target"],
      grad=grad_op("x", "target"))
defop("is_empty", ["X"], infer=lambda ctx: {"Out": ([], VarType.BOOL)}, grad=NO_GRAD)


def _equal_all_infer(ctx):
    """Tensors of different shapes are unequal (no error); of different dtypes refused, as Paddle's kernel."""
    one_dtype(ctx, "X", "Y")
    return {"Out": ([], VarType.BOOL)}


defop("equal_all", ["X", "Y"], infer=_equal_all_infer, grad=NO_GRAD)


def _swiglu_infer(ctx):
    check_float(ctx, "x")
    x = ctx.shape("x")
    if x is not None and not x:
        ctx.fail("x must have at least 1 dim, got a 0-d tensor")
    if ctx.has("y"):
        one_dtype(ctx, "x", "y")
        return {"out": (_same_shape(ctx, "x", "y"), ctx.dtype("x"))}
    if x is not None and x[-1] >= 0 and x[-1] % 2:
        ctx.fail(f"without y, x's last dim is split in two halves and must be even, got x {x}")
    return {"out": (None if x is None else [*x[:-1], x[-1] // 2 if x[-1] >= 0 else -1], ctx.dtype("x"))}


# y absent: x = [a, b] halved on its last axis, out = silu(a) b
defop("swiglu", ["x", "y?"], ["out"], infer=_swiglu_infer, grad=grad_op("x", "y"))


def _norm_infer(ctx):
    check_float(ctx, "X")
    x = ctx.shape("X")
    if ctx.attr("epsilon") < 0:
        ctx.fail(f"attribute epsilon={ctx.attr('epsilon')} must be >= 0")
    if x is None:
        return {"Out": (None, ctx.dtype("X")), "Norm": (None, ctx.dtype("X"))}
    axis = ctx.axis(ctx.attr("axis"), len(x))
    return {"Out": (x, ctx.dtype("X")), "Norm": ([1 if i == axis else d for i, d in enumerate(x)], ctx.dtype("X"))}


def _norm_grad(g):
    """X@GRAD = norm_grad(dOut) + Out dNorm (dNorm / dX = X / Norm = Out). Paddle 3.3.1 differentiates Out only: its
    own l2_norm (paddle.nn.utils.weight_norm_hook, which keeps Norm alone) gets no gradient at all."""
    f = Formula(g)
    x, out, size = first(g.I("X")), first(g.O("Out")), first(g.O("Norm"))
    through_out = {"X": x, "Norm": size, "Out@GRAD": g.OG("Out")}
    if not g.wants(size):
        f.into(first(g.IG("X")), "norm_grad", through_out, slot="X@GRAD", same=True)
        return f.ops
    parts = [f.mul(out, first(g.OG("Norm")), x)]
    if g.wants(out):
        parts.append(f.op("norm_grad", through_out, x, slot="X@GRAD", same=True))
    f.into(first(g.IG("X")), "sum", {"X": parts})
    return f.ops


NORM_ATTRS = {"axis": 0, "epsilon": 1e-10, "is_test": False}
defop("norm", ["X"], ["Out", "Norm!"], attrs=NORM_ATTRS, infer=_norm_infer, grad=_norm_grad)
defop("norm_grad", ["X", "Norm", "Out@GRAD"], ["X@GRAD?"], attrs=NORM_ATTRS,
      infer=lambda ctx: {"X@GRAD": (ctx.shape("X"), ctx.dtype("X"))}).grad_op_of = "norm"


_MARGIN_OFF = 1e-8   # Paddle's kernels leave the angle alone when |margin1 - 1| and |margin2| are below it


def angular_margin(margin1: float, margin2: float) -> bool:
    """Whether the label's cosine goes through cos(margin1 acos(c) + margin2) (ArcFace), as Paddle's kernels."""
    return abs(margin1 - 1) > _MARGIN_OFF or abs(margin2) > _MARGIN_OFF


_ONE_DEVICE = "its classes are sharded over devices (model parallelism), and gradc runs on one device"


def _margin_cross_entropy_infer(ctx):
    check_float(ctx, "Logits")
    logits, label = ctx.shape("Logits"), ctx.shape("Label")
    if ctx.dtype("Label") not in (None, VarType.INT32, VarType.INT64):   # Paddle's kernels read these two only
        ctx.fail(f"Label must be int32 or int64, got {dtype_name(ctx.dtype('Label'))}")
    if logits is not None and len(logits) != 2:
        ctx.fail(f"Logits must have shape [batch, classes], got {logits}")
    if label is not None and (len(label) not in (1, 2) or len(label) == 2 and label[1] not in (1, -1)):
        ctx.fail(f"Label must have shape [batch] or [batch, 1], got {label}")
    if logits is not None and label is not None and -1 not in (logits[0], label[0]) and logits[0] != label[0]:
        ctx.fail(f"Logits {logits} and Label {label} must have one batch size")
    if ctx.attr("nranks") != 1:
        ctx.fail(f"attribute nranks={ctx.attr('nranks')} is not supported: {_ONE_DEVICE}")
    dtype = ctx.dtype("Logits")
    return {"Softmax": (logits, dtype), "Loss": (None if logits is None else [logits[0], 1], dtype)}


defop("margin_cross_entropy", ["Logits", "Label"], ["Softmax", "Loss"],
      attrs={"margin1": 1.0, "margin2": 0.5, "margin3": 0.0, "scale": 64.0, "nranks": 1, "rank": 0, "ring_id": 0,
             "return_softmax": False},
      infer=_margin_cross_entropy_infer, no_grad_inputs=["Label"], no_grad_outputs=["Softmax"],
      grad=grad_op("Label", "Logits", "Softmax"))

