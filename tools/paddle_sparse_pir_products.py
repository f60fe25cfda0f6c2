"""Fixture pir_products: the PIR program Paddle 3.3.1 builds for paddle.sparse.mv and addmm of a COO tensor:

    /path/to/paddle/python tools/paddle_sparse_pir_products.py tests/data/paddle/sparse_tensor/pir_products

x is a [3, 4] COO tensor of 5 sites; mv(x, vec) and addmm(input, x, y, beta=0.5, alpha=2.0) go to model.json, the
inputs to feed.npz. Paddle's Executor cannot run it ("Not support CPU kernel of 'sparse.mv' now", the same for
addmm, matmul and masked_matmul, in dygraph too), and paddle.sparse.matmul does not build in PIR mode (its check of
y's dtype expects the sparse x's, which it cannot read): the tool prints what each raises. tests/test_sparse_matmul.py
checks gradc's run of the program against dense numpy.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.sparse as sp


def main(folder: Path) -> None:
    rng = np.random.default_rng(17)
    feed = {"idx": np.array([[0, 0, 1, 2, 2], [1, 3, 0, 2, 3]], np.int64),
            "val": rng.standard_normal(5).astype(np.float32), "vec": rng.standard_normal(4).astype(np.float32),
            "y": rng.standard_normal((4, 2)).astype(np.float32),
            "input": rng.standard_normal((3, 2)).astype(np.float32)}
    paddle.enable_static()
    main_program = paddle.static.Program()
    with paddle.static.program_guard(main_program, paddle.static.Program()):
        data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in feed.items()}
        x = sp.sparse_coo_tensor(data["idx"], data["val"], shape=[3, 4])
        outs = [sp.mv(x, data["vec"]), sp.addmm(data["input"], x, data["y"], 0.5, 2.0)]
        try:
            sp.matmul(x, data["y"])
        except TypeError as error:
            print("matmul does not build:", str(error).splitlines()[0])
    folder.mkdir(parents=True, exist_ok=True)
    paddle.base.core.serialize_pir_program(main_program, str(folder / "model.json"), True, False, True)
    np.savez(folder / "feed.npz", **feed)
    for out in outs:
        try:
            paddle.static.Executor(paddle.CPUPlace()).run(main_program, feed=feed, fetch_list=[out])
        except NotImplementedError as error:
            print("does not run:", [line for line in str(error).splitlines() if "Not support" in line][0].strip())


if __name__ == "__main__":
    main(Path(sys.argv[1]))
