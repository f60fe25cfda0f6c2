"""The further MoE ops of Paddle 3.3.1 (moe_combine_no_weight) on Paddle's translations of their legacy ops
(tools/paddle_moe_translated.py), against loop-by-loop numpy references written from the CUDA kernels, and central
differences."""

from __future__ import annotations

import numpy as np

from test_moe import _translated


def _combine_no_weight_reference(rows, routes):
    """y[t] = sum over j of rows[routes[t, j]], one token and one choice at a time, in float64."""
    y = np.zeros((routes.shape[0], rows.shape[1]))
    for t in range(routes.shape[0]):
        for j in range(routes.shape[1]):
            y[t] += rows[routes[t, j]]
    return y


def test_paddles_translated_moe_combine_no_weight_sums_the_routed_rows_without_weights():
    """y against the reference (combine_weight fed but not read, as in the kernel); x@GRAD against central
    differences of sum(y dy)."""
    feed, got, _ = _translated("moe_combine_no_weight")
    rows, routes = feed["expert_rows"].astype(np.float64), feed["routes"]
    dy = feed["dcombined"].astype(np.float64)
    assert sorted(routes.reshape(-1)) == list(range(rows.shape[0]))   # each row read once
    assert not np.allclose(feed["combine_weights"], 1.0)
    np.testing.assert_allclose(got["combined"], _combine_no_weight_reference(rows, routes), rtol=1e-5, atol=1e-6)
    numeric = np.zeros_like(rows)
    for index in np.ndindex(rows.shape):
        moved = [rows.copy(), rows.copy()]
        moved[0][index] += 1e-6
        moved[1][index] -= 1e-6
        plus, minus = (np.sum(_combine_no_weight_reference(m, routes) * dy) for m in moved)
        numeric[index] = (plus - minus) / 2e-6
    np.testing.assert_allclose(got["expert_rows@GRAD"], numeric, rtol=1e-5, atol=1e-6)
