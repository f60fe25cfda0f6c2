"""Paddle 3.3.1's bipartite_match of distance matrices holding NaNs, for tests/test_detection_v1.py. From 130 rows
Paddle's CPU kernel std::sorts every pair with the comparator a > b, which cannot order a NaN: where the NaNs land,
and the numbers around them, is what libstdc++'s introsort makes of it, and gradc replays that. Each case is one legacy
op run by Paddle's executor on a random matrix (shapes and NaN densities below); the file holds the matrices and
Paddle's outputs. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_bipartite_nan_reference.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "bipartite_match_nan.npz"
# (rows, columns, share of NaN, distances in quarters: ties among the numbers too)
CASES = [(130, 3, 0.05, False), (140, 6, 0.1, True), (150, 4, 0.3, False), (200, 5, 0.05, False),
         (131, 2, 0.3, True), (160, 8, 0.1, False)]


def match(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("dist", list(dist.shape), "float32")
        helper = LayerHelper("bipartite_match")
        indices = helper.create_variable_for_type_inference("int32")
        matched = helper.create_variable_for_type_inference("float32")
        helper.append_op(type="bipartite_match", inputs={"DistMat": x},
                         outputs={"ColToRowMatchIndices": indices, "ColToRowMatchDist": matched})
    executor = paddle.static.Executor(paddle.CPUPlace())
    return tuple(executor.run(main, feed={"dist": dist}, fetch_list=[indices, matched]))


def main() -> None:
    paddle.enable_static()
    rng = np.random.default_rng(0)
    arrays = {}
    for i, (rows, columns, nan_share, quarters) in enumerate(CASES):
        dist = rng.integers(0, 4, (rows, columns)) / 4 if quarters else rng.random((rows, columns))
        dist = np.where(rng.random((rows, columns)) < nan_share, np.nan, dist).astype(np.float32)
        arrays[f"dist{i}"] = dist
        arrays[f"indices{i}"], arrays[f"matched{i}"] = match(dist)
    np.savez_compressed(OUT, **arrays)
    print(f"wrote {OUT} ({len(CASES)} cases)")


if __name__ == "__main__":
    main()
