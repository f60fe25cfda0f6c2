"""Write tests/data/paddle/pir_sampling/: a PIR program Paddle 3.3.1 saves (paddle.jit.save) that samples a subgraph
as PGL's sampling example does (sample_neighbors, then reindex_graph; weighted_sample_neighbors too), without edge ids,
so its files declare the unwritten edge ids float32 []. Each node has at most 3 in-neighbours and sample_size is 3:
every neighbour is drawn, in order, so the outputs (outputs.npz, Paddle's run on feed.npz) are reproducible.

    /path/to/paddle/python tools/paddle_sampling_fixture.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import paddle
import paddle.geometric as G
from paddle.static import InputSpec

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "pir_sampling"
# a CSC graph of 5 nodes: node 0's in-neighbours are [3, 1], node 1's [0], node 2's none, node 3's [2, 0, 1]
FEED = {"x": np.arange(15, dtype=np.float32).reshape(5, 3), "row": np.array([3, 1, 0, 2, 0, 1]),
        "colptr": np.array([0, 2, 3, 3, 6, 6]), "nodes": np.array([3, 0, 2]),
        "weight": np.array([0.5, 2.0, 1.0, 0.1, 3.0, 1.5], np.float32)}


class Sampled(paddle.nn.Layer):
    """The sampled subgraph's features, its reindexed edges, and the weighted draw's features."""

    def forward(self, x, row, colptr, nodes, weight):
        neighbours, counts = G.sample_neighbors(row, colptr, nodes, sample_size=3)
        src, dst, out_nodes = G.reindex_graph(nodes, neighbours, counts)
        weighted, _ = G.weighted_sample_neighbors(row, colptr, weight, nodes, sample_size=3)
        return paddle.gather(x, out_nodes), src, dst, paddle.gather(x, weighted)


def main() -> None:
    specs = [InputSpec(list(value.shape), str(value.dtype), name) for name, value in FEED.items()]
    OUT.mkdir(parents=True, exist_ok=True)
    paddle.jit.save(paddle.jit.to_static(Sampled(), input_spec=specs), str(OUT / "inference"))
    paddle.enable_static()
    executor = paddle.static.Executor(paddle.CPUPlace())
    program, feeds, fetches = paddle.static.load_inference_model(str(OUT / "inference"), executor)
    outputs = executor.run(program, feed=FEED, fetch_list=fetches)
    np.savez(OUT / "feed.npz", **FEED)
    np.savez(OUT / "outputs.npz", *outputs)
    for leftover in OUT.glob("inference.pdiparams*"):   # the program holds no parameters
        leftover.unlink()


if __name__ == "__main__":
    main()
