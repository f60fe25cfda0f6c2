"""Tensor.random_ (the op random, PIR pd_op.random_ and pd_op.random_grad) as Paddle 3.3.1 writes it in PIR mode
(program.json), run on CPU after paddle.seed(42): three draws (float32 in [3, 1000), int64 in [-5, 2^40), int32 over
[0, its max)) and Paddle's gradient of sum(3 random_(2 a)) with respect to a, in
tests/data/paddle/random_inplace/fetched.npz with meta.json. gradc seeded with 42 must draw the same. (Legacy mode
cannot build it: Tensor.random_ hands a Variable to the PIR-only _C_ops.random_.) Not part of the package: it needs
paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_random_inplace.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import paddle
from paddle.base import core

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "random_inplace"
FETCH = ["floats", "wide", "ints", "a@GRAD"]


def main() -> None:
    paddle.enable_static()
    paddle.seed(42)
    program = paddle.static.Program()
    with paddle.static.program_guard(program, paddle.static.Program()):
        a = paddle.static.data("a", [3, 4], "float32")
        a.stop_gradient = False
        floats = (a * 2).random_(3, 1000)
        wide = paddle.zeros([5], "int64").random_(-5, 2**40)
        ints = paddle.zeros([6], "int32").random_()
        grad = paddle.static.gradients((floats * 3).sum(), [a])[0]
    feed = {"a": np.ones([3, 4], np.float32)}
    values = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed, fetch_list=[floats, wide, ints, grad])
    OUT.mkdir(parents=True, exist_ok=True)
    with paddle.pir_utils.IrGuard(), paddle.static.program_guard(program):
        for col, (name, value) in enumerate(zip(FETCH, (floats, wide, ints, grad))):
            paddle._pir_ops.fetch(value, name, col).persistable = True
    core.serialize_pir_program(program, str(OUT / "program.json"), True, False, True)
    ops = sorted({op.name() for op in program.global_block().ops})
    np.savez_compressed(OUT / "fetched.npz", **dict(zip(FETCH, values)))
    meta = {"paddle_version": paddle.__version__, "seed": 42, "fetches": FETCH, "ops": ops}
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(ops)


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    main()
