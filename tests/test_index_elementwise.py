"""Tensor indexing's strided-view ops (gradc.ops.index_elementwise): gradc runs Paddle 3.3.1's own PIR program of
index_elementwise_get / _put / _put_ / _put_with_tensor and their grads (tools/paddle_index_elementwise.py) to
Paddle's values and gradients (Paddle's reads checked against its dynamic graph's x[...], its writes against numpy's
by the tool), the ops on a transpose's and a slice's outputs too, which the executor hands them contiguous."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import gradc
from gradc.pir import load_pir

DATA = Path(__file__).parent / "data" / "paddle" / "index_elementwise"


def test_paddles_program_gives_paddles_values_and_gradients():
    meta = json.loads((DATA / "meta.json").read_text())
    feed = {name: np.array(value, np.int64 if isinstance(np.ravel(value)[0], (int, np.integer)) else np.float32)
            for name, value in meta["feed"].items()}
    program = load_pir(DATA / "program.json")
    got = dict(zip(meta["fetches"], gradc.Executor().run(program, feed, meta["fetches"], gradc.Scope())))
    assert {"pd_op.index_elementwise_get_grad", "pd_op.index_elementwise_put_with_tensor_grad"} <= set(meta["ops"])
    assert {"get_transposed", "put_sliced"} <= set(got)   # x from a transpose and a slice: contiguous in a program
    with np.load(DATA / "fetched.npz") as paddle:
        assert set(got) == set(paddle.files)
        for name, value in got.items():
            assert value.dtype == paddle[name].dtype and value.shape == paddle[name].shape, name
            np.testing.assert_allclose(value, paddle[name], rtol=1e-6, err_msg=name)

