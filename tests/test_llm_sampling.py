"""top_p_sampling (gradc.ops.llm_sampling): the deterministic part (order, top-k, the top-p set, a row whose first
probability reaches top_p) against Paddle's translated programs (tools/paddle_llm_attention_programs.py), and the
distributional contract of the draws, which cannot follow Paddle's curand stream."""

import numpy as np
import pytest

from gradc.errors import ProgramError
from test_extra_math import run
from test_llm_attention import _translated


def top_p_set(row, top_p):
    """The ids of the shortest descending head whose running sum reaches top_p (ties: the lower id first)."""
    order = sorted(range(len(row)), key=lambda i: (-row[i], i))
    total, head = 0.0, []
    for i in order:
        head.append(i)
        total += row[i]
        if total >= top_p:
            break
    return head


@pytest.mark.parametrize("case", ["top_p_sampling_truncated_threshold_seeds", "top_p_sampling_non_truncated"])
def test_paddles_translated_top_p_program_draws_inside_the_top_p_set(case):
    feed, got = _translated(case)
    x, ps, floor = feed["x"], feed["ps"], feed.get("threshold", np.zeros(4, np.float32))
    assert got["ids"].shape == (4, 1) and got["ids"].dtype == np.int64
    for b in range(4):
        head, drawn = top_p_set(x[b], ps[b]), int(got["ids"][b, 0])
        assert drawn in head and got["out"][b, 0] == x[b, drawn]
        assert x[b, drawn] >= floor[b] or drawn == head[0]
        order = sorted(range(12), key=lambda i: (-x[b, i], i))
        assert got["topk_ids"][b].tolist() == order[:3]
        np.testing.assert_array_equal(got["topk_scores"][b], x[b, order[:3]])
    assert got["ids"][0, 0] == 5   # row 0's first probability reaches its top_p: no draw


def test_top_p_sampling_with_topp_seed_repeats_its_draws():
    feed, first = _translated("top_p_sampling_truncated_threshold_seeds")
    _, again = _translated("top_p_sampling_truncated_threshold_seeds")
    np.testing.assert_array_equal(first["ids"], again["ids"])


@pytest.mark.parametrize("mode", ["truncated", "non-truncated", "truncate"])
def test_top_p_sampling_draws_with_the_kernels_probabilities(mode):
    """Truncated: P(id) = min(p, top_p - sum before) / top_p over the set; non-truncated: p / the set's sum, and so
    for the legacy proto's default "truncate", which the kernel's test for "truncated" sends there."""
    row = np.array([0.05, 0.4, 0.1, 0.25, 0.2], np.float32)
    rows, top_p = 6000, 0.8
    (ids,) = run("top_p_sampling", {"x": np.tile(row, (rows, 1)), "ps": np.full(rows, top_p, np.float32)}, ["ids"],
                 {"mode": mode, "seed": 3})
    counts = np.bincount(ids[:, 0], minlength=5) / rows
    if mode == "truncated":   # order 1 (0.4), 3 (0.25), 4 (0.2): 0.4, 0.25 and the 0.15 left of 0.8
        want = np.array([0, 0.4, 0, 0.25, 0.15]) / top_p
    else:
        want = np.array([0, 0.4, 0, 0.25, 0.2]) / 0.85
    np.testing.assert_allclose(counts, want, atol=0.025)


def test_top_p_sampling_threshold_turns_a_low_draw_to_the_nearest_higher_token():
    row = np.array([[0.3, 0.3, 0.2, 0.2]], np.float32)   # order 0, 1, 2, 3
    rows = np.tile(row, (400, 1))
    (ids,) = run("top_p_sampling", {"x": rows, "ps": np.ones(400, np.float32),
                                    "threshold": np.full(400, 0.25, np.float32)}, ["ids"], {"seed": 1})
    assert set(ids[:, 0].tolist()) == {0, 1}


def test_top_p_sampling_refuses_a_top_k_past_the_vocab():
    with pytest.raises(ProgramError, match="k=5 is more than the vocab 4"):
        run("top_p_sampling", {"x": np.ones((2, 4), np.float32), "ps": np.ones(2, np.float32)}, ["ids"], {"k": 5})
