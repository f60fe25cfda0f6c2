"""Cases for the optional inputs of cal_aux_loss (gradc.ops.moe): 4 tokens over 2 experts, 3 of them routed to
expert 0 and 2 to expert 1; each expected value from the kernel's formula written here with numpy."""

import numpy as np

from . import SlotCase

GATE = np.array([[0.6, 0.4], [0.3, 0.7], [0.9, 0.1], [0.5, 0.5]], np.float32)
COUNTS = np.array([3, 2], np.int64)
TOKENS = np.array([1, 1, 0, 1], np.float32)
ATTRS = {"num_experts": 2, "use_group": False, "moe_k": 1, "clip_min": 1.0}


def aux(seqlen: float, scale: float = 1.0) -> dict:
    ce = COUNTS / seqlen
    loss = np.sum(ce * GATE.astype(np.float64).sum(0) / seqlen) * 2 * scale
    return {"l_aux_loss": np.array(loss, np.float32), "seqlen_float": np.array(seqlen, np.float32),
            "ce": ce.astype(np.float32)}


DISPATCHED = np.array([True, False, True, True, True, True])
CASES = [
    SlotCase("cal_aux_loss", "tokens_mask", {"gate_prob": GATE, "dispatch_mask": COUNTS, "tokens_mask": TOKENS},
             aux(3.0), ATTRS),
    # a global batch of 6 tokens, 5 dispatched: the loss scaled by 5 / 3 local tokens
    SlotCase("cal_aux_loss", "dispatch_tokens_mask", {"gate_prob": GATE, "dispatch_mask": COUNTS,
                                                      "tokens_mask": TOKENS, "dispatch_tokens_mask": DISPATCHED},
             aux(5.0, 5.0 / 3.0), ATTRS),
]

# corr_bias moves the choice (token 0 to expert 1), not the weight: each token's top 1 of 2 experts, capacity 2
PROBS = np.array([[0.55, 0.45], [0.3, 0.7]], np.float32)
ROWS = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
CASES += [SlotCase(op, "corr_bias",
                   {"x": ROWS, "gate_logits": PROBS, "corr_bias": np.array([0.0, 0.2], np.float32)},
                   {"combine_weights": np.array([[0.45], [0.7]], np.float32),
                    "expert_id": np.array([[1], [1]], np.int32), "y": np.array([[0, 0], [0, 0], ROWS[0], ROWS[1]]),
                    "scatter_index": np.array([[2, 3]], np.int32), "expert_offset": np.array([0, 2], np.int64)},
                   {"k": 1, "capacity": 2, "use_pad": True}) for op in ("moe_gate_dispatch", "moe_gate_dispatch_auto")]
# the same routing through moe_gate_dispatch_permute on 2 ranks of 1 expert: y [1 local expert, 2 ranks, 2, 2]
CASES.append(SlotCase("moe_gate_dispatch_permute", "corr_bias",
                      {"x": ROWS, "gate_logits": PROBS, "corr_bias": np.array([0.0, 0.2], np.float32)},
                      {"combine_weights": np.array([[0.45], [0.7]], np.float32),
                       "expert_id": np.array([[1], [1]], np.int32), "y": np.array([[[[0, 0], [0, 0]], ROWS]]),
                       "scatter_index": np.array([[2, 3]], np.int32), "expert_offset": np.array([0, 2], np.int64)},
                      {"k": 1, "capacity": 2, "world_size": 2}))
