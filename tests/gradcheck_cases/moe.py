"""Cases for the mixture-of-experts ops (gradc.ops.moe). cal_aux_loss is checked where its scale is 1 (its grad
leaves the scale out by design: tests/test_moe.py)."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(67)
COUNTS = np.array([[1, 0, 2], [0, 3, 1], [2, 1, 0], [1, 1, 1], [0, 2, 2]], np.int64)


def aux(tokens_mask: bool) -> dict:
    inputs = {"gate_prob": r.uniform(0.1, 1.0, (5, 3)), "dispatch_mask": COUNTS}
    return {**inputs, "tokens_mask": np.array([1.0, 0.0, 1.0, 1.0, 1.0])} if tokens_mask else inputs


ATTRS = {"num_experts": 3, "use_group": True, "moe_k": 2, "clip_min": 1.0}

CASES = [
    Case("cal_aux_loss", aux(False), ATTRS, wrt=["gate_prob"]),
    Case("cal_aux_loss", aux(True), {**ATTRS, "use_group": False}, wrt=["gate_prob"]),
    second_order("cal_aux_loss", aux(True), ATTRS),
]
