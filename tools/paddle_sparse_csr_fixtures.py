"""Fixture csr: Paddle 3.3.1's CSR tensors and the CSR forms of sin, relu and softmax, from dygraph (neither static
mode builds a CSR tensor: legacy has no API for it, PIR's builders of dense_to_csr_sp and coo_to_csr_sp crash):

    /path/to/paddle/python tools/paddle_sparse_csr_fixtures.py tests/data/paddle/sparse_tensor/csr

For a [3, 4] matrix and a [2, 3, 4] batch of them, 40% of the entries 0, Tensor.to_sparse_csr()'s crows, cols and
values and to_sparse_coo()'s indices go to expected.npz (<case>:crows, ...), with each function's output values and
the gradient in x's CSR values of sum(out's values * r) (<case>:<function>:out, :grad; r fed in feed.npz as
<case>:<function>:r). Paddle's to_dense and values() have no CSR backward, so the gradient is seeded by
paddle.autograd.backward with a CSR tensor of r on out's sites.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.sparse as sp

FUNCTIONS = {"sin": sp.sin, "relu": sp.nn.functional.relu, "softmax": sp.nn.functional.softmax}


def main(folder: Path) -> None:
    rng = np.random.default_rng(3)
    batch = rng.standard_normal((2, 3, 4)).astype(np.float32)
    batch[rng.random(batch.shape) < 0.4] = 0
    feed, expected = {"2d": batch[0], "3d": batch}, {}
    for case in ("2d", "3d"):
        x = feed[case]
        csr = paddle.to_tensor(x).to_sparse_csr()
        for part in ("crows", "cols", "values"):
            expected[f"{case}:{part}"] = getattr(csr, part)().numpy()
        expected[f"{case}:coo_indices"] = csr.to_sparse_coo(x.ndim).indices().numpy()
        for name, function in FUNCTIONS.items():
            csr = paddle.to_tensor(x).to_sparse_csr()
            csr.stop_gradient = False
            out = function(csr)
            feed[f"{case}:{name}:r"] = rng.standard_normal(out.values().shape).astype(np.float32)
            seed = sp.sparse_csr_tensor(out.crows(), out.cols(), paddle.to_tensor(feed[f"{case}:{name}:r"]), out.shape)
            paddle.autograd.backward([out], [seed])
            expected[f"{case}:{name}:out"] = out.values().numpy()
            expected[f"{case}:{name}:grad"] = csr.grad.values().numpy()
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(folder / "feed.npz", **feed)
    np.savez(folder / "expected.npz", **expected)
    print(f"csr: {len(expected)} arrays")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
