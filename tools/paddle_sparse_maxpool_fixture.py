"""Fixture maxpool: paddle.sparse.nn.MaxPool3D in dygraph (neither static mode builds it):

    /path/to/paddle/python tools/paddle_sparse_maxpool_fixture.py tests/data/paddle/sparse_tensor/maxpool

x is a [2, 5, 6, 5, 3] COO tensor of 40 sites in sorted order; for each setting of SETTINGS (kernel, stride,
padding) the output's indices and values go to expected.npz (<i>:indices, <i>:values) with the gradient in x's
values of sum(to_dense(out) * r<i>) (<i>:grad; r<i> in feed.npz with x's idx and val).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.sparse as sp

SETTINGS = [(3, 2, 1), (2, 1, 0), ((2, 3, 1), (1, 2, 1), (0, 1, 0))]


def main(folder: Path) -> None:
    rng = np.random.default_rng(12)
    flat = np.sort(rng.choice(2 * 5 * 6 * 5, 40, replace=False))
    feed = {"idx": np.stack(np.unravel_index(flat, (2, 5, 6, 5))).astype(np.int64),
            "val": rng.standard_normal((40, 3)).astype(np.float32)}
    expected = {}
    for i, (kernel, stride, padding) in enumerate(SETTINGS):
        x = sp.sparse_coo_tensor(paddle.to_tensor(feed["idx"]), paddle.to_tensor(feed["val"]), [2, 5, 6, 5, 3])
        x.stop_gradient = False
        out = sp.nn.MaxPool3D(kernel_size=kernel, stride=stride, padding=padding)(x)
        feed[f"r{i}"] = rng.standard_normal(out.shape).astype(np.float32)
        (out.to_dense() * paddle.to_tensor(feed[f"r{i}"])).sum().backward()
        expected.update({f"{i}:indices": out.indices().numpy(), f"{i}:values": out.values().numpy(),
                         f"{i}:grad": x.grad.to_dense().numpy()[tuple(feed["idx"])]})
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "feed.npz", **feed)
    np.savez(folder / "expected.npz", **expected)
    print(f"maxpool: {len(SETTINGS)} settings, outputs {[expected[f'{i}:values'].shape for i in range(3)]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
