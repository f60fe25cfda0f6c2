"""The shape, indexing and tensor-creating ops against what PaddlePaddle 3.3.1 computed in float64 for small
programs built with its own API (tests/data/paddle/ops/shape, written by tools/paddle_shape_fixtures.py):
gradc loads Paddle's forward program, appends its own backward for sum(output * W), and must give Paddle's
outputs and input gradients.

Where Paddle's own gradient is wrong, the test checks gradc's against the formula (and the float64 central
differences of tests/gradcheck_cases agree) and that Paddle's differs: a negative index sends index_select's
grad to the column index + len(Index) instead of index + X's dim, and zeroes put_along_axis's Value grad."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from fixtures import NpzGroup
from gradc.backward import append_grad_ops
from gradc.verify_shapes import check_shapes

DATA = Path(__file__).parent / "data" / "paddle" / "ops" / "shape"
CASES = json.loads((DATA / "cases.json").read_text())["cases"]
VALUES = NpzGroup(DATA / "values.npz", "")   # read at a test's first look, in the worker that runs it


def run(case):
    name = case["name"]
    program = gradc.load(DATA / f"{name}.pb")
    check_shapes(program)   # gradc's inference accepts every shape Paddle declared
    feed = {k: VALUES[f"{name}/{k}"] for k in case["feeds"]}
    if case["weighted"]:
        for out in case["weighted"]:  # Paddle's compile-time shape of a tensor-decided output can be stale
            program.global_block.var(out).shape = list(VALUES[f"{name}/{out}@W"].shape)
        append_grad_ops(program, case["weighted"])
        feed.update({f"{o}@GRAD": VALUES[f"{name}/{o}@W"] for o in case["weighted"]})
    fetch = case["outputs"] + [f"{k}@GRAD" for k in case["grads"]]
    return dict(zip(fetch, gradc.Executor().run(program, feed, fetch, gradc.Scope())))


def _index_select_grad(values):
    dx = np.zeros_like(values["x"])
    np.add.at(dx, (slice(None), values["index"] % dx.shape[1]), values["index_select_0.tmp_0@W"])
    return {"x@GRAD": dx}


def _put_along_axis_grad(values):
    weight = values["put_along_axis_0.tmp_0@W"]
    return {"x@GRAD": weight, "value@GRAD": np.take_along_axis(weight, values["index"] % weight.shape[1], 1)}


PADDLE_WRONG = {"index_select_negative_index": _index_select_grad,
                "put_along_axis_negative_index": _put_along_axis_grad}


def _case_values(case) -> dict:
    prefix = case["name"] + "/"
    return {key[len(prefix):]: value for key, value in VALUES.items() if key.startswith(prefix)}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["name"])
def test_matches_paddle(case):
    ours = run(case)
    correct = PADDLE_WRONG[case["name"]](_case_values(case)) if case["name"] in PADDLE_WRONG else {}
    for name, value in ours.items():
        expected = VALUES[f"{case['name']}/{name}"]
        if name in correct:
            np.testing.assert_allclose(value, correct[name], rtol=1e-12, atol=1e-12, err_msg=name)
            continue
        assert value.shape == expected.shape and value.dtype == expected.dtype, \
            f"{name}: gradc {value.dtype}{list(value.shape)}, Paddle {expected.dtype}{list(expected.shape)}"
        np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12, err_msg=name)


@pytest.mark.parametrize("name", PADDLE_WRONG)
def test_paddles_wrong_gradient_differs(name):
    """The documented Paddle bugs are real: Paddle's stored gradient is not the right one."""
    values = _case_values(next(c for c in CASES if c["name"] == name))
    assert any(not np.allclose(values[grad], right) for grad, right in PADDLE_WRONG[name](values).items())
