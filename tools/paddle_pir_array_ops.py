"""Dy2static programs that pop from and slice a Python list grown in a loop, which Paddle 3.3.1 writes with PIR's
tensor-array ops: `list.pop()` is pd_op.array_pop (pir/math_op_patch.py), `list[a:b]` pd_op.slice_array
(base/variable_index.py) and `list[i]` pd_op.slice_array_dense, the list grown by pd_op.array_write_ in a
pd_op.while whose trip count is a tensor. Each case is a Layer (a linear layer's parameters, so the program reads a
.pdiparams too) exported with paddle.jit.to_static and paddle.jit.save to
tests/data/paddle/pir_arrays/<case>/inference.json + inference.pdiparams, with feed.npz and Paddle's outputs of
that saved model (expected.npz, paddle.jit.load). tests/test_tensor_array_ops.py runs them. Not part of the
package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_pir_array_ops.py
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import paddle

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "pir_arrays"


class PopAndSlice(paddle.nn.Layer):
    """rows of linear(x) (x [n, 4]) into a list, one per loop step; pop the last (and the one at index 1), then
    the sum of the slice [start:start + 2] of what is left, stacked."""

    def __init__(self, pop_middle: bool):
        super().__init__()
        self.linear = paddle.nn.Linear(4, 3)
        self.pop_middle = pop_middle

    def forward(self, x, steps):
        items = []
        i = paddle.zeros([], "int64")
        while i < steps:
            items.append(paddle.tanh(self.linear(x[i])))
            i += 1
        last = items.pop()
        middle = items.pop(1) if self.pop_middle else last * 0.0
        window = paddle.stack(items[0:2])
        return last + middle * 2.0, window.sum(axis=0), items[0]


CASES = {"pop_last_slice": (PopAndSlice(False), 5), "pop_middle_slice": (PopAndSlice(True), 4)}


def write(case: str, seed: int) -> str:
    layer, steps = CASES[case]
    paddle.seed(seed)
    for parameter in layer.parameters():
        parameter.set_value(paddle.randn(parameter.shape))
    rng = np.random.default_rng(seed)
    feed = {"x": rng.standard_normal((6, 4)).astype("float32"), "steps": np.array(steps, np.int64)}
    specs = [paddle.static.InputSpec([6, 4], "float32", "x"), paddle.static.InputSpec([], "int64", "steps")]
    directory = OUT / case
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    paddle.jit.save(paddle.jit.to_static(layer, input_spec=specs, full_graph=True), str(directory / "inference"))
    loaded = paddle.jit.load(str(directory / "inference"))
    outs = loaded(paddle.to_tensor(feed["x"]), paddle.to_tensor(feed["steps"]))
    np.savez_compressed(directory / "feed.npz", **feed)
    np.savez_compressed(directory / "expected.npz", **{f"out{i}": out.numpy() for i, out in enumerate(outs)})
    text = (directory / "inference.json").read_text()
    ops = sorted(set(name for name in ("array_pop", "slice_array\"", "slice_array_dense", "array_write_", "while")
                     if f"1.{name}" in text or f"pd_op.{name}" in text))
    meta = {"case": case, "seed": seed, "paddle_version": paddle.__version__, "steps": steps,
            "array_ops": [name.strip('"') for name in ops]}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{meta['array_ops']}, outputs {[list(o.shape) for o in outs]}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.set_device("cpu")
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, 900 + index)}")
    sys.exit(0)
