"""Fixture pir_binary of paddle.sparse's functions Paddle 3.3.1 builds in PIR mode only: multiply and divide (of two
COO tensors), divide by a number and coalesce:

    /path/to/paddle/python tools/paddle_sparse_pir_binary.py tests/data/paddle/sparse_tensor/pir_binary

One Layer applies each to COO tensors x and y (6 sorted sites of a [2, 3, 4] grid each, 2 of them shared, 2
channels) and z (every site, values away from 0: divide's y, as x / y is NaN where neither has a value);
its PIR program (model.json) and Paddle's Executor's outputs go to expected.npz (out:<name>, each
read back dense), and the gradients of each function's mean(out * r:<name>) in the values of x and y (and z) from
dygraph (grad:<name>:val, :vay, :vaz), with the inputs and weights in feed.npz.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.sparse as sp

GRID = [2, 3, 4]
# subtract and transpose are left out: with these inputs Paddle 3.3.1 aborts in them (heap corruption) or hangs
FUNCTIONS = {"multiply": lambda x, y, z: sp.multiply(x, y),
             "divide": lambda x, y, z: sp.divide(x, z), "divide_scalar": lambda x, y, z: sp.divide(x, -2.5),
             "coalesce": lambda x, y, z: sp.coalesce(x)}
INPUTS = (("x", "idx", "val"), ("y", "idy", "vay"), ("z", "idz", "vaz"))


def tensors(feed: dict, dygraph: bool = False) -> list:
    made = []
    for _, indices, values in INPUTS:
        wrap = paddle.to_tensor if dygraph else (lambda v: v)
        made.append(sp.sparse_coo_tensor(wrap(feed[indices]), wrap(feed[values]), shape=[*GRID, 2]))
    return made


class Binary(paddle.nn.Layer):
    def forward(self, idx, val, idy, vay, idz, vaz):
        x, y, z = tensors({"idx": idx, "val": val, "idy": idy, "vay": vay, "idz": idz, "vaz": vaz})
        return [function(x, y, z).to_dense() for function in FUNCTIONS.values()]


def sites(flat: list[int]) -> np.ndarray:
    return np.stack(np.unravel_index(np.array(flat), GRID)).astype(np.int64)


def main(folder: Path) -> None:
    rng = np.random.default_rng(21)
    feed = {"idx": sites([0, 3, 8, 10, 15, 20]), "idy": sites([2, 3, 6, 9, 15, 19]), "idz": sites(list(range(24)))}
    for name, count in (("val", 6), ("vay", 6)):
        feed[name] = rng.standard_normal((count, 2)).astype(np.float32)
    feed["vaz"] = (rng.uniform(0.5, 1.5, (24, 2)) * np.where(rng.random((24, 2)) < 0.5, -1, 1)).astype(np.float32)
    folder.mkdir(parents=True, exist_ok=True)
    paddle.enable_static()
    main_program = paddle.static.Program()
    with paddle.static.program_guard(main_program, paddle.static.Program()):
        data = {name: paddle.static.data(name, list(feed[name].shape), str(feed[name].dtype)) for name in
                ("idx", "val", "idy", "vay", "idz", "vaz")}
        outs = Binary()(**data)
    paddle.base.core.serialize_pir_program(main_program, str(folder / "model.json"), True, False, True)
    fetched = paddle.static.Executor(paddle.CPUPlace()).run(main_program, feed=feed, fetch_list=outs)
    expected = {f"out:{name}": value for name, value in zip(FUNCTIONS, fetched)}
    paddle.disable_static()
    for name, function in FUNCTIONS.items():
        made = tensors(feed, dygraph=True)
        for tensor in made:
            tensor.stop_gradient = False
        out = function(*made).to_dense()
        feed[f"r:{name}"] = rng.standard_normal(out.shape).astype(np.float32)
        (out * paddle.to_tensor(feed[f"r:{name}"])).mean().backward()
        for tensor, (_, indices, values) in zip(made, INPUTS):
            if tensor.grad is not None:
                assert (tensor.grad.indices().numpy() == feed[indices]).all(), (name, values)
                expected[f"grad:{name}:{values}"] = tensor.grad.values().numpy()
    np.savez(folder / "feed.npz", **feed)
    np.savez(folder / "expected.npz", **expected)
    print(f"pir_binary: {len(FUNCTIONS)} functions, {sum(k.startswith('grad:') for k in expected)} gradients")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
