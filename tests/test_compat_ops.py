"""The GPU-only ops of paddle.compat and SyncBatchNorm (gradc.ops.compat; sync_batch_norm_ runs as batch_norm):
PIR programs written by tools/paddle_compat_gpu_only.py (Paddle loaded each and confirmed its op, operand, result
and attribute names), run by gradc against Paddle's CPU run of what the op computes in one process (expected.npz).
And the gradient F.embedding(scale_grad_by_freq=True) gives by design: each row's summed gradient divided by its
id's count in the batch, as Paddle's (its coverage rows check Paddle's numbers)."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.pir import load_pir, parse_pir, serialize_pir
from programs import Net

GPU_ONLY = Path(__file__).parent / "data" / "paddle" / "pir_gpu_only"
CASES = ["compat_max_with_index", "compat_min_with_index_keepdim", "sync_batch_norm_nchw", "sync_batch_norm_nhwc"]


def _run(program, case: str) -> tuple[dict, dict]:
    directory = GPU_ONLY / case
    with np.load(directory / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    with np.load(directory / "expected.npz") as archive:
        expected = {name: archive[name] for name in archive.files}
    fetches = json.loads((directory / "meta.json").read_text())["fetches"]
    got = gradc.Executor().run(program, feed, fetches, gradc.Scope())
    return dict(zip(fetches, got)), expected


@pytest.mark.parametrize("written_back", [False, True])
@pytest.mark.parametrize("case", CASES)
def test_gpu_only_ops_give_paddles_numbers(case, written_back):
    program = load_pir(GPU_ONLY / case / "program.json")
    if written_back:
        program = parse_pir(serialize_pir(program))
    got, expected = _run(program, case)
    for name, value in expected.items():
        np.testing.assert_allclose(np.asarray(got[name]), value, rtol=1e-5, atol=1e-6, err_msg=name)
        assert np.asarray(got[name]).dtype == value.dtype, name


def test_max_with_index_gives_the_first_of_tied_maxima():
    net = Net()
    x = net.data("x", [2, 3])
    op = net.block.append_op("max_with_index", {"x": [x]}, {}, {"dim": 1})
    op.outputs = {"values": [net.tmp([2], prefix="values")], "indices": [net.tmp([2], prefix="indices")]}
    values, indices = gradc.Executor().run(net.program, {"x": np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]])},
                                           [op.outputs["values"][0], op.outputs["indices"][0]], gradc.Scope())
    np.testing.assert_array_equal(values, [3.0, 2.0])
    np.testing.assert_array_equal(indices, [1, 0])


def test_scaled_embedding_gradient_divides_each_row_by_its_ids_count():
    net = Net()
    ids, weight = net.data("ids", [2, 3], gradc.ir.VarType.INT64), net.data("weight", [5, 2])
    op = net.block.append_op("embedding_with_scaled_gradient", {"x": [ids], "weight": [weight]}, {},
                             {"padding_idx": 4})
    op.outputs["out"] = [net.tmp([2, 3, 2], prefix="rows")]
    loss = net.op("reduce_sum", {"X": op.outputs["out"][0]}, {"reduce_all": True})
    gradc.append_backward(net.program, loss)
    ids_value = np.array([[1, 3, 1], [4, 1, 0]])
    (grad,) = gradc.Executor().run(net.program, {"ids": ids_value, "weight": np.ones((5, 2))}, ["weight@GRAD"],
                                   gradc.Scope())
    # id 1 three times (3 / 3), 0 and 3 once, 2 never, 4 the padding row
    np.testing.assert_array_equal(grad, [[1, 1], [1, 1], [0, 0], [1, 1], [0, 0]])
