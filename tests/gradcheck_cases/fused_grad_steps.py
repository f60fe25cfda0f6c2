"""Cases for gradc.ops.fused_grad_steps: apply_per_channel_scale, the one differentiable op (by gradc's maker; its
second order: second_order_variants.py)."""

from . import Case, rng

r = rng(69)

CASES = [Case("apply_per_channel_scale", {"x": r.standard_normal((3, 4)), "scales": r.uniform(0.5, 2.0, 4)})]
