"""Cases for the MoE token permutation and the experts' grouped GEMM (gradc.ops.moe_permute)."""

import numpy as np

from . import Case, rng

r = rng(68)

# 5 tokens top 2 over 3 experts (two choices -1); expert counts [3, 1, 4] padded to 2: rows 0-2 | 4 | 6-9, 10 rows
ROUTES = np.array([[0, 2], [2, -1], [1, 0], [-1, 2], [2, 0]], np.int32)
PERMUTE = {"hidden_states": r.standard_normal((5, 3)), "expert_routemap_topk": ROUTES,
           "expert_prob_topk": r.uniform(0.1, 1.0, (5, 2))}
PERMUTE_ATTRS = {"num_experts": 3, "tokens_per_expert": [3, 1, 4], "padding_alignment": 2}
ROWMAP = np.array([[0, -1, 6], [-1, -1, 7], [1, 4, -1], [-1, -1, 8], [2, -1, 9]], np.int32)
UNPERMUTE = {"hidden_states_unzipped": r.standard_normal((10, 3)), "zipped_expertwise_rowmap": ROWMAP,
             "expert_routemap_topk": ROUTES, "token_prob_unzipped": r.uniform(0.1, 1.0, 10)}
UNPERMUTE_ATTRS = {"total_zipped_tokens_num": 5, "num_experts": 3}

# 7 rows in groups [2, 0, 5] (an empty group) through 3 experts' [4, 3] weights
GEMM = {"lhs": r.standard_normal((7, 4)), "rhs": r.standard_normal((3, 4, 3))}
GEMM_T = {"lhs": r.standard_normal((7, 4)), "rhs": r.standard_normal((3, 3, 4))}
GEMM_K = {"lhs": r.standard_normal((7, 4)), "rhs": r.standard_normal((7, 3))}
SIZES = {"batch_sizes": [2, 0, 5]}

CASES = [
    Case("moe_permute", PERMUTE, PERMUTE_ATTRS, wrt=["hidden_states", "expert_prob_topk"]),
    Case("moe_unpermute", UNPERMUTE, UNPERMUTE_ATTRS, wrt=["hidden_states_unzipped", "token_prob_unzipped"]),
    Case("moe_unpermute", UNPERMUTE, {**UNPERMUTE_ATTRS, "using_weighted_combine": True},
         wrt=["hidden_states_unzipped", "token_prob_unzipped"]),
    Case("batched_gemm", GEMM, SIZES),
    Case("batched_gemm", GEMM_T, {**SIZES, "trans_rhs": True}),
    Case("batched_gemm", GEMM_K, {**SIZES, "trans_lhs": True}),
]   # second order: second_order_variants.py (moe_permute's, moe_unpermute's and batched_gemm's makers)
