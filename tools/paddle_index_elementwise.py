"""index_elementwise_get / _put / _put_with_tensor (Tensor indexing's strided-view ops, docs/pir-sweep.md) as PIR
programs built with paddle._pir_ops and run by Paddle 3.3.1's CPU executor, in tests/data/paddle/index_elementwise/:
program.json (with Paddle's backward of a weighted sum), fetched.npz (Paddle's values and gradients), meta.json.

The attributes are those Paddle's eager indexer would give a float32 x [2, 3, 4] (byte strides and offsets):
x[:, [2, 0]], x[1, [0, -1], [3, 1]], x[[1, 1, 0]] read, and x[:, [2, 0]] = 5 / = v (v [2, 2, 4], and a row [4]
broadcast), x[1, [0, -1], [3, 1]] = w, and the in-place put_ / put_with_tensor_; each read is checked here against
the same expression in Paddle's dynamic graph, each write against numpy's.

Views: a transpose (t = x.transpose([0, 2, 1]), t[:, [2, 0]]) and a slice (s = x[:, 1:], s[[1, 1, 0]] = 5) give
the ops an x that is a strided view in the dynamic graph; the PIR executor hands the kernels a contiguous x (the
view ops' outputs are materialised), so their attributes are those of the contiguous x, checked against numpy.
meta.json's "eager_on_views" keeps what Paddle's dynamic graph gives for t[:, [2, 0]] and s[:, [1, 0]] on the
non-contiguous views themselves (an error; wrong values), next to numpy's.

Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=1 /work/paddle-venv/bin/python tools/paddle_index_elementwise.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import paddle
from paddle import _pir_ops
from paddle.base import core

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "index_elementwise"
FEED = {"a": np.linspace(-2.0, 2.5, 24, dtype=np.float32).reshape(2, 3, 4),
        "v": np.linspace(3.0, -1.0, 16, dtype=np.float32).reshape(2, 2, 4),
        "u": np.array([0.5, -1.5, 2.0, 7.0], np.float32), "w": np.array([9.0, -9.0], np.float32),
        "rows": np.array([[2], [0]], np.int64), "last": np.array([0, -1], np.int64),
        "cols": np.array([3, 1], np.int64), "repeat": np.array([1, 1, 0], np.int64)}
# the view's dims, element strides, index_dims (sizes, -1, index shape), byte index strides and byte offset
COLUMNS = ([2, 2, 4], [12, 0, 1], [3, -1, 2, 1], [16], 0)          # x[:, rows]
PAIRS = ([2], [0], [3, 4, -1, 2], [16, 4], 48)                       # x[1, last, cols]: from byte 48 (x[1])
REPEAT = ([3, 3, 4], [0, 4, 1], [2, -1, 3, 1, 1], [48], 0)           # x[repeat]
TRANSPOSED = ([2, 2, 3], [12, 0, 1], [4, -1, 2, 1], [12], 0)         # t[:, rows], t = x.transpose([0, 2, 1])
SLICED = ([3, 2, 4], [0, 4, 1], [2, -1, 3, 1, 1], [32], 0)           # s[repeat], s = x[:, 1:]
GET = (True, False)                                                  # accumulate, is_combined
GRADS = ["a", "v", "u", "w"]


def _values(d):
    """name -> value: the ops, out of place and in place (on a copy of a)."""
    a, rows, pair, put_tensor = d["a"], [d["rows"]], [d["last"], d["cols"]], _pir_ops.index_elementwise_put_with_tensor
    return {
        "get_columns": _pir_ops.index_elementwise_get(a, rows, *COLUMNS, *GET),
        "get_pairs": _pir_ops.index_elementwise_get(a, pair, *PAIRS, *GET),
        "get_repeat": _pir_ops.index_elementwise_get(a, [d["repeat"]], *REPEAT, *GET),
        "put_columns": _pir_ops.index_elementwise_put(a, rows, 5.0, *COLUMNS),
        "put_tensor": put_tensor(a, rows, d["v"], *COLUMNS),
        "put_row": put_tensor(a, rows, d["u"], *COLUMNS),
        "put_pairs": put_tensor(a, pair, d["w"], *PAIRS),
        "put_inplace": _pir_ops.index_elementwise_put_(a * 1.0, rows, -4.0, *COLUMNS),
        "put_tensor_inplace": _pir_ops.index_elementwise_put_with_tensor_(a * 1.0, pair, d["w"] * 2.0, *PAIRS),
        "get_transposed": _pir_ops.index_elementwise_get(paddle.transpose(a, [0, 2, 1]), rows, *TRANSPOSED, *GET),
        "put_sliced": _pir_ops.index_elementwise_put(a[:, 1:], [d["repeat"]], 5.0, *SLICED),
    }


def _expected(name: str) -> np.ndarray:
    """Each value by indexing: Paddle's dynamic graph for the reads, numpy for the writes."""
    a, rows = FEED["a"], FEED["rows"].reshape(-1)
    reads = {"get_columns": lambda t: t[:, paddle.to_tensor(rows)],
             "get_pairs": lambda t: t[1, paddle.to_tensor(FEED["last"]), paddle.to_tensor(FEED["cols"])],
             "get_repeat": lambda t: t[paddle.to_tensor(FEED["repeat"])]}
    if name in reads:
        return reads[name](paddle.to_tensor(a)).numpy()
    if name == "get_transposed":
        return a.transpose(0, 2, 1)[:, rows]
    if name == "put_sliced":
        out = a[:, 1:].copy()
        out[FEED["repeat"]] = 5.0
        return out
    out = a.copy()
    if name in ("put_pairs", "put_tensor_inplace"):
        out[1, FEED["last"], FEED["cols"]] = FEED["w"] * (2.0 if name == "put_tensor_inplace" else 1.0)
    else:
        out[:, rows] = {"put_columns": 5.0, "put_tensor": FEED["v"], "put_row": FEED["u"], "put_inplace": -4.0}[name]
    return out


