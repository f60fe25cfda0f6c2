"""Cases for the optional inputs of the float8 ops (gradc.ops.fp8, gradc.ops.fp8_split): small integer values,
exact in float8_e4m3fn and bfloat16, so each expected value is the kernel's formula written here with numpy."""

import numpy as np

from gradc.ir import VarType

from . import SlotCase

BF16, E4M3 = VarType.BF16, VarType.FP8_E4M3FN

# out = x @ y^T + bias, in bfloat16: integers far below 256, so every sum is exact
X, Y = np.array([[1.0, 2.0] * 8, [3.0, -1.0] * 8], np.float32), np.array([[1.0, 0.0] * 8, [0.0, 2.0] * 8], np.float32)
BIAS = np.array([5.0, -7.0], np.float32)
CASES = [SlotCase("fp8_fp8_half_gemm_fused", "bias", {"x": X, "y": Y, "bias": BIAS}, {"out": X @ Y.T + BIAS},
                  {"transpose_y": True, "output_dtype": "bfloat16"}, dtypes={"x": E4M3, "y": E4M3, "bias": BF16})]

# swiglu of x = [2, ...] | [3, ...] weighted by prob 2: every act equal, so each block's scale is 448 / act and every
# value quantizes to 448; the scale output is act / 448
GATE = np.full((2, 128), 2.0, np.float32)
ACT = np.float32(2.0 / (1.0 + np.exp(np.float32(-2.0)))) * np.float32(3.0) * np.float32(2.0)
CASES.append(SlotCase("fused_weighted_swiglu_act_quant", "prob",
                      {"x": np.concatenate([GATE, np.full((2, 128), 3.0, np.float32)], 1),
                       "prob": np.array([2.0, 2.0], np.float32)},
                      {"out": np.full((2, 128), 448.0, np.float32), "scale": np.full((2, 1), 1 / (448 / ACT))},
                      dtypes={"x": BF16}))

# a float8 x of 2s dequantized by input_scales 0.5 gives 1s: each column's scale 448, out 448, scales 1 / 448
ONES = np.ones((128, 4), np.float32)
CASES.append(SlotCase("fused_transpose_split_quant", "input_scales",
                      {"x": 2 * ONES, "input_scales": np.full((128, 1), 0.5, np.float32)},
                      {"out": [np.full((4, 128), 448.0, np.float32)], "scales": [np.full((1, 4), 1 / 448)]},
                      {"tokens_per_expert": [128]}, overrides=False, dtypes={"x": E4M3}))
# the tensors give two experts of 128 rows where the attribute says one of 256 (a second run without them could
# not declare two outputs for one expert)
HALVES = 3 * np.ones((256, 4), np.float32)
SPLIT = {"out": [np.full((4, 128), 448.0, np.float32)] * 2, "scales": [np.full((1, 4), 3 / 448)] * 2}
CASES += [SlotCase(op, slot, {"x": x, slot: tokens}, SPLIT, {"tokens_per_expert": [256]}, overrides=False,
                   dtypes={"x": BF16})
          for op, x in (("fused_transpose_split_quant", HALVES),
                        ("fused_transpose_wlch_split_quant", HALVES.reshape(1, 2, 128, 4)))
          for slot, tokens in (("TokensPerExpertTensor", np.array([128, 128], np.int64)),
                               ("TokensPerExpertTensorList", [np.array([128], np.int64)] * 2))]

# corr_bias moves token 0 to expert 1 (as in tests/slot_cases/moe.py); each row of 2s quantizes to 448, scale 1 / 224
PROBS = np.array([[0.55, 0.45], [0.3, 0.7]], np.float32)
CASES.append(SlotCase("moe_gate_dispatch_and_quant", "corr_bias",
                      {"x": np.full((2, 128), 2.0, np.float32), "gate_logits": PROBS,
                       "corr_bias": np.array([0.0, 0.2], np.float32)},
                      {"expert_id": np.array([[1], [1]], np.int32),
                       "out_fp8": np.concatenate([np.zeros((2, 128)), np.full((2, 128), 448.0)]).astype(np.float32),
                       "scale": np.array([[1.0], [1.0], [1 / 224], [1 / 224]], np.float32)},
                      {"k": 1, "capacity": 2, "use_pad": True, "use_pow2_scale": False}, dtypes={"x": BF16}))
