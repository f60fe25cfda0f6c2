"""The PIR ops of Tensor methods gradc lacked (docs/pir-sweep.md, "PIR ops of the Tensor API gradc lacked"), as
Paddle 3.3.1 writes them in PIR mode, with Paddle's numbers, in tests/data/paddle/tensor_inplace/:

- runs/: one program Paddle's CPU executor runs after paddle.seed(42): Tensor.fill_ / zero_ / fill_diagonal_ /
  normal_ / uniform_ (pd_op.fill_, fill_diagonal_, gaussian_inplace_, uniform_inplace_: those methods refuse a
  static value, so the program calls the _C_ops they call), uniform_random_batch_size_like, Tensor.set_'s op,
  paddle.divide with rounding_mode "trunc" and "floor" (floats and ints), Tensor.divide_'s trunc_divide_,
  paddle.range (pd_op.range_v2), and the dialect's out-of-place twins of the in-place ops; the
  fetched values and Paddle's gradient of a weighted sum of the differentiable ones. One draw takes the global
  engine, the others seeds of their own: Paddle's interpreter runs independent draws in an order of its own (here
  uniform, batch, normal), so which of several unseeded draws gets which numbers is Paddle's choice.
- views/: paddle.as_strided, paddle.view (shape and dtype), index_select_strided (Tensor indexing's view, built by
  paddle._C_ops) and their grads as PIR programs; Paddle's static executor
  cannot run those ops ("kernel output args (0) defs should equal op outputs (1)"), so the numbers are those of the
  same calls in Paddle's dynamic graph, on the same input.
- aliased/: a fill_ through set_'s view (x made a view of source), run by Paddle's CPU executor: what the view, and
  source, hold after (gradc's views are copies: docs/pir-sweep.md).
- restrict_nonzero/: paddle.tensor.search._restrict_nonzero's op, which Paddle's CPU build refuses to build (no CPU
  kernel): its PIR JSON written by hand with tools/paddle_gpu_only_handwritten.py's Writer and name-checked by Paddle,
  and paddle.nonzero's CPU result for it (the op's result where the condition holds total_true_num nonzeros).

Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=1 /work/paddle-venv/bin/python tools/paddle_tensor_inplace.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import paddle
from paddle import _C_ops
from paddle.base import core
from paddle_gpu_only_handwritten import TYPE_TAGS, Writer, _check_names

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "tensor_inplace"
FEED = np.linspace(-2.0, 2.5, 12, dtype=np.float32).reshape(3, 4)
INTS = (np.array([7, -7, 7, -7, 9, -1]), np.array([2, 2, -2, -2, 4, 3]))


def _runs(a, i, j):
    """name -> value: the ops Paddle's CPU executor runs."""
    return {
        "fill": _C_ops.fill_(a * 2.0, 3.0),
        "zero": _C_ops.fill_(a * 2.0, 0.0),
        "diagonal": _C_ops.fill_diagonal_(a * 2.0, 5.0, 1, False),
        "diagonal_wrap": _C_ops.fill_diagonal_(paddle.concat([a, a]).reshape([6, 4])[:, :3] * 1.0, -1.0, 0, True),
        "normal": _C_ops.gaussian_inplace_(a * 2.0, 0.5, 2.0, 0),
        "uniform": _C_ops.uniform_inplace_(a * 2.0, -3.0, 2.0, 7, 0, 0, 1.0),
        "batch_size_like": paddle.tensor.random.uniform_random_batch_size_like(a, [2, 5], min=1.0, max=4.0, seed=9),
        "set": _C_ops.set_(a * 2.0, a * 3.0, [2, 2], [4, 1], 4),
        "trunc": paddle.divide(a, a * 0.0 + 0.75, rounding_mode="trunc"),
        "floor": paddle.divide(a, a * 0.0 + 0.75, rounding_mode="floor"),
        "trunc_int": paddle.divide(i, j, rounding_mode="trunc"),
        "floor_int": paddle.divide(i, j, rounding_mode="floor"),
        "range": paddle.range(1, 5, 0.5),
        "range_down": paddle.range(3, -1, -0.7),
        "range_ints": paddle.range(2, 11, 3, dtype="int64"),
        "range_tenth": paddle.range(0, 1, 0.1),   # 1 / 0.1 rounds to 10 in float32: 11 values
        "range_int32": paddle.range(1, 10, 4, dtype="int32"),
        "trunc_inplace": _C_ops.trunc_divide_(a * 1.0, a * 0.0 + 0.75),
        # the dialect's out-of-place twins, which no API writes: their ops' own names
        "fill_out": paddle._pir_ops.fill(a * 2.0, -2.0),
        "diagonal_out": paddle._pir_ops.fill_diagonal(a * 2.0, 4.0, -1, False),
        "normal_out": paddle._pir_ops.gaussian_inplace(a * 2.0, -1.0, 0.5, 11),
        "uniform_out": paddle._pir_ops.uniform_inplace(a * 2.0, 0.0, 1.0, 13, 0, 0, 1.0),
        "normal_f64": _C_ops.gaussian_inplace_(a.astype("float64"), 1.0, 3.0, 17),
        "uniform_f64": _C_ops.uniform_inplace_(a.astype("float64"), -1.0, 5.0, 19, 0, 0, 1.0),
        "set_out": paddle._pir_ops.set(a * 2.0, a * 3.0, [3], [5], 0),
    }


