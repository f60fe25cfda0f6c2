"""Writes tests/data/paddle/pir_dtypes: small PIR programs of the ops whose result dtype the import sets or corrects
(arange of integer or float64 dtype over fractional bounds, linspace, unique's index dtypes) and of the ops with
two PIR forms (tril / triu, repeat_interleave by an int or a tensor), each fetching "out", with Paddle 3.3.1's
values (values.npz) for x (feed.npz). Run with Paddle's venv: python tools/paddle_pir_dtypes.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import paddle
from paddle.base import core

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "paddle" / "pir_dtypes"
X = np.array([[1, 2, 2, 0.5], [3, 1, 1, 2], [0.5, 0.5, 4, 4]], "float32")
CASES = {
    "linspace_int32": lambda x: paddle.linspace(0.5, 10.2, 7, dtype="int32"),
    "linspace_float64": lambda x: paddle.linspace(0.1, 1.0, 4, dtype="float64"),
    "linspace_one": lambda x: paddle.linspace(3.0, 9.0, 1, dtype="float32"),
    "arange_int64_fractional": lambda x: paddle.arange(0.5, 7.7, 1.5, dtype="int64"),
    "arange_float64": lambda x: paddle.arange(0.1, 1.0, 0.3, dtype="float64"),
    "arange_int32_down": lambda x: paddle.arange(5, -3, -2, dtype="int32"),
    "unique_counts_int32": lambda x: paddle.unique(x.astype("float64"), return_counts=True, dtype="int32")[1],
    "unique_inverse": lambda x: paddle.unique(x, return_inverse=True)[1],
    "tril_below": lambda x: paddle.tril(x, -1),
    "triu_above": lambda x: paddle.triu(x, 2),
    "repeat_interleave_tensor": lambda x: paddle.repeat_interleave(x, paddle.to_tensor(np.array([0, 2, 1])), 0),
    "repeat_interleave_int": lambda x: paddle.repeat_interleave(x, 3, 1),
}


def main() -> None:
    paddle.enable_static()
    OUT.mkdir(parents=True, exist_ok=True)
    values = {}
    for name, build in CASES.items():
        main_program, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main_program, startup):
            out = build(paddle.static.data("x", list(X.shape), "float32"))
            paddle._pir_ops.fetch(out, "out", 0).persistable = True
        executor = paddle.static.Executor(paddle.CPUPlace())
        executor.run(startup)
        (values[name],) = executor.run(main_program, feed={"x": X}, fetch_list=[out])
        core.serialize_pir_program(main_program, str(OUT / f"{name}.json"), True, False, True)
        print(name, values[name].dtype, values[name].tolist())
    np.savez(OUT / "values.npz", **values)
    np.savez(OUT / "feed.npz", x=X)


if __name__ == "__main__":
    main()
