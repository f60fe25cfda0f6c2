"""Cases for fused_partial_rope (gradc.ops.fused_partial_rope): heads of 7 with 4 values turned; second order through
its grad op's maker."""

from . import Case, rng
from .second_order import second_order

r = rng(70)
ROPE = {"x": r.standard_normal((2, 3, 2, 7)), "cos": r.standard_normal((1, 3, 1, 4)),
        "sin": r.standard_normal((1, 3, 1, 4))}

CASES = [Case("fused_partial_rope", ROPE, wrt=["x"]), second_order("fused_partial_rope", ROPE, wrt=["x"])]
