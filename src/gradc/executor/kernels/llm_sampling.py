"""Kernels of gradc.ops.llm_sampling: top_p_sampling (the top-p set of each row, a draw from it)."""

from __future__ import annotations

import numpy as np

from .. import randomness
from . import kernel


def _draw(probs: np.ndarray, top_p: float, floor: float, truncated: bool, rng: np.random.Generator) -> int:
    """The position, in the descending order ``probs``, of the drawn token."""
    sums = np.cumsum(probs)
    reached = np.flatnonzero(sums >= top_p)
    size = reached[0] + 1 if reached.size else len(probs)
    if truncated:
        drawn = np.flatnonzero(sums >= rng.random() * top_p)
        pick = drawn[0] if drawn.size else 0
    else:
        race = np.where(probs[:size] >= floor, probs[:size], 0.0) / rng.exponential(size=size)
        pick = int(np.argmax(race)) if race.max() > 0 else 0
    while pick > 0 and probs[pick] < floor:   # a token below the threshold gives way to a higher one
        pick -= 1
    return pick


@kernel("top_p_sampling")
def top_p_sampling(k):
    x, top_ps = k.x("x"), k.x("ps").reshape(-1)
    threshold, seeds = k.optional("threshold"), k.optional("topp_seed")
    seed, top_k = k.attr("seed"), k.attr("k")
    shared = np.random.default_rng(seed) if seed >= 0 else randomness.generator()
    order = np.argsort(-x.astype(np.float64), axis=1, kind="stable")   # descending, ties by the lower id
    ids = np.empty((x.shape[0], 1), np.int64)
    for b, row in enumerate(order):
        rng = np.random.default_rng(int(seeds.reshape(-1)[b])) if seeds is not None else shared
        floor = float(threshold.reshape(-1)[b]) if threshold is not None else 0.0
        probs = x[b, row].astype(np.float64)
        ids[b, 0] = row[_draw(probs, float(top_ps[b]), floor, k.attr("mode") == "truncated", rng)]
    return {"out": np.take_along_axis(x, ids, axis=1), "ids": ids,
            "topk_scores": np.take_along_axis(x, order[:, :top_k], axis=1), "topk_ids": order[:, :top_k]}
