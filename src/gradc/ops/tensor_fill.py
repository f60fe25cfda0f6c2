"""In-place refills of a tensor that Paddle's PIR dialect writes for Tensor methods: fill_any (Tensor.fill_ /
zero_: every element one value), fill_diagonal (Tensor.fill_diagonal_: the value at a stepped run of flat positions,
as Paddle's kernel picks them), gaussian_inplace (Tensor.normal_ / gaussian_) and uniform_random_inplace
(Tensor.uniform_): x refilled with draws; and uniform_random_batch_size_like (a uniform draw whose batch dim is the
input's). Only fill_diagonal keeps some of x (off the filled positions, where its gradient passes); the others
overwrite all of x, so their grads are 0, as Paddle's."""

from __future__ import annotations

from ..ir import FLOAT_DTYPES, VarType, dtype_name
from ..registry import NO_GRAD, defgrad, defop, grad_op
from .composite import expansion, first
from .infer import same_as
from .legacy_shape import batch_size_like_dims

UNIFORM_ATTRS = {"min": -1.0, "max": 1.0, "seed": 0, "diag_num": 0, "diag_step": 0, "diag_val": 1.0}


def _zero_grad(grad_type: str, out: str, x: str):
    """A grad op that is 0 dOut: linear in dOut, its own gradient 0 ddX."""
    defgrad(grad_type, grad=expansion(lambda f, g: {f"{x}@GRAD": f.scale(first(g.I(f"{out}@GRAD")), 0.0)}))


def _fill_diagonal_infer(ctx):
    x = ctx.shape("X")
    if len(x) < 2:
        ctx.fail(f"fill_diagonal needs X of rank >= 2, got {x}")
    if len(x) > 2 and len(set(x)) > 1:
        ctx.fail(f"fill_diagonal needs all dims of X equal beyond rank 2, got {x}")
    return same_as("X")(ctx)


def _drawn_infer(x: str, out: str):
    def infer(ctx):
        if ctx.dtype(x) not in FLOAT_DTYPES:
            ctx.fail(f"{ctx.op.type} draws floats: {x} is {dtype_name(ctx.dtype(x))}")
        if ctx.op.type == "uniform_random_inplace" and ctx.attr("min") > ctx.attr("max"):
            ctx.fail(f"uniform_random_inplace needs min <= max, got min={ctx.attr('min')} max={ctx.attr('max')}")
        return same_as(x, out)(ctx)
    return infer


def _batch_size_like_infer(ctx):
    if ctx.attr("dtype") not in (VarType.FP32, VarType.FP64):
        ctx.fail(f"uniform_random_batch_size_like draws float32 or float64, got dtype {ctx.attr('dtype')}")
    dims = batch_size_like_dims(ctx.fail, list(ctx.attr("shape")), ctx.shape("Input"), ctx.attr("input_dim_idx"),
                                ctx.attr("output_dim_idx"))
    return {"Out": (dims, ctx.attr("dtype"))}


defop("fill_any", ["X"], attrs={"value": 0.0}, infer=same_as("X"), grad=grad_op(), tensor_attrs=["value"])
_zero_grad("fill_any_grad", "Out", "X")
# fill_diagonal_grad is dOut with the filled positions zeroed
defop("fill_diagonal", ["X"], attrs={"value": 0.0, "offset": 0, "wrap": False}, infer=_fill_diagonal_infer,
      grad=grad_op())
defop("gaussian_inplace", ["x"], ["out"], attrs={"mean": 0.0, "std": 1.0, "seed": 0},
      infer=_drawn_infer("x", "out"), grad=grad_op())
_zero_grad("gaussian_inplace_grad", "out", "x")
defop("uniform_random_inplace", ["X"], attrs=UNIFORM_ATTRS, infer=_drawn_infer("X", "Out"), grad=grad_op())
_zero_grad("uniform_random_inplace_grad", "Out", "X")
defop("uniform_random_batch_size_like", ["Input"],
      attrs={"shape": [], "input_dim_idx": 0, "output_dim_idx": 0, **UNIFORM_ATTRS, "dtype": 5},
      infer=_batch_size_like_infer, grad=NO_GRAD)
