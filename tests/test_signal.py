"""frame and overlap_add beyond the registry walks: values Paddle 3.3.1 gives (integer inputs, gaps between frames,
axis 0 on 3-D input, frames summed where they overlap), frame's gradient (samples past the last frame get 0), and
both ops' shapes inferred where a dim is known at run time only. Expected values were printed by Paddle 3.3.1."""

import numpy as np
import pytest

import gradc
import test_family_float32 as float32_family
from gradc import ExecutionError
from gradc.layers import ProgramBuilder
from gradcheck_cases import signal as signal_cases
from one_op import run


def test_frame_keeps_integers_and_skips_the_samples_between_gapped_frames():
    out = run("frame", {"X": np.arange(10, dtype=np.int64)}, {"frame_length": 3, "hop_length": 4})["Out"]
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [[0, 4], [1, 5], [2, 6]])


def test_frame_along_axis_0_keeps_the_trailing_dims():
    x = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    out = run("frame", {"X": x}, {"frame_length": 2, "hop_length": 1, "axis": 0})["Out"]
    np.testing.assert_array_equal(out, [[[[0, 1], [2, 3]], [[4, 5], [6, 7]]], [[[4, 5], [6, 7]], [[8, 9], [10, 11]]]])


@pytest.mark.parametrize(("x", "attrs", "expected"), [
    (np.arange(6, dtype=np.int32).reshape(2, 3), {"hop_length": 1}, [0, 4, 6, 5]),
    (np.arange(12, dtype=np.float32).reshape(3, 4), {"hop_length": 2, "axis": 0}, [0, 1, 6, 8, 14, 16, 10, 11]),
], ids=["int32, axis -1", "axis 0"])
def test_overlap_add_sums_where_frames_overlap(x, attrs, expected):
    out = run("overlap_add", {"X": x}, attrs)["Out"]
    assert out.dtype == x.dtype
    np.testing.assert_array_equal(out, expected)


def test_frame_grad_adds_each_frame_back_and_leaves_dropped_samples_at_0():
    net = ProgramBuilder()
    x = net.data("x", [9], "float32", stop_gradient=False)
    weights = net.data("w", [3, 2], "float32")
    framed = net.op("frame", {"X": x}, {"frame_length": 3, "hop_length": 4})[0]
    loss = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": framed, "Y": weights})[0]},
                  {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss)
    feed = {x: np.arange(9, dtype=np.float32), weights: np.arange(1, 7, dtype=np.float32).reshape(3, 2)}
    grad = gradc.Executor().run(net.program, feed, [f"{x}@GRAD"], gradc.Scope())[0]
    np.testing.assert_array_equal(grad, [1, 3, 5, 0, 2, 4, 6, 0, 0])


@pytest.mark.parametrize(("op", "shape", "attrs", "inferred", "fed", "computed"), [
    ("frame", [-1, 10], {"frame_length": 4, "hop_length": 3}, [-1, 4, 3], (2, 10), (2, 4, 3)),
    ("frame", [-1, 2], {"frame_length": 4, "hop_length": 3, "axis": 0}, [-1, 4, 2], (11, 2), (3, 4, 2)),
    ("overlap_add", [2, 4, -1], {"hop_length": 2}, [2, -1], (2, 4, 3), (2, 8)),
], ids=["batch unknown", "sequence unknown", "frames unknown"])
def test_an_unknown_dim_stays_unknown_until_the_run(op, shape, attrs, inferred, fed, computed):
    net = ProgramBuilder()
    x = net.data("x", shape, "float32")
    out = net.op(op, {"X": x}, attrs)[0]
    assert net.block.var(out).shape == inferred
    assert gradc.Executor().run(net.program, {x: np.ones(fed, np.float32)}, [out], gradc.Scope())[0].shape == computed


def test_a_sequence_shorter_than_a_frame_is_refused_at_run_time():
    net = ProgramBuilder()
    x = net.data("x", [2, -1], "float32")
    out = net.op("frame", {"X": x}, {"frame_length": 4, "hop_length": 1})[0]
    with pytest.raises(ExecutionError, match=r"op 0 \(frame\): frame_length 4 is longer than the sequence \(3 samples"):
        gradc.Executor().run(net.program, {x: np.ones((2, 3), np.float32)}, [out], gradc.Scope())


@pytest.mark.parametrize(("op", "shape", "attrs", "expected"), [
    ("frame", (0, 2 ** 20), {"frame_length": 2 ** 19, "hop_length": 1}, (0, 2 ** 19, 2 ** 19 + 1)),
    ("frame", (2 ** 20, 0), {"frame_length": 2 ** 19, "hop_length": 2, "axis": 0}, (2 ** 18 + 1, 2 ** 19, 0)),
    ("overlap_add", (0, 2 ** 25, 2 ** 25), {"hop_length": 1}, (0, 2 ** 26 - 1)),
], ids=["frame", "frame axis 0", "overlap_add"])
def test_empty_input_with_long_frames_takes_no_time_or_memory(op, shape, attrs, expected):
    """An empty X can declare any number of frames and samples: nothing is gathered or added per frame."""
    out = run(op, {"X": np.zeros(shape, np.float32)}, attrs)["Out"]
    assert out.shape == expected


def test_the_grad_of_frames_of_an_empty_input_is_empty():
    net = ProgramBuilder()
    x = net.data("x", [0, 2 ** 24], "float32", stop_gradient=False)
    framed = net.op("frame", {"X": x}, {"frame_length": 2 ** 23, "hop_length": 1})[0]
    gradc.append_backward(net.program, net.op("reduce_sum", {"X": framed}, {"reduce_all": True})[0])
    grad = gradc.Executor().run(net.program, {x: np.zeros((0, 2 ** 24), np.float32)}, [f"{x}@GRAD"], gradc.Scope())[0]
    assert grad.shape == (0, 2 ** 24)


FIRST_ORDER = [case for case in signal_cases.CASES if case.program is None]


@pytest.mark.parametrize("case", FIRST_ORDER, ids=[c.id for c in FIRST_ORDER])
def test_float32_in_float32_out(case):
    """Every gradcheck case of the family, run in float32: float32 outputs and input grads."""
    float32_family.test_float32_in_float32_out(case)
