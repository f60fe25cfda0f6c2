"""Random draws from probabilities or rates, and random (Tensor.random_: x refilled with integers drawn uniformly
from [from, to), in x's dtype, as Paddle's CPU kernel draws them; its grad random_grad is 0, as x's values are
not read): bernoulli (0/1 with probability X), multinomial (category indices
drawn with the weights in each row of X), poisson (counts with mean X) and class_center_sample (the classes of
a batch's labels and negative classes drawn uniformly beside them, for PartialFC) and seed (a seed for a dropout that
Paddle's recompute runs twice: its seed attribute, else a draw). The executor draws them from gradc's generator
(gradc.executor.randomness). poisson_grad gives zeros, as Paddle's does: a draw is not a
differentiable function of its rate; bernoulli and multinomial have no gradient.

Values Paddle leaves undefined are refused at run time: a probability outside [0, 1] (Paddle refuses it too),
a negative or NaN weight, a row of weights summing to 0 (as Paddle), and a negative rate (Paddle's draw at one
is undefined behaviour of its C++ generator).
"""

from __future__ import annotations

from ..ir import AttrType, VarType, dtype_name
from ..registry import NO_GRAD, defgrad, defop, grad_op, typed
from .composite import expansion, first
from .infer import check_float, float_like


def _multinomial_infer(ctx):
    x, samples = ctx.shape("X"), ctx.attr("num_samples")
    check_float(ctx, "X")
    if samples < 1:
        ctx.fail(f"multinomial num_samples must be >= 1, got {samples}")
    if x is None:   # X declared without a shape: its rank is checked when it runs
        return {"Out": (None, VarType.INT64)}
    if len(x) not in (1, 2):
        ctx.fail(f"multinomial needs X of rank 1 or 2 ([categories] or [distributions, categories]), got {x}")
    if not ctx.attr("replacement") and x[-1] != -1 and samples > x[-1]:
        ctx.fail(f"multinomial without replacement cannot draw {samples} samples from {x[-1]} categories")
    return {"Out": (x[:-1] + [samples], VarType.INT64)}


defop("bernoulli", ["X"], infer=float_like(), grad=NO_GRAD)
defop("multinomial", ["X"], attrs={"num_samples": 1, "replacement": False}, infer=_multinomial_infer, grad=NO_GRAD,
      tensor_attrs=["num_samples"])
defop("poisson", ["X"], infer=float_like(), grad=grad_op())
# poisson_grad is 0 dOut: linear in dOut, its own gradient 0 ddX
defgrad("poisson_grad", grad=expansion(lambda f, g: {"X@GRAD": f.scale(first(g.I("Out@GRAD")), 0.0)}))


MANTISSA = {VarType.FP32: 24, VarType.FP64: 53, VarType.FP16: 11, VarType.BF16: 8}
INT_RANGE = {VarType.INT32: 2 ** 31, VarType.INT64: 2 ** 63, VarType.INT16: 2 ** 15, VarType.UINT8: None,
             VarType.INT8: 2 ** 7}


def _random_infer(ctx):
    low, high, dtype = ctx.attr("from"), ctx.attr("to"), ctx.dtype("x")
    if low >= high:
        ctx.fail(f"random needs from < to, got from={low} and to={high}")
    bound = 2 ** MANTISSA[dtype] if dtype in MANTISSA else INT_RANGE.get(dtype, 2 ** 63)
    if dtype == VarType.UINT8 and not 0 <= low < high <= 256 or bound and not -bound <= low < high <= bound:
        ctx.fail(f"random's range [{low}, {high}) is not exact in x's dtype {dtype_name(dtype)}")
    return {"out": (ctx.shape("x"), dtype)}


defop("random", ["x"], ["out"], attrs={"from": typed(0, AttrType.LONG), "to": typed(0, AttrType.LONG)},
      infer=_random_infer, grad=grad_op())
# random_grad is 0 dout: linear in dout, its own gradient 0 ddx
defgrad("random_grad", grad=expansion(lambda f, g: {"x@GRAD": f.scale(first(g.I("out@GRAD")), 0.0)}))


def _class_center_infer(ctx):
    """PartialFC's class centers: every class Label holds, then classes drawn at random up to num_samples."""
    label, classes, samples = ctx.shape("Label"), ctx.attr("num_classes"), ctx.attr("num_samples")
    if label is not None and len(label) != 1:
        ctx.fail(f"class_center_sample needs Label [batch], got {label}")
    if ctx.dtype("Label") not in (None, VarType.INT32, VarType.INT64):
        ctx.fail("class_center_sample needs int32 or int64 labels")
    if not 0 < samples <= classes:
        ctx.fail(f"class_center_sample needs 0 < num_samples <= num_classes, got {samples} and {classes}")
    return {"RemappedLabel": (label, ctx.dtype("Label")), "SampledLocalClassCenter": ([-1], ctx.dtype("Label"))}


# one process: the model-parallel setting (nranks > 1, its ring and rank) needs collective communication
MODEL_PARALLEL = "model parallelism across ranks is not supported"
defop("class_center_sample", ["Label"], ["RemappedLabel", "SampledLocalClassCenter"],
      attrs={"num_classes": 1, "num_samples": 1, "ring_id": 0, "rank": 0, "nranks": 1, "fix_seed": False, "seed": 0},
      infer=_class_center_infer, unsupported_attrs={"nranks": MODEL_PARALLEL, "rank": MODEL_PARALLEL},
      grad=NO_GRAD)

def _seed_infer(ctx):
    return {"Out": ([1], VarType.INT32)}


# Paddle's recompute puts one before each dropout it will run again: both runs read the seed, so draw one mask;
# deterministic=True takes it from the generator named rng_name (gradc.executor.randomness.set_seed_generator)
defop("seed", [], ["Out"], attrs={"seed": 0, "deterministic": False, "rng_name": "", "force_cpu": False},
      infer=_seed_infer, grad=NO_GRAD)
