"""The v1 shape ops of older Paddle programs (gradc.ops.legacy_shape) beyond the registry walks: the semantics
that differ from their v2 ops, checked against values Paddle 3.3.1 gives, and their PIR export."""

import json

import numpy as np
import pytest

import gradc
from gradc import ProgramError
from gradc.errors import ExecutionError
from gradc.pir import parse_pir, serialize_pir
from test_activation_math_family import run_op

X234 = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
X23 = np.arange(6, dtype=np.float32).reshape(2, 3)


def test_expand_tiles_by_its_times_and_a_times_tensor_wins():
    out, = run_op("expand", {"X": X23}, {"expand_times": [2, 1]})
    assert out.dtype == np.float32 and np.array_equal(out, np.tile(X23, (2, 1)))
    out, = run_op("expand", {"X": X23, "ExpandTimes": np.array([1, 2], np.int32)}, {"expand_times": [2, 1]})
    assert np.array_equal(out, np.tile(X23, (1, 2)))
    out, = run_op("expand", {"X": X23}, {"expand_times": [0, 1]})   # Paddle: a count of 0 empties the dim
    assert out.shape == (0, 3)


@pytest.mark.parametrize("axis, shape", [(0, (1, 24)), (1, (2, 12)), (2, (6, 4)), (3, (24, 1))])
def test_flatten2_folds_into_two_dims_at_axis(axis, shape):
    out, xshape = run_op("flatten2", {"X": X234}, {"axis": axis}, outputs=("Out", "XShape"))
    assert np.array_equal(out, X234.reshape(shape)) and xshape.shape == (0, 2, 3, 4)


def test_top_k_takes_the_largest_along_the_last_axis():
    """Paddle 3.3.1 gives values [[3, 3, 2], [5, 5, 5]] here, and orders tied indices as its unstable selection
    leaves them ([1, 2, 0] in the second row), which gradc replays."""
    x = np.array([[1, 3, 3, 2], [5, 5, 5, 1]], np.float32)
    out, indices = run_op("top_k", {"X": x}, {"k": 3}, outputs=("Out", "Indices"))
    assert np.array_equal(out, [[3, 3, 2], [5, 5, 5]])
    assert np.array_equal(indices, [[1, 2, 3], [1, 2, 0]]) and indices.dtype == np.int64


def test_reshape_copies_a_zero_dim_and_infers_a_minus_one_and_writes_no_xshape():
    out, = run_op("reshape", {"X": X234}, {"shape": [0, -1, 2]})
    assert np.array_equal(out, X234.reshape(2, 6, 2))
    assert "XShape" not in gradc.registry.get("reshape").outputs


def test_transpose_takes_negative_axes():
    out, = run_op("transpose", {"X": X234}, {"axis": [-1, 0, 1]})
    assert np.array_equal(out, X234.transpose(2, 0, 1))


def test_crop_sizes_from_y_or_the_rest_of_the_dim():
    out, = run_op("crop", {"X": X234}, {"shape": [-1, 2, 2], "offsets": [0, 1, 1]})
    assert np.array_equal(out, X234[:, 1:3, 1:3])
    out, = run_op("crop", {"X": X234, "Y": np.zeros((2, 2, 3), np.float32)}, {"offsets": [0, 1, 1]})
    assert np.array_equal(out, X234[:, 1:3, 1:4])


def test_crop_outside_x_is_an_error():
    """Paddle 3.3.1 reads past X here (garbage values), and segfaults without offsets."""
    with pytest.raises(ExecutionError, match=r"crop of X \[2, 3, 4\] with shape \[1, 2, 2\] at offsets \[1, 2, 1\]"):
        run_op("crop", {"X": X234}, {"shape": [1, 2, 2], "offsets": [1, 2, 1]})
    with pytest.raises(ExecutionError, match="leaves X"):
        run_op("crop", {"X": X234, "Offsets": np.array([1, 2, 1], np.int32)}, {"shape": [1, 2, 2]})


def test_fill_constant_batch_size_like_as_paddle():
    out, = run_op("fill_constant_batch_size_like", {"Input": X234},
                  {"shape": [-1, 5], "value": 1.5, "input_dim_idx": 1, "output_dim_idx": 0})
    assert out.dtype == np.float32 and np.array_equal(out, np.full((3, 5), 1.5))
    out, = run_op("fill_constant_batch_size_like", {"Input": X234},
                  {"shape": [2, 5, 1], "str_value": "inf", "value": 1.5, "dtype": 6, "input_dim_idx": 2,
                   "output_dim_idx": 2})
    assert out.dtype == np.float64 and out.shape == (2, 5, 4) and np.all(out == np.inf)
    out, = run_op("fill_constant_batch_size_like", {"Input": X234}, {"shape": [2, 1], "value": 2.7, "dtype": 3,
                                                                      "output_dim_idx": 1})
    assert out.dtype == np.int64 and np.array_equal(out, [[2, 2], [2, 2]])


LAYERS = "tests/data/paddle/layers"


@pytest.mark.parametrize("case, v2", [("transpose_v1", "transpose2"), ("expand_v1", "tile"), ("top_k_v1", "top_k_v2"),
                                      ("crop_v1", "crop_tensor"), ("reshape_v1", "reshape")])   # pd_op.legacy_reshape
def test_pir_export_writes_the_v2_op(case, v2):
    """The v1 op exports as the PIR op of its v2 op, and imports back as the v2 op with the same output."""
    program = gradc.load(f"{LAYERS}/{case}/forward.pb")
    again = parse_pir(serialize_pir(program))
    assert again.global_block.ops[0].type == v2
    feed = dict(np.load(f"{LAYERS}/{case}/feed.npz"))
    first = gradc.Executor().run(program, feed, [program.global_block.ops[0].output("Out")[0]])
    second = gradc.Executor().run(again, feed, [again.global_block.ops[0].output("Out")[0]])
    assert np.array_equal(first[0], second[0])


@pytest.mark.parametrize("case", ["transpose_v1", "expand_v1", "top_k_v1", "crop_v1", "reshape_v1"])
def test_pir_export_of_the_grads_gives_paddles_gradients(case):
    """With gradc's backward: the v1 grad ops export as PIR grad ops (Paddle 3.3.1 runs the files to the same
    numbers), and the program read back trains to Paddle's gradients."""
    folder = f"{LAYERS}/{case}"
    program = gradc.load(f"{folder}/forward.pb")
    gradc.append_backward(program, json.loads(open(f"{folder}/meta.json").read())["loss"])
    again = parse_pir(serialize_pir(program))
    grads = dict(np.load(f"{folder}/grads.npz"))
    values = gradc.Executor().run(again, dict(np.load(f"{folder}/feed.npz")), list(grads))
    for name, value in zip(grads, values):
        np.testing.assert_allclose(value, grads[name], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("case, refusal", [("flatten2_v1", "no export for: flatten2"),
                                           ("crop_v1_like", r"\(crop\): input slot\(s\) Y have no counterpart")])
def test_ops_no_pir_op_computes_are_refused(case, refusal):
    with pytest.raises(ProgramError, match=refusal):
        serialize_pir(gradc.load(f"{LAYERS}/{case}/forward.pb"))