def _eager_on_views() -> dict:
    """Paddle's dynamic graph indexing non-contiguous views along their second dim (its values, or its error's first
    line), and numpy's answer."""
    a = paddle.to_tensor(FEED["a"])
    views = {"t[:, [2, 0]]": (a.transpose([0, 2, 1]), FEED["a"].transpose(0, 2, 1), [2, 0]),
             "s[:, [1, 0]]": (a[:, 1:], FEED["a"][:, 1:], [1, 0])}
    found = {}
    for name, (view, value, index) in views.items():
        assert not view.is_contiguous()
        try:
            paddles = view[:, paddle.to_tensor(index)].numpy().tolist()
        except ValueError as error:
            paddles = str(error).splitlines()[0]
        found[name] = {"paddle": paddles, "numpy": value[:, index].tolist()}
    return found


def main() -> None:
    paddle.enable_static()
    program = paddle.static.Program()
    with paddle.static.program_guard(program, paddle.static.Program()):
        data = {name: paddle.static.data(name, list(value.shape), str(value.dtype)) for name, value in FEED.items()}
        for name in GRADS:
            data[name].stop_gradient = False
        values = _values(data)
        loss = sum((v * paddle.arange(1, int(np.prod(v.shape)) + 1, dtype="float32").reshape(v.shape)).sum()
                   for v in values.values())
        grads = paddle.static.gradients(loss, [data[name] for name in GRADS])
        fetches = {**values, **{f"{name}@GRAD": g for name, g in zip(GRADS, grads)}}
        for col, (name, value) in enumerate(fetches.items()):
            _pir_ops.fetch(value, name, col).persistable = True
    got = dict(zip(fetches, paddle.static.Executor(paddle.CPUPlace()).run(program, feed=FEED,
                                                                          fetch_list=list(fetches.values()))))
    paddle.disable_static()
    for name in values:
        np.testing.assert_array_equal(got[name], _expected(name), err_msg=name)
    OUT.mkdir(parents=True, exist_ok=True)
    core.serialize_pir_program(program, str(OUT / "program.json"), True, False, True)
    np.savez_compressed(OUT / "fetched.npz", **got)
    meta = {"paddle_version": paddle.__version__, "fetches": list(fetches),
            "feed": {name: value.tolist() for name, value in FEED.items()},
            "ops": sorted({op.name() for op in program.global_block().ops}), "eager_on_views": _eager_on_views()}
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    main()
