"""The ranking metrics' per-query AUC (gradc.training.ranking): the share of relevant-irrelevant pairs in order, a tie
half, counted without forming the pairs."""

import subprocess
import sys

import numpy as np
import pytest

import gradc
from gradc.errors import GradcError, GradcNotice
from gradc.layers import ProgramBuilder
from gradc.training.ranking import RankingTally


def _tally(scores, relevance, queries) -> RankingTally:
    tally = RankingTally(("score", "rel", "qid"), [3], None)
    tally.add(scores, {"rel": relevance, "qid": queries}, "set")
    return tally


def test_query_auc_is_the_pairs_in_order_with_ties_half():
    rng = np.random.default_rng(7)
    scores, relevance = rng.integers(0, 4, 200).astype(float), rng.integers(0, 3, 200)
    queries = rng.integers(0, 10, 200)
    expected = []
    for query in np.unique(queries):
        mine = queries == query
        pairs = scores[mine & (relevance > 0)][:, None] - scores[mine & (relevance == 0)][None, :]
        expected.append(np.mean((pairs > 0) + 0.5 * (pairs == 0)))
    assert _tally(scores, relevance, queries).results()["query_auc"] == pytest.approx(np.mean(expected), abs=1e-12)


def test_query_auc_of_a_large_query_fits_in_a_small_memory():
    """One query of 40,000 documents: its 4e8 pairs took 3 GiB (a MemoryError under a 1.5 GB limit)."""
    script = ("import resource, numpy as np; resource.setrlimit(resource.RLIMIT_AS, (1500 << 20, 1500 << 20)); "
              "from gradc.training.ranking import RankingTally; t = RankingTally(('s', 'r', 'q'), [5], None); "
              "rng = np.random.default_rng(0); n = 40000; "
              "t.add(rng.normal(size=n), {'r': rng.integers(0, 2, n), 'q': np.zeros(n, int)}, 'set'); "
              "print(t.results()['query_auc'])")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and 0.45 < float(run.stdout) < 0.55, run.stderr[-300:]


def test_nan_scores_make_every_ranking_metric_undefined():
    """NaN scores have no place in a ranking: each metric nan with a note (an error stopped train --eval unsaved)."""
    with pytest.warns(GradcNotice, match="scores 'score' hold 1 NaN: nothing to rank by: NDCG, MRR and the AUC are "
                                         "undefined"):
        results = _tally(np.array([0.5, np.nan, 0.1]), np.array([1, 0, 0]), np.zeros(3, int)).results()
    assert results.keys() == {"ndcg@3", "hit@3", "mrr", "query_auc"} and all(np.isnan(list(results.values())))


def test_nan_scores_of_entries_the_mask_leaves_out_are_not_ranked():
    """A listwise ranker's padded entries may score NaN (a log of their zero features): --mask leaves them out of
    every metric, so they were refused for nothing; a NaN among the real entries still makes them undefined."""
    scores = np.array([[0.9, 0.1, 0.4, np.nan], [0.2, 0.8, np.nan, np.nan]])
    relevance, mask = np.array([[1, 0, 2, 0], [1, 0, 0, 0]]), np.array([3, 2])
    masked = RankingTally(("s", "r"), [1, 2], "m")
    masked.add(scores, {"r": relevance, "m": mask}, "set")
    real = RankingTally(("s", "r"), [1, 2], None)
    for row, rel, length in zip(scores, relevance, mask):
        real.add(row[None, :length], {"r": rel[None, :length]}, "set")
    assert masked.results() == real.results()
    masked.add(scores, {"r": relevance, "m": mask + 1}, "set")
    with pytest.warns(GradcNotice, match="hold 2 NaN: nothing to rank by"):
        assert all(np.isnan(list(masked.results().values())))


def _dynamic_ranker():
    """scores = 2x over lists whose length the program leaves open, [-1, -1]."""
    net = ProgramBuilder()
    scores = net.op("scale", {"X": net.data("x", [-1, -1], "float32")}, {"scale": 2.0})[0]
    return net.program, scores


def test_a_mask_of_lists_whose_length_the_program_leaves_open():
    """--ranking SCORES,ITEM --mask of scores declared [-1, -1]: a length per row broadcast the rows to a length of
    -1 (an internal ValueError), a [N, L] mask was refused against [N, -1]; both rank the entries they mark, and a
    mask that marks the batch's scores neither way is refused."""
    program, scores = _dynamic_ranker()
    x = np.random.default_rng(3).normal(size=(4, 5)).astype(np.float32)
    items, lengths = np.array([0, 1, 2, 3]), np.array([5, 4, 4, 5])
    expected = RankingTally(("s", "r"), [1, 2], None)
    for row, item, length in zip(2.0 * x.astype(np.float64), items, lengths):
        expected.add(row[None, :length], {"r": np.eye(length, dtype=int)[item][None]}, "set")
    for mask in (lengths, (np.arange(5) < lengths[:, None]).astype(np.int64)):
        result = gradc.evaluate(program, {"x": x, "next": items, "mask": mask}, ranking=f"{scores},next",
                                mask="mask", topk=[1, 2])
        assert {key: result[key] for key in expected.results()} == pytest.approx(expected.results(), abs=1e-12)
    with pytest.raises(GradcError, match="--mask mask \\[4, 3\\] marks neither"):
        gradc.evaluate(program, {"x": x, "next": items % 3, "mask": np.ones((4, 3), np.int64)},
                       ranking=f"{scores},next", mask="mask")
