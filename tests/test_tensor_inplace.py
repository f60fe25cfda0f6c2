"""The PIR ops of Tensor methods gradc lacked (gradc.ops.tensor_fill, tensor_views, trunc_divide, range_v2): gradc
runs Paddle 3.3.1's own PIR programs of them (tools/paddle_tensor_inplace.py) to Paddle's numbers, the draws
element for element after the same seed, and its own backward of them to Paddle's gradient."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.executor import randomness
from gradc.ir import VarType
from gradc.pir import load_pir

DATA = Path(__file__).parent / "data" / "paddle" / "tensor_inplace"


@pytest.fixture(autouse=True)
def _fresh_entropy_after():
    yield
    randomness.seed(None)


def _case(case: str):
    meta = json.loads((DATA / case / "meta.json").read_text())
    feed = {"a": np.array(meta["feed"]["a"], np.float32), "i": np.array(meta["feed"]["i"], np.int64),
            "j": np.array(meta["feed"]["j"], np.int64)}
    with np.load(DATA / case / "fetched.npz") as paddle:
        return meta, feed, dict(paddle)


def _run_paddles_program(case: str):
    meta, feed, paddle = _case(case)
    randomness.seed(meta["seed"])
    program = load_pir(DATA / case / "program.json")
    feed = {name: value for name, value in feed.items() if program.block(0).find_var(name) is not None}
    got = gradc.Executor().run(program, feed, meta["fetches"], gradc.Scope())
    return dict(zip(meta["fetches"], got)), paddle


@pytest.mark.parametrize("case", ["runs", "views"])
def test_paddles_program_gives_paddles_values_draws_and_gradient(case):
    """fill_, zero_, fill_diagonal_ (with offset, with wrap), the normal_ / uniform_ / batch-size-like draws after
    paddle.seed(42), set_, trunc and floor division, paddle.range; as_strided, view by shape and by dtype (Paddle's
    numbers there are its dynamic graph's) and the gradient of a weighted sum."""
    got, paddle = _run_paddles_program(case)
    assert set(got) == set(paddle)
    for name, value in got.items():
        assert value.dtype == paddle[name].dtype and value.shape == paddle[name].shape, name
        np.testing.assert_array_equal(value, paddle[name], err_msg=name)


def test_gradcs_backward_of_an_overlapping_view_adds_the_grads_of_an_element_read_twice():
    """gradc's own backward of as_strided [3, 3] with strides [1, 1] over [0, 1, ...]: element k is read by every
    (i, j) with i + j = k, so its grad is the sum of their weights (central differences agree: the registry's
    gradcheck case). Paddle's dynamic graph keeps one of them only (docs/pir-sweep.md)."""
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", [12], VarType.FP64).stop_gradient = False
    block.create_var("w", [3, 3], VarType.FP64)
    for name in ("out", "prod", "loss"):
        block.create_var(name, None, VarType.FP64)
    block.append_op("as_strided", {"input": ["x"]}, {"out": ["out"]}, {"dims": [3, 3], "stride": [1, 1], "offset": 0})
    block.append_op("elementwise_mul", {"X": ["out"], "Y": ["w"]}, {"Out": ["prod"]}, {"axis": -1})
    block.append_op("reduce_sum", {"X": ["prod"]}, {"Out": ["loss"]},
                    {"reduce_all": True, "dim": [], "keep_dim": False})
    gradc.append_backward(program, "loss")
    weights = np.arange(1.0, 10.0).reshape(3, 3)
    (grad,) = gradc.Executor().run(program, {"x": np.linspace(-2.0, 2.5, 12), "w": weights}, ["x@GRAD"],
                                   gradc.Scope())
    expected = np.zeros(12)
    for i in range(3):
        for j in range(3):
            expected[i + j] += weights[i, j]
    np.testing.assert_array_equal(grad, expected)
    assert grad[1] == 2 + 4 and grad[2] == 3 + 5 + 7


def test_restrict_nonzero_is_where_index_of_a_condition_holding_its_count():
    """Paddle's PIR program of restrict_nonzero (written by hand: a CPU build refuses the op) gives paddle.nonzero's
    indices; a condition holding another count than total_true_num is refused, naming the op."""
    meta = json.loads((DATA / "restrict_nonzero" / "meta.json").read_text())
    condition = np.array(meta["feed"]["condition"], np.float32) > 0.3
    program = load_pir(DATA / "restrict_nonzero" / "program.json")
    (got,) = gradc.Executor().run(program, {"condition": condition}, ["out"], gradc.Scope())
    with np.load(DATA / "restrict_nonzero" / "fetched.npz") as paddle:
        np.testing.assert_array_equal(got, paddle["out"])
    assert got.dtype == np.int64 and got.shape == (6, 2)
    condition[0, 0] = not condition[0, 0]
    with pytest.raises(gradc.GradcError, match=r"restrict_nonzero.*holds 7 nonzero elements, not total_true_num 6"):
        gradc.Executor().run(program, {"condition": condition}, ["out"], gradc.Scope())


def test_a_write_through_a_view_reaches_the_source_in_paddle_not_in_gradc():
    """fill_ of set_'s view [2, 2] (strides [4, 1], offset one element) of source = 3a: both give a zero view. gradc's
    view is a copy, so source keeps 3a; Paddle's executor zeroes source's flat elements 1 to 4, in a row, not the
    view's 1, 2, 5, 6 (docs/pir-sweep.md)."""
    got, paddle = _run_paddles_program("aliased")
    meta = json.loads((DATA / "aliased" / "meta.json").read_text())
    source = np.array(meta["feed"]["a"], np.float32) * np.float32(3.0)
    np.testing.assert_array_equal(got["view"], paddle["view"])
    assert not got["view"].any()
    np.testing.assert_array_equal(got["source"], source)
    written = source.reshape(-1).copy()
    written[1:5] = 0.0
    np.testing.assert_array_equal(paddle["source"].reshape(-1), written)
