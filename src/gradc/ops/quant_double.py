"""Second derivatives of gradc.ops.quant's straight-through grad ops: X@GRAD = Out@GRAD is the identity in Out@GRAD,
so the grad of Out@GRAD is the grad of X@GRAD, copied (and the copy's own grad is a copy again)."""

from __future__ import annotations

from ..registry import defgrad
from . import quant  # noqa: F401  (registers the grad ops)
from .composite import Formula, first

STRAIGHT_THROUGH = ("fake_quantize_dequantize_abs_max_grad", "fake_channel_wise_quantize_dequantize_abs_max_grad",
                    "fake_quantize_dequantize_moving_average_abs_max_grad", "straight_through_estimator_grad")


def _identity_grad(g):
    f = Formula(g)
    f.into(first(g.IG("Out@GRAD")), "assign", {"X": g.OG("X@GRAD")})
    return f.ops


for _name in STRAIGHT_THROUGH:
    defgrad(_name, grad=_identity_grad)
