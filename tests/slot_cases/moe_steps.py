"""Cases for the optional inputs of fused_linear_param_grad_add (gradc.ops.fused_grad_steps: the accumulators) and
moe_permute (gradc.ops.moe_permute: the float8 path's scale rows); each expected value written here with numpy."""

import numpy as np

from . import SlotCase

X = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.0]], np.float32)
DOUT = np.array([[1.0, 0.0, 2.0], [-1.0, 1.0, 0.5], [2.0, 2.0, 1.0]], np.float32)
DWEIGHT, DBIAS = np.full((2, 3), 0.25, np.float32), np.array([1.0, -1.0, 0.5], np.float32)
ATTRS = {"multi_precision": False, "has_bias": True}
CASES = [
    SlotCase("fused_linear_param_grad_add", "dweight", {"x": X, "dout": DOUT, "dweight": DWEIGHT},
             {"dweight_out": X.T @ DOUT + DWEIGHT, "dbias_out": DOUT.sum(0)}, ATTRS),
    SlotCase("fused_linear_param_grad_add", "dbias", {"x": X, "dout": DOUT, "dbias": DBIAS},
             {"dweight_out": X.T @ DOUT, "dbias_out": DOUT.sum(0) + DBIAS}, ATTRS),
]

# 3 tokens over 2 experts (token 1 to expert 0, tokens 0 and 2 to expert 1), rows padded to 2: each row's scale row
SCALE = np.array([[0.5, 2.0], [4.0, 1.0], [3.0, 0.25]], np.float32)
CASES.append(SlotCase("moe_permute", "scale", {"hidden_states": X, "scale": SCALE,
                                               "expert_routemap_topk": np.array([[1], [0], [1]], np.int32),
                                               "expert_prob_topk": np.ones((3, 1), np.float32)},
                      {"scale_unzipped": np.array([SCALE[1], [0, 0], SCALE[0], SCALE[2]]),
                       "hidden_states_unzipped": np.array([X[1], [0, 0], X[0], X[2]])},
                      {"num_experts": 2, "tokens_per_expert": [1, 2], "padding_alignment": 2}))
