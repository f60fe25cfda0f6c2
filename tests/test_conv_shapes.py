"""Shape inference of the conv/pool ops agrees with what their kernels compute, for every gradcheck case."""

import numpy as np
import pytest

from gradc import Executor, Program, Scope, registry
from gradc.errors import ExecutionError, ProgramError
from gradc.ops.infer import InferContext
from gradcheck_cases.conv import CASES


def _program(op_type, inputs, attrs):
    program = Program()
    block = program.global_block
    for slot, value in inputs.items():
        block.create_var(slot, list(value.shape))
    block.create_var("Out", None)
    out_slot = registry.get(op_type).outputs[0]
    op = block.append_op(op_type, {slot: [slot] for slot in inputs}, {out_slot: ["Out"]}, attrs)
    return program, op, out_slot


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_inferred_shape_matches_the_kernel(case):
    program, op, out_slot = _program(case.op, case.inputs, case.attrs)
    shape, _ = registry.get(case.op).infer(InferContext(op, program.global_block))[out_slot]
    feed = {slot: np.asarray(v, dtype=np.float32) for slot, v in case.inputs.items()}
    out = Executor().run(program, feed, ["Out"], Scope())[0]
    assert list(out.shape) == shape
    assert out.dtype == np.float32


def test_unknown_batch_and_spatial_dims_stay_unknown():
    inputs = {"Input": np.zeros((1, 3, 1, 1)), "Filter": np.zeros((4, 3, 3, 3))}
    program, op, _ = _program("conv2d", inputs, {"paddings": [1, 1]})
    program.global_block.var("Input").shape = [-1, 3, -1, 8]
    shape, _ = registry.get("conv2d").infer(InferContext(op, program.global_block))["Output"]
    assert shape == [-1, 4, -1, 8]


def test_channel_mismatch_names_the_op():
    inputs = {"Input": np.zeros((1, 4, 5, 5)), "Filter": np.zeros((4, 3, 3, 3))}
    program, op, _ = _program("conv2d", inputs, {})
    with pytest.raises(ProgramError, match="conv2d.*4 channels"):
        registry.get("conv2d").infer(InferContext(op, program.global_block))


@pytest.mark.parametrize("op_type, inputs, message", [
    ("conv2d", {"Input": np.zeros((1, 4, 5, 5)), "Filter": np.zeros((2, 3, 3, 3))}, "4 channels"),
    ("conv2d_transpose", {"Input": np.zeros((1, 4, 5, 5)), "Filter": np.zeros((3, 3, 3, 3))}, "4 channels"),
    ("pool2d", {"X": np.zeros((4, 5, 5))}, "expects a 4-D input, got shape \\[4, 5, 5\\]"),
])
def test_bad_inputs_fail_at_run_time_naming_the_op(op_type, inputs, message):
    program, _, _ = _program(op_type, inputs, {})
    feed = {slot: value.astype(np.float32) for slot, value in inputs.items()}
    with pytest.raises(ExecutionError, match=f"{op_type}.*{message}"):
        Executor().run(program, feed, ["Out"], Scope())


@pytest.mark.parametrize("op_type, inputs, attrs, message", [
    ("conv2d", {"Input": np.zeros((1, 3, 2, 5)), "Filter": np.zeros((4, 3, 3, 3))}, {"dilations": [2, 1]},
     "dilated kernel \\(5\\) is larger than the padded input \\(2\\) along H"),
    ("conv2d_transpose", {"Input": np.zeros((1, 3, 4, 4)), "Filter": np.zeros((3, 2, 3, 3))},
     {"strides": [2, 2], "output_size": [8, 9]}, "output_size 8 along H is below the 9"),
    ("conv2d_transpose", {"Input": np.zeros((1, 3, 1, 1)), "Filter": np.zeros((3, 2, 1, 1))},
     {"paddings": [1, 1]}, "output H would be -1"),
    ("pool2d", {"X": np.zeros((1, 3, 2, 2))}, {"ksize": [3, 3], "pooling_type": "max"}, "window does not fit"),
])
def test_impossible_geometry_fails_in_inference_and_at_run_time(op_type, inputs, attrs, message):
    program, op, _ = _program(op_type, inputs, attrs)
    with pytest.raises(ProgramError, match=f"{op_type}.*{message}"):
        registry.get(op_type).infer(InferContext(op, program.global_block))
    feed = {slot: value.astype(np.float32) for slot, value in inputs.items()}
    with pytest.raises(ExecutionError, match=f"{op_type}.*{message}"):
        Executor().run(program, feed, ["Out"], Scope())


@pytest.mark.parametrize("pad, stride, width", [(2, 1, 0), (2, 2, 1), (3, 1, 2)])
def test_an_empty_input_gives_what_paddle_gives(pad, stride, width):
    """A conv over no frames (DiffSinger's with initial durations): Paddle 3.3.1 gives zeros of width
    int((pad * 2 - 5) / stride) + 1 (C's division toward zero) and no error where the kernel is wider than the
    padding; its grads are an empty input grad and a zero filter grad."""
    from gradc import append_backward
    inputs = {"Input": np.zeros((1, 2, 1, 0)), "Filter": np.ones((3, 2, 1, 5))}
    program, _, _ = _program("conv2d", inputs, {"paddings": [0, pad], "strides": [1, stride]})
    block = program.global_block
    block.var("Filter").persistable = True
    block.var("Out").shape = [1, 3, 1, -1]
    block.create_var("loss", [])
    block.append_op("reduce_sum", {"X": ["Out"]}, {"Out": ["loss"]}, {"reduce_all": True, "dim": []})
    append_backward(program, "loss", parameter_list=["Filter"])
    scope = Scope()
    scope["Filter"] = np.ones((3, 2, 1, 5), np.float32)
    out, filter_grad = Executor().run(program, {"Input": np.zeros((1, 2, 1, 0), np.float32)},
                                      ["Out", "Filter@GRAD"], scope)
    np.testing.assert_array_equal(out, np.zeros((1, 3, 1, width)))
    np.testing.assert_array_equal(filter_grad, np.zeros((3, 2, 1, 5)))
