"""A hand-written PIR program whose a_f32 attributes hold decimals no float32 holds (elu's alpha 0.3, hardtanh's
-0.3 and 0.7): Paddle's reader casts each to float32 (0.3 becomes 0.30000001192092896), and its float64 kernels then
compute with that value, so the program's float64 results show which number was used; leaky_relu's negative_slope
(and its grad's) is an a_f64 0.1, which stays 0.1. The program (leaky_relu, elu, hardtanh and leaky_relu_grad on a
float64 x) is written with tools/paddle_gpu_only_handwritten.py's Writer; Paddle loads it, checks
each op's names and runs it on CPU, and expected.npz holds its results. Written as
tests/data/paddle/pir_f32_attrs/ (program.json, feed.npz, expected.npz, meta.json); tests/test_pir_f32_attrs.py
runs it. Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_pir_f32_attrs.py
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import paddle
from paddle.base import core
from paddle_gpu_only_handwritten import ATTR_TAGS, OUT, Writer, save_case


class Double(float):
    """A float attribute Paddle declares double (leaky_relu's negative_slope): written as a_f64, read unrounded."""


ATTR_TAGS[Double] = "0.a_f64"

SHAPE = [4, 5]
OPS = [   # (name, operands, results, attributes): the attributes as written, decimals a float32 cannot hold
    ("leaky_relu", ["x"], [("leaky", SHAPE, "float64")], [("negative_slope", Double(0.1))]),
    ("elu", ["x"], [("elu", SHAPE, "float64")], [("alpha", 0.3)]),
    ("hardtanh", ["x"], [("clipped", SHAPE, "float64")], [("t_min", -0.3), ("t_max", 0.7)]),
    ("leaky_relu_grad", ["x", "dout"], [("leaky_x_grad", SHAPE, "float64")], [("negative_slope", Double(0.1))]),
]


def _paddle_run(path, feed: dict, count: int) -> list[np.ndarray]:
    """Paddle's CPU executor on the program as its reader reads it."""
    paddle.enable_static()
    program = paddle.static.Program()
    core.deserialize_pir_program(str(path), program, 4)
    fetches = [op.operand_source(0) for op in program.global_block().ops if op.name() == "pd_op.fetch"]
    assert len(fetches) == count
    return [np.array(v) for v in paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed,
                                                                                 fetch_list=fetches)]


def write(seed: int) -> str:
    rng = np.random.default_rng(seed)
    feed = {"x": rng.uniform(-2, 2, SHAPE), "dout": rng.standard_normal(SHAPE)}
    writer = Writer()
    for name, value in feed.items():
        writer.data(name, list(value.shape), str(value.dtype))
    for op in OPS:
        writer.op(*op)
    for _, _, results, _ in OPS:
        writer.fetch(results[0][0])
    directory = OUT.parent / "pir_f32_attrs"
    pir_ops = sorted({f"pd_op.{op[0]}" for op in OPS})
    save_case(directory, writer, OPS, feed, {}, pir_ops, "Paddle's CPU run of program.json itself")
    values = _paddle_run(directory / "program.json", feed, len(writer.fetches))
    np.savez_compressed(directory / "expected.npz", **dict(zip(writer.fetches, values)))
    negative = feed["x"] < 0
    assert np.array_equal(values[0][negative], feed["x"][negative] * 0.1)   # a_f64: as written
    assert np.array_equal(np.clip(feed["x"], float(np.float32(-0.3)), float(np.float32(0.7))), values[2])   # float32
    return " ".join(pir_ops)


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.set_device("cpu")
    print(write(31))
    sys.exit(0)
