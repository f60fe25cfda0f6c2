"""The MoE permutation ops and the experts' grouped GEMM (gradc.ops.moe_permute) on Paddle's translations of their
legacy ops (tools/paddle_moe_permute_translated.py), against references written row by row from the CUDA kernels."""

from __future__ import annotations

import numpy as np

from test_moe import _translated


def test_paddles_translated_moe_permute_and_unpermute():
    """6 tokens top 2 over 4 experts, counts [2, 3, 0, 4] padded to 2: rows 0-1 | 2-4 and padding row 5 | none |
    6-9; moe_unpermute weights each fed expert row by its probability."""
    feed, got, _ = _translated("moe_permute_unpermute")
    x, routes, probs = feed["x"], feed["routes"], feed["probs"]
    offsets, rows = [0, 2, 6, 6], np.zeros((10, 8), np.float32)
    rowmap, row_probs, row_experts = np.full((6, 4), -1), np.zeros(10, np.float32), np.full(10, -1)
    for expert in range(4):
        row = offsets[expert]
        for token in range(6):
            for column in range(2):
                if routes[token, column] == expert:
                    rows[row], rowmap[token, expert], row_probs[row] = x[token], row, probs[token, column]
                    row_experts[row] = expert
                    row += 1
    assert got["rows"].shape == (10, 8) and (row_experts == -1).sum() == 1   # row 5 pads expert 1's 3 rows to 4
    np.testing.assert_array_equal(got["rows"], rows)
    np.testing.assert_array_equal(got["rowmap"], rowmap)
    np.testing.assert_array_equal(got["row_probs"], row_probs)
    np.testing.assert_array_equal(got["row_experts"], row_experts)
    assert got["row_scales"].shape == (10, 0)
    expert_out = feed["expert_out"].astype(np.float64)
    combined, topk = np.zeros((6, 8)), np.zeros((6, 2))
    for token in range(6):
        for column, expert in enumerate(routes[token]):
            if expert >= 0:
                row = rowmap[token, expert]
                combined[token] += row_probs[row] * expert_out[row]
                topk[token, column] = row_probs[row]
    np.testing.assert_allclose(got["combined"], combined, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got["topk"], np.where(routes >= 0, probs, 0))
    np.testing.assert_allclose(got["topk"], topk, rtol=0)


def test_paddles_translated_batched_gemm_in_its_three_layouts():
    """Groups [3, 0, 4] (an empty one): lhs_i rhs[i], lhs_i rhs_t[i]^T, and lhs_i^T dout_i stacked per group."""
    feed, got, _ = _translated("batched_gemm_variants")
    lhs, groups = feed["lhs"].astype(np.float64), [slice(0, 3), slice(3, 3), slice(3, 7)]
    out = np.concatenate([lhs[rows] @ feed["rhs"][i] for i, rows in enumerate(groups)])
    out_t = np.concatenate([lhs[rows] @ feed["rhs_t"][i].T for i, rows in enumerate(groups)])
    weight_grad = np.stack([lhs[rows].T @ feed["dout"][rows] for rows in groups])
    np.testing.assert_allclose(got["out"], out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["out_t"], out_t, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got["weight_grad"], weight_grad, rtol=1e-5, atol=1e-6)
    assert not got["weight_grad"][1].any()
