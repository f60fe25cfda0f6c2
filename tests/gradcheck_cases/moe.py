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

# 5 tokens over 3 experts, top 2, capacity 3 with use_pad (one choice dropped) and without; probabilities apart, so
# the choice is stable under the central differences
PROBS = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.7, 0.05, 0.25], [0.1, 0.15, 0.75], [0.45, 0.35, 0.2]])
DISPATCH = {"x": r.standard_normal((5, 4)), "gate_logits": PROBS, "corr_bias": np.array([0.0, 0.02, -0.01])}
COMBINE = {"x": r.standard_normal((7, 3)), "combine_weights": r.uniform(0.1, 1.0, (4, 2)),
           "scatter_index": np.array([[0, 3], [6, 1], [2, 5], [4, 0]], np.int32)}

# 6 dispatched rows, 3 tokens top 2: row 4 read twice (its grad accumulates), row 5 by nobody
NO_WEIGHT = {"x": r.standard_normal((6, 3)), "combine_weight": r.uniform(0.1, 1.0, (3, 2)),
             "scatter_index": np.array([[0, 4], [4, 1], [2, 3]], np.int32)}

CASES += [
    Case("moe_combine_no_weight", NO_WEIGHT, wrt=["x"]),
    second_order("moe_combine_no_weight", NO_WEIGHT),
    Case("moe_gate_dispatch", DISPATCH, {"k": 2, "capacity": 3, "use_pad": True}, wrt=["x", "gate_logits"]),
    Case("moe_gate_dispatch", DISPATCH, {"k": 2, "capacity": 2, "use_pad": False}, wrt=["x", "gate_logits"]),
    Case("moe_gate_dispatch_permute", DISPATCH, {"k": 2, "capacity": 3, "world_size": 3}, wrt=["x", "gate_logits"]),
    Case("moe_gate_dispatch_auto", DISPATCH, {"k": 2, "capacity": 3, "use_pad": True}, wrt=["x", "gate_logits"]),
    Case("moe_combine", COMBINE, wrt=["x", "combine_weights"]),
    second_order("moe_combine", COMBINE),
    Case("moe_combine_auto", COMBINE, wrt=["x", "combine_weights"]),
    second_order("moe_combine_auto", COMBINE),
]

# the partial dispatch of given routes to experts 1 .. 2 of 3, capacity 2: expert 1's third choice dropped
PARTIAL = {"x": r.standard_normal((4, 3)), "combine_weights": r.uniform(0.1, 1.0, (4, 2)),
           "expert_id": np.array([[0, 1], [1, 2], [1, 0], [2, 1]], np.int32)}
PARTIAL_ATTRS = {"k": 2, "capacity": 2, "num_experts": 3, "expert_start_index": 1, "expert_end_index": 3}
CASES += [Case("moe_gate_dispatch_partial_nosoftmaxtopk", PARTIAL, PARTIAL_ATTRS, wrt=["x", "combine_weights"]),
          Case("moe_gate_dispatch_partial_nosoftmaxtopk", PARTIAL, {**PARTIAL_ATTRS, "use_pad": False,
                                                                    "reverse_token_drop": True},
               wrt=["x", "combine_weights"]),
          second_order("moe_gate_dispatch_partial_nosoftmaxtopk", PARTIAL, PARTIAL_ATTRS),
          second_order("moe_gate_dispatch_partial_nosoftmaxtopk", PARTIAL, {**PARTIAL_ATTRS, "use_pad": False,
                                                                            "reverse_token_drop": True})]

# the dispatches' grads are linear in their output grads under the routing (some choices dropped at capacity 3)
CASES += [second_order("moe_gate_dispatch", DISPATCH, {"k": 2, "capacity": 3, "use_pad": True}),
          second_order("moe_gate_dispatch", DISPATCH, {"k": 2, "capacity": 3, "use_pad": False}),
          second_order("moe_gate_dispatch_permute", DISPATCH, {"k": 2, "capacity": 3, "world_size": 3}),
          second_order("moe_gate_dispatch_auto", DISPATCH, {"k": 2, "capacity": 3, "use_pad": True})]