def _views(a):
    """name -> value: the views (the same calls in both modes)."""
    return {
        "as_strided": _C_ops.as_strided(a * 2.0, [2, 3], [4, 1], 4),
        "as_strided_overlap": _C_ops.as_strided(a * 2.0, [3, 3], [1, 1], 0),
        "view_shape": _C_ops.view_shape(a * 2.0, [4, 3]),
        "view_dtype": _C_ops.view_dtype(a * 2.0, paddle.int32),
        # a non-negative index: Paddle's kernel does not wrap a negative one (docs/pir-sweep.md)
        "index_select": _C_ops.index_select_strided(a * 2.0, 2, 1),
    }


DIFFERENTIABLE = ["fill", "zero", "diagonal", "diagonal_wrap", "normal", "uniform", "as_strided", "view_shape",
                  "index_select",
                  "fill_out", "diagonal_out", "normal_out", "uniform_out"]


def _loss(values: dict):
    """A weighted sum of the differentiable values: weights 1, 2, ... an element where PIR types the value with its
    shape, else the value itself (PIR types as_strided's result with its input's shape)."""
    total = 0.0
    for name in DIFFERENTIABLE:
        if name in values:
            v = values[name]
            weights = v if name == "as_strided" else paddle.arange(1, v.size + 1, dtype="float32").reshape(v.shape)
            total = total + (v * weights).sum()
    return total


def _save(case: str, program, fetches: dict, values: dict) -> None:
    out = OUT / case
    out.mkdir(parents=True, exist_ok=True)
    with paddle.pir_utils.IrGuard(), paddle.static.program_guard(program):
        for col, (name, value) in enumerate(fetches.items()):
            paddle._pir_ops.fetch(value, name, col).persistable = True
    core.serialize_pir_program(program, str(out / "program.json"), True, False, True)
    np.savez_compressed(out / "fetched.npz", **values)
    meta = {"paddle_version": paddle.__version__, "seed": 42, "fetches": list(fetches),
            "feed": {"a": FEED.tolist(), "i": INTS[0].tolist(), "j": INTS[1].tolist()},
            "ops": sorted({op.name() for op in program.global_block().ops})}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def _build(make):
    program = paddle.static.Program()
    with paddle.static.program_guard(program, paddle.static.Program()):
        a = paddle.static.data("a", [3, 4], "float32")
        a.stop_gradient = False
        i, j = paddle.static.data("i", [6], "int64"), paddle.static.data("j", [6], "int64")
        values = make(a, i, j)
        fetches = {**values, "a@GRAD": paddle.static.gradients(_loss(values), [a])[0]}
    return program, fetches


def _restrict_nonzero() -> None:
    """A bool condition [3, 4] with 6 nonzeros and total_true_num 6."""
    condition = FEED > 0.3
    TYPE_TAGS.update({"bool": "0.t_bool", "int64": "0.t_i64"})   # the Writer's tags of these dtypes
    writer = Writer()
    writer.data("condition", [3, 4], "bool")
    count = {"AT": {"#": "0.a_i64", "D": int(condition.sum())}, "N": "total_true_num"}
    spec = {"ops": [("restrict_nonzero", ["condition"], [("out", [int(condition.sum()), 2], "int64")],
                     [("total_true_num", 0)])]}
    writer.op(*spec["ops"][0])
    writer.ops[-1]["A"] = [count]
    writer.fetch("out")
    out = OUT / "restrict_nonzero"
    out.mkdir(parents=True, exist_ok=True)
    (out / "program.json").write_text(json.dumps(writer.program()))
    _check_names(out / "program.json", spec)
    np.savez_compressed(out / "fetched.npz", out=paddle.nonzero(paddle.to_tensor(condition)).numpy())
    meta = {"paddle_version": paddle.__version__, "seed": 42, "fetches": ["out"], "feed": {"condition": FEED.tolist()},
            "built_by": "PIR JSON written by hand, name-checked by Paddle; fetched.npz: paddle.nonzero on CPU"}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def _aliased(a, i, j):
    source = a * 3.0
    view = _C_ops.set_(a * 2.0, source, [2, 2], [4, 1], 4)
    filled = _C_ops.fill_(view, 0.0)
    return {"view": filled, "source": source + filled.sum() * 0.0}   # source read after the fill_


def main() -> None:
    paddle.enable_static()
    paddle.seed(42)
    program, fetches = _build(_runs)
    feed = {"a": FEED, "i": INTS[0], "j": INTS[1]}
    got = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed, fetch_list=list(fetches.values()))
    _save("runs", program, fetches, dict(zip(fetches, got)))
    program = paddle.static.Program()
    with paddle.static.program_guard(program, paddle.static.Program()):
        fetches = _aliased(paddle.static.data("a", [3, 4], "float32"), None, None)
    got = paddle.static.Executor(paddle.CPUPlace()).run(program, feed={"a": FEED}, fetch_list=list(fetches.values()))
    _save("aliased", program, fetches, dict(zip(fetches, got)))
    program, fetches = _build(lambda a, i, j: _views(a))
    paddle.disable_static()
    a = paddle.to_tensor(FEED, stop_gradient=False)
    values = _views(a)
    _loss(values).backward()
    _save("views", program, fetches, {**{k: v.numpy() for k, v in values.items()}, "a@GRAD": a.grad.numpy()})
    _restrict_nonzero()


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    main()
