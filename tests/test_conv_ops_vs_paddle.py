"""Single conv/pool ops and their grads against what PaddlePaddle 3.3.1 computed in float64
(tests/data/paddle/conv_ops, written by its generate.py): padding algorithms, layouts, groups,
output_size, ceil_mode and Paddle's non-exclusive average divisor."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from fixtures import NpzGroup
from gradc.backward import append_grad_ops

DATA = Path(__file__).parent / "data" / "paddle" / "conv_ops"
CASES = json.loads((DATA / "cases.json").read_text())["cases"]
VALUES = NpzGroup(DATA / "values.npz", "")   # read at a test's first look, in the worker that runs it

# Paddle's legacy pool2d max kernel ignores `adaptive` (it pools strided ksize windows into an output of
# ksize cells); gradc pools the adaptive bins, like the avg kernel does and as the attribute says.
PADDLE_WRONG = {"max_adaptive"}


def run(case):
    """gradc's Out and input grads, with Out@GRAD set to the case's loss weight."""
    program = gradc.Program()
    block = program.global_block
    feed = {slot: VALUES[f"{case['name']}/{slot}"] for slot in case["inputs"]}
    for slot, value in feed.items():
        block.create_var(slot, list(value.shape), gradc.VarType.FP64)
    block.create_var("out", None, gradc.VarType.FP64)
    out_slot = gradc.registry.get(case["op"]).outputs[0]
    block.append_op(case["op"], {slot: [slot] for slot in feed}, {out_slot: ["out"]}, case["attrs"])
    block.var("out").shape = list(VALUES[f"{case['name']}/out"].shape)
    append_grad_ops(program, ["out"])
    feed["out@GRAD"] = VALUES[f"{case['name']}/weight"]
    fetch = ["out", *(slot + "@GRAD" for slot in case["inputs"])]
    return dict(zip(fetch, gradc.Executor().run(program, feed, fetch, gradc.Scope())))


@pytest.mark.parametrize("case", [c for c in CASES if c["name"] not in PADDLE_WRONG], ids=lambda c: c["name"])
def test_matches_paddle(case):
    ours = run(case)
    paddle_out = VALUES[f"{case['name']}/out"]
    empty = np.isnan(paddle_out)  # Paddle averages an empty ceil_mode window to 0/0; gradc gives 0
    assert np.all(ours["out"][empty] == 0)
    np.testing.assert_allclose(ours["out"][~empty], paddle_out[~empty], rtol=1e-12, atol=1e-12)
    for slot in case["inputs"]:
        # rtol: Paddle's avg grad scales by 1/count in float32
        np.testing.assert_allclose(ours[slot + "@GRAD"], VALUES[f"{case['name']}/{slot}@GRAD"],
                                   rtol=1e-6, atol=1e-12, err_msg=slot)


def test_adaptive_max_pools_the_adaptive_bins():
    case = next(c for c in CASES if c["name"] == "max_adaptive")
    x = VALUES["max_adaptive/X"]
    (oh, ow), (h, w) = case["attrs"]["ksize"], x.shape[2:]
    expected = np.empty(x.shape[:2] + (oh, ow))
    def cells(i, out, size):  # [floor(i * size / out), ceil((i + 1) * size / out))
        return slice(i * size // out, -(-(i + 1) * size // out))

    for i in range(oh):
        for j in range(ow):
            expected[:, :, i, j] = x[:, :, cells(i, oh, h), cells(j, ow, w)].max((2, 3))
    out = run(case)["out"]
    np.testing.assert_array_equal(out, expected)
    assert not np.array_equal(out, VALUES["max_adaptive/out"])  # the Paddle bug this documents
