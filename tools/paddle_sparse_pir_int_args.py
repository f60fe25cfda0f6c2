"""Fixture pir_int_args: paddle.sparse's reshape, slice and sum with their shape, starts, ends and axis given as
Tensors, which Paddle 3.3.1's PIR mode writes as operands (a list holding a 0-d Tensor becomes a pd_op.stack of it):

    /path/to/paddle/python tools/paddle_sparse_pir_int_args.py tests/data/paddle/sparse_tensor/pir_int_args

x is a COO tensor of 12 sorted sites of a [3, 4, 5] grid (no channels: Paddle's slice drops them). Each
function's to_dense() output from Paddle's Executor goes to expected.npz (out:<name>), with the dygraph gradient (the
same ints as Python lists) of its mean(out * r:<name>) in x's values (grad:<name>, read at x's sites: slice's
gradient holds the kept sites only); the inputs and weights are in feed.npz. slice's axes stay a list: PIR takes them
as an attribute only (a Tensor of axes crashes the builder, static_api_slice_sp).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.sparse as sp

GRID = [3, 4, 5]
FUNCTIONS = {"reshape": lambda x, t: sp.reshape(x, t["shape"]),
             "reshape_list": lambda x, t: sp.reshape(x, [t["d0"], 10]),
             "slice": lambda x, t: sp.slice(x, [0, 2], t["starts"], t["ends"]),
             "sum": lambda x, t: sp.sum(x, t["axis"])}
INTS = {"shape": [5, 12], "d0": 6, "starts": [1, 0], "ends": [3, 4], "axis": [1]}


def main(folder: Path) -> None:
    rng = np.random.default_rng(31)
    flat = np.sort(rng.choice(int(np.prod(GRID)), 12, replace=False))
    feed = {"idx": np.stack(np.unravel_index(flat, GRID)).astype(np.int64),
            "val": rng.standard_normal(12).astype(np.float32),
            **{name: np.array(value, np.int64) for name, value in INTS.items()}}
    folder.mkdir(parents=True, exist_ok=True)
    paddle.enable_static()
    main_program = paddle.static.Program()
    with paddle.static.program_guard(main_program, paddle.static.Program()):
        data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in feed.items()}
        x = sp.sparse_coo_tensor(data["idx"], data["val"], shape=GRID)
        outs = [function(x, data).to_dense() for function in FUNCTIONS.values()]
    paddle.base.core.serialize_pir_program(main_program, str(folder / "model.json"), True, False, True)
    fetched = paddle.static.Executor(paddle.CPUPlace()).run(main_program, feed=feed, fetch_list=outs)
    expected = {f"out:{name}": value for name, value in zip(FUNCTIONS, fetched)}
    paddle.disable_static()
    for name, function in FUNCTIONS.items():
        x = sp.sparse_coo_tensor(paddle.to_tensor(feed["idx"]), paddle.to_tensor(feed["val"]), shape=GRID)
        x.stop_gradient = False
        out = function(x, {key: feed[key].tolist() for key in INTS}).to_dense()   # dygraph's sum takes no Tensor axis
        feed[f"r:{name}"] = rng.standard_normal(out.shape).astype(np.float32)
        (out * paddle.to_tensor(feed[f"r:{name}"])).mean().backward()
        print(name, "gradient sites", x.grad.indices().shape[1])   # slice's holds the kept entries only
        expected[f"grad:{name}"] = x.grad.to_dense().numpy()[tuple(feed["idx"])]
    np.savez(folder / "feed.npz", **feed)
    np.savez(folder / "expected.npz", **expected)
    print(f"pir_int_args: {len(FUNCTIONS)} functions, outputs {[v.shape for k, v in expected.items() if 'out:' in k]}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
