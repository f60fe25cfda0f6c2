"""The MoE index ops (gradc.ops.moe_routing) on Paddle's translations of their legacy ops
(tools/paddle_moe_routing_translated.py), against references written from the CUDA kernels' loops (one thread,
in order) and, for int_bincount, Paddle's CPU numbers of its own composition."""

from __future__ import annotations

import numpy as np
import pytest

from test_moe import _translated


def test_paddles_translated_gate_counts_places_limits_and_prunes_the_routes():
    """7 tokens top 2 over 4 experts with two choices already -1, capacity 3 per expert."""
    feed, got, _ = _translated("moe_gate_count_limit_prune")
    gate, flat = feed["gate"], feed["gate"].reshape(-1)
    counts = np.array([np.count_nonzero(flat == e) for e in range(4)])
    np.testing.assert_array_equal(got["counts"], counts)
    assert counts.max() > 3   # the capacity limit bites
    # assign_pos: each expert's run of places, filled from its end as the loop meets its entries
    pos, left = np.zeros(counts.sum(), np.int64), np.cumsum(counts)
    for i, expert in enumerate(flat):
        if expert >= 0:
            left[expert] -= 1
            pos[left[expert]] = i
    np.testing.assert_array_equal(got["pos"], pos)
    assert sorted(got["pos"]) == sorted(np.nonzero(flat >= 0)[0])
    limited = np.minimum(counts, 3)
    np.testing.assert_array_equal(got["limited"], limited)
    pruned, spent = flat.copy(), np.zeros(4, np.int64)
    for i, expert in enumerate(flat):
        if expert >= 0:
            spent[expert] += 1
            pruned[i] = expert if spent[expert] <= limited[expert] else -1
    np.testing.assert_array_equal(got["pruned"], pruned.reshape(gate.shape))
    assert np.count_nonzero(got["pruned"] == -1) > np.count_nonzero(gate == -1)
    routed = gate.copy()
    routed[2 * feed["topk_value"][:, 1] < feed["prob"], 1] = -1
    np.testing.assert_array_equal(got["routed"], routed)
    assert 0 < np.count_nonzero(routed != gate) < len(gate)
    assert (got["routed"][:, 0] == gate[:, 0]).all()


@pytest.mark.parametrize("case, dtype", [("moe_index_helpers", np.int64), ("moe_index_helpers_int32", np.int32)])
def test_paddles_translated_index_helpers(case, dtype):
    """int_bincount over [1, 5) (Paddle's CPU composition agrees), expand_modality_expert_id (groups of 3, 2 experts
    per modality, modality 1), build_src_rank_and_local_expert_id (counts [2, 0, 3, 1], 2 experts a rank)."""
    feed, got, paddle = _translated(case)
    ids = feed["ids"].reshape(-1)
    bins = np.array([np.count_nonzero(ids == v) for v in range(1, 5)])
    assert got["bins"].dtype == dtype and np.count_nonzero((ids < 1) | (ids >= 5)) > 0
    np.testing.assert_array_equal(got["bins"], bins)
    np.testing.assert_array_equal(got["bins"], paddle["bins"])
    expert = feed["expert_id"] + np.array([0, 3])
    np.testing.assert_array_equal(got["expanded"], expert // 2 * 4 + expert % 2 + 2)
    experts = [0, 0, 2, 2, 2, 3]
    np.testing.assert_array_equal(got["src_rank"], np.array(experts) // 2)
    np.testing.assert_array_equal(got["local_expert_id"], np.array(experts) % 2)


def test_paddles_translated_global_scatter_and_gather_at_one_rank_send_the_rows_to_themselves():
    """World size 1: each expert's rows go to the one rank and come back in order."""
    feed, got, _ = _translated("moe_exchange_one_rank")
    np.testing.assert_array_equal(got["scattered"], feed["rows"])
    np.testing.assert_array_equal(got["gathered"], feed["rows"])
