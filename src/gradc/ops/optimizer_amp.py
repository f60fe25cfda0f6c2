"""Dynamic loss scaling as paddle.static.amp.decorate writes it (docs/optimizers.md, "AMP"): after backward,
check_finite_and_unscale divides the gradients by the loss scale and flags an inf or nan among them;
update_loss_scaling then zeroes every gradient of a flagged step (the optimizer ops step by zero) and grows or
shrinks the scale by its good and bad step counters. Both write in place (Out is X, LossScaling is
PrevLossScaling, ...) and have no gradient."""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop
from ..shapes import numel
from .optimizer import float32


def check_one_value(names, shape, fail, *slots: str) -> None:
    """Each slot's var (a scale, a flag, a counter) holds one value; ``names(slot)`` and ``shape(slot)`` read
    the op (from VarDescs or arrays), ``fail`` raises. Inference and the kernels ask the same."""
    for slot in slots:
        dims = shape(slot) if names(slot) else None
        if dims is not None and all(d >= 0 for d in dims) and numel(dims) != 1:
            fail(f"{slot} '{names(slot)[0]}' has shape {list(dims)}, but it must hold one value")


def _like_x(ctx) -> list:
    return [(ctx.shape("X", i), ctx.dtype("X", i)) for i in range(len(ctx.op.input("X")))]


def _check_finite_and_unscale_infer(ctx):
    check_one_value(ctx.op.input, ctx.shape, ctx.fail, "Scale")
    return {"Out": _like_x(ctx), "FoundInfinite": ([1], VarType.BOOL)}


defop("check_finite_and_unscale", ["X[]", "Scale"], ["Out[]", "FoundInfinite"],
      infer=_check_finite_and_unscale_infer, grad=NO_GRAD)


def _update_loss_scaling_infer(ctx):
    check_one_value(ctx.op.input, ctx.shape, ctx.fail, "FoundInfinite", "PrevLossScaling", "InGoodSteps", "InBadSteps")
    return {"Out": _like_x(ctx), "LossScaling": (ctx.shape("PrevLossScaling"), ctx.dtype("PrevLossScaling")),
            "OutGoodSteps": (ctx.shape("InGoodSteps"), VarType.INT32),
            "OutBadSteps": (ctx.shape("InBadSteps"), VarType.INT32)}


# Paddle's op gives these attributes no default (decorate's are given here) and checks no range: a decr_ratio
# over 1 grows the scale, as in Paddle
LOSS_SCALING_ATTRS = {"incr_every_n_steps": 1000, "decr_every_n_nan_or_inf": 2, "incr_ratio": 2.0,
                      "decr_ratio": 0.8, "stop_update": False}

defop("update_loss_scaling", ["X[]", "FoundInfinite", "PrevLossScaling", "InGoodSteps", "InBadSteps", "StopUpdate?"],
      ["Out[]", "LossScaling", "OutGoodSteps", "OutBadSteps"],
      attrs={k: float32(v) for k, v in LOSS_SCALING_ATTRS.items()}, infer=_update_loss_scaling_infer, grad=NO_GRAD)

# decorate(Adam) copies FoundInfinite to the host (dst_place_type 0: CPU) for Adam's SkipUpdate: one device here
defop("memcpy", ["X"], attrs={"dst_place_type": 0}, infer=lambda ctx: {"Out": (ctx.shape("X"), ctx.dtype("X"))},
      grad=NO_GRAD)
