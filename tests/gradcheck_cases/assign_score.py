"""Cases for Paddle3D's assign_score_withk (gradc.ops.assign_score): neighbours repeating and including the point
itself, then its grad op's maker (bilinear)."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(97)


def inputs(b=2, n=4, k=3, m=2, o=3) -> dict:
    return {"scores": r.standard_normal((b, n, k, m)), "points": r.standard_normal((b, n, m, o)),
            "centers": r.standard_normal((b, n, m, o)), "knn_idx": r.integers(0, n, (b, n, k)).astype(np.int64)}


CASES = [
    Case("assign_score_withk", inputs()),
    Case("assign_score_withk", inputs(b=1, n=3, k=4, m=1, o=2)),
    second_order("assign_score_withk", inputs()),
]
