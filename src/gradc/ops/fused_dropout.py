"""fused_dropout_add (paddle.incubate.nn.functional.fused_dropout_add, FusedDropoutAdd in Paddle before 3.3.1's
API fell back to dropout + add; GPU fusion passes still write it): out = dropout(x) + y. Paddle 3.3.1 has a CUDA
kernel only; gradc follows its formula where it draws nothing:

    is_test:   out = x + y (upscale_in_train), x (1.0f - p) + y (downscale_in_infer)
    training:  out = x + y at p = 0, y at p = 1 (the kernel copies y)

A training rate strictly between 0 and 1 keeps x's elements by curand Philox draws whose threads and offset depend
on the GPU (docs/pir-sweep.md): gradc refuses it. The grad (fused_dropout_add_grad) gives dout times the same factor
to x and dout to y; seed_offset, where Paddle stores the draws' seed and offset, is [0, 0]. PTensor, when given,
replaces the attribute p."""

from __future__ import annotations

from ..ir import VarType
from ..makers import grad_op
from ..registry import defgrad, defop
from .composite import Formula, expansion, first
from .infer import check_choice, check_float, one_dtype
from .interp import float32

DROPOUT_ADD_ATTRS = {"p": 0.5, "is_test": False, "mode": "upscale_in_train", "seed": 0, "fix_seed": False}


def dropout_add_factor(rate: float, is_test: bool, mode: str) -> float:
    """What x is multiplied by where no draw decides: at test 1 or 1.0f - p, in training 1 at p = 0 and 0 at 1."""
    if is_test:
        return 1.0 if mode == "upscale_in_train" else float32(1 - float32(rate))
    return 0.0 if rate == 1 else 1.0


def _dropout_add_infer(ctx):
    check_float(ctx, "x")
    check_choice(ctx, "mode", ("upscale_in_train", "downscale_in_infer"))
    rate = ctx.attr("p")
    if not ctx.has("PTensor") and not ctx.attr("is_test") and rate not in (0, 1):
        ctx.fail(f"p={rate} in training keeps x by Paddle's GPU (curand Philox) draws, which gradc cannot reproduce: "
                 "only is_test or p = 0 or 1 run")
    dtype = one_dtype(ctx, "x", "y")
    if None not in (ctx.shape("x"), ctx.shape("y")) and ctx.shape("x") != ctx.shape("y"):
        ctx.fail(f"x {ctx.shape('x')} and y {ctx.shape('y')} must have one shape")
    return {"out": (ctx.shape("x"), dtype), "seed_offset": ([2], VarType.INT64)}


defop("fused_dropout_add", ["x", "y", "seed_tensor?", "PTensor?"], ["out", "seed_offset"], attrs=DROPOUT_ADD_ATTRS,
      infer=_dropout_add_infer, no_grad_inputs=["seed_tensor", "PTensor"], no_grad_outputs=["seed_offset"],
      grad=grad_op("PTensor", "seed_offset"))


@expansion
def _dropout_add_again(f, g):
    """x@GRAD = dout factor and y@GRAD = dout, written with scale (linear in dout)."""
    dout = first(g.I("out@GRAD"))
    factor = dropout_add_factor(g.attr("p"), g.attr("is_test"), g.attr("mode"))
    return {"x@GRAD": f.scale(dout, factor), "y@GRAD": f.scale(dout, 1.0)}


def _dropout_add_by_rate_tensor(g) -> list:
    """With the rate in PTensor, known at run time only, the factor is too: the grad op scales dout elementwise (its
    own adjoint), so d/d(dout) is the grad op's x@GRAD at dout = ddX, plus ddY."""
    f = Formula(g)
    dout, ddx, ddy = first(g.I("out@GRAD")), first(g.OG("x@GRAD")), first(g.OG("y@GRAD"))
    parts = [ddy] if ddy is not None else []
    if ddx is not None:
        parts.append(f.op("fused_dropout_add_grad", {"out@GRAD": ddx, "PTensor": g.I("PTensor"),
                                                     "seed_offset": g.I("seed_offset")}, dout, slot="x@GRAD",
                          same=True))
    if parts:
        f.into(first(g.IG("out@GRAD")), "sum", {"X": parts})
    return f.ops


def _dropout_add_grad_again(g) -> list:
    return _dropout_add_by_rate_tensor(g) if first(g.I("PTensor")) else _dropout_add_again(g)


defgrad("fused_dropout_add_grad", grad=_dropout_add_grad_again, no_grad_inputs=["PTensor", "seed_offset"])
