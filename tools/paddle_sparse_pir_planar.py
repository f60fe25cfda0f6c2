"""Fixture pir_planar: the PIR program Paddle 3.3.1 builds for paddle.sparse.nn's 2-D layers (SubmConv2D, ReLU, a
strided Conv2D with bias: pd_op.conv3d_sp of a [N, H, W, C] tensor with 2-D attributes, add_coo_dense_sp), and what
its Executor computes on the CPU:

    /path/to/paddle/python tools/paddle_sparse_pir_planar.py tests/data/paddle/sparse_tensor/pir_planar

model.json is the program, params.npz its parameters' initial values, feed.npz the inputs (idx [3, 12], val
[12, 2]), expected.npz the dense output (out) and the gradients of val and of every parameter from Paddle's dygraph
run of the same layers with those weights at the loss sum(out * r) (grad:<name>; r in feed.npz). tests/test_sparse.py
runs and differentiates the program.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.sparse as sp
from paddle_sparse_tensor_layers import Planar  # the legacy fixture planar's layers

SHAPE = [2, 5, 5, 2]


def main(folder: Path) -> None:
    rng = np.random.default_rng(29)
    flat = np.sort(rng.choice(50, 12, replace=False))
    feed = {"idx": np.stack(np.unravel_index(flat, SHAPE[:3])).astype(np.int64),
            "val": rng.standard_normal((12, 2)).astype(np.float32)}
    paddle.enable_static()
    paddle.seed(11)
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_program, startup):
        layer = Planar()
        idx, val = (paddle.static.data(name, value.shape, str(value.dtype)) for name, value in feed.items())
        out = layer(sp.sparse_coo_tensor(idx, val, shape=SHAPE))
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        params = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in layer.parameters()}
        (dense,) = exe.run(main_program, feed=feed, fetch_list=[out])
    folder.mkdir(parents=True, exist_ok=True)
    paddle.base.core.serialize_pir_program(main_program, str(folder / "model.json"), True, False, True)
    paddle.disable_static()
    dygraph = Planar()
    for p, value in zip(dygraph.parameters(), params.values()):
        p.set_value(value)
    x = sp.sparse_coo_tensor(paddle.to_tensor(feed["idx"]), paddle.to_tensor(feed["val"]), shape=SHAPE)
    x.stop_gradient = False   # values needing a gradient crash Paddle's conv backward (docs/sparse.md)
    result = dygraph(x)
    feed["r"] = rng.standard_normal(result.shape).astype(np.float32)
    (result * paddle.to_tensor(feed["r"])).sum().backward()
    grads = {f"grad:{name}": p.grad.numpy() for name, p in zip(params, dygraph.parameters())}
    print("static vs dygraph output:", np.abs(dense - result.numpy()).max())
    np.savez(folder / "feed.npz", **feed)
    np.savez(folder / "params.npz", **params)
    np.savez(folder / "expected.npz", out=dense, **grads, **{"grad:val": x.grad.values().numpy()})


if __name__ == "__main__":
    main(Path(sys.argv[1]))
