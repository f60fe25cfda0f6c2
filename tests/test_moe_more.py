"""The further MoE ops of Paddle 3.3.1 (moe_combine_no_weight, moe_gate_dispatch_permute, the partial dispatch) on
Paddle's translations of their legacy ops (tools/paddle_moe_translated.py, tools/paddle_moe_permute_translated.py),
against loop-by-loop numpy references written from the CUDA kernels, and central differences."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.pir import load_pir
from test_moe import _dispatch_reference, _translated


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


def test_paddles_translated_moe_gate_dispatch_permute_lays_the_padded_dispatch_out_by_rank():
    """4 experts on 2 ranks, top 2, capacity 2: the padded dispatch's routing (scatter_index, weights, offsets, ids)
    with y's row of expert e, place p at y[e % 2, e // 2, p], written loop by loop; the grad reads dy there."""
    feed, got, _ = _translated("moe_dispatch_permute")
    x, probs, bias = (feed[name].astype(np.float64) for name in ("x", "gate_logits", "corr_bias"))
    padded, weights, scatter, offsets, ids = _dispatch_reference(x, probs, bias, 2, 2, True)
    assert 0 < np.count_nonzero(weights == 0) < weights.size   # some choices dropped, not all
    y = np.zeros((2, 2, 2, x.shape[1]))
    for expert in range(4):
        for place in range(2):
            y[expert % 2, expert // 2, place] = padded[expert * 2 + place]
    np.testing.assert_allclose(got["y"], y, rtol=1e-6)
    np.testing.assert_array_equal(got["scatter_index"], scatter)
    np.testing.assert_array_equal(got["expert_offset"], offsets)
    np.testing.assert_array_equal(got["expert_id"], ids)
    np.testing.assert_allclose(got["combine_weights"], weights, rtol=1e-6)
    dy, dx, dgate = feed["dy"].astype(np.float64), np.zeros_like(x), np.zeros_like(probs)
    for t in range(x.shape[0]):
        for j in range(2):
            if weights[t, j] > 0:
                expert, place = divmod(int(scatter[j, t]), 2)
                dx[t] += dy[expert % 2, expert // 2, place]
                dgate[t, ids[t, j]] = feed["dweights"][t, j]
    np.testing.assert_allclose(got["x@GRAD"], dx, rtol=1e-6)
    np.testing.assert_allclose(got["gate_logits@GRAD"], dgate, rtol=1e-6)


def test_moe_combine_auto_grads_scatter_index_result_is_zeros():
    """moe_combine_auto_grad's third result (scatter_index_grad, which Paddle declares) of the translated program:
    an index has no gradient, so zeros of its shape and dtype."""
    directory = Path(__file__).parent / "data" / "paddle" / "pir_gpu_only" / "moe_dispatch_combine_auto"
    program = load_pir(directory / "program.json")
    grad = next(op for op in program.global_block.ops if op.type == "moe_combine_auto_grad")
    (name,) = grad.outputs["scatter_index@GRAD"]
    with np.load(directory / "feed.npz") as archive:
        feed = {key: archive[key] for key in archive.files}
    (got,) = gradc.Executor().run(program, feed, [name], gradc.Scope())
    assert got.dtype == np.int32 and got.shape == feed["routes"].shape and not got.any()


def _partial_reference(ids, capacity, start, end, pad, reverse):
    """{(token, j): row} of the kept choices, written from the CUDA kernel's sorts: by expert, rank j, token; the
    capacity cut (the last choices kept with reverse_token_drop, without use_pad); then by token within an expert."""
    rows, row = {}, 0
    for place, expert in enumerate(range(start, end)):
        chosen = [(j, t) for t in range(ids.shape[0]) for j in range(ids.shape[1]) if ids[t, j] == expert]
        chosen.sort()
        kept = chosen[-capacity:] if reverse and not pad else chosen[:capacity]
        row = place * capacity if pad else row
        for j, t in sorted(kept, key=lambda choice: choice[1]):   # by token
            rows[t, j] = row
            row += 1
    return rows


@pytest.mark.parametrize("case, pad, reverse", [("moe_dispatch_partial_pad", True, False),
                                                ("moe_dispatch_partial_reverse_drop", False, True)])
def test_paddles_translated_partial_dispatch_routes_a_ranks_share_of_the_experts(case, pad, reverse):
    """Experts 1 .. 2 of 4, capacity 3 (expert 2's six choices cut to 3, by rank then token, or the last 3); the
    outputs against the kernel's routing written choice by choice, the grad op against its gather."""
    feed, got, _ = _translated(case)
    ids, x, weights = feed["ids"], feed["x"], feed["weights"]
    rows = _partial_reference(ids, 3, 1, 3, pad, reverse)
    assert len(rows) == 5   # with use_pad expert 1's third row is padding
    y, scatter = np.zeros((6 if pad else 5, 8), np.float32), np.zeros((2, 6), np.int32)
    rev = np.full(len(y), 6, np.int32)
    weights_out = np.zeros_like(weights)
    for (t, j), row in rows.items():
        y[row], scatter[j, t], rev[row], weights_out[t, j] = x[t], row, t, weights[t, j]
    np.testing.assert_array_equal(got["y"], y)
    np.testing.assert_array_equal(got["scatter_index"], scatter)
    np.testing.assert_array_equal(got["scatter_index_rev"], rev)
    np.testing.assert_array_equal(got["weights_out"], weights_out)
    np.testing.assert_array_equal(got["expert_offset"], np.bincount(ids.reshape(-1), minlength=4))
    np.testing.assert_array_equal(got["expert_nums_local"], [0, 2, 6 if pad else 3, 0])
    dx = np.zeros_like(x, dtype=np.float64)
    for (t, _), row in rows.items():
        dx[t] += feed["dy"][row]
    np.testing.assert_allclose(got["x@GRAD"], dx, rtol=1e-6)
    np.testing.assert_array_equal(got["weights@GRAD"], np.where(weights_out > 0, feed["dweights"], 0))
