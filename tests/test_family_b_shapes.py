"""Shape inference of the resize, vision, pooling and normalisation ops agrees with what their kernels compute
(every gradcheck case, run in float32: outputs stay float32), and the fractional pooling drawn at run time
(random_u 0) pools windows its grad agrees with."""

import numpy as np
import pytest

import gradc
from gradc import registry
from gradc.backward import append_grad_ops
from gradc.ir import to_var_type
from gradc.ops.infer import InferContext
from gradc.shapes import dims_match
from gradcheck_cases import interp, norm, pool, vision

CASES = interp.CASES + vision.CASES + pool.CASES + norm.CASES


def _float32(value):
    value = np.asarray(value)
    return value.astype(np.float32) if value.dtype.kind == "f" else value


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_inferred_shapes_match_the_kernel(case):
    program = gradc.Program()
    block = program.global_block
    feed, slots = {}, {}
    for slot, value in case.inputs.items():
        values = [_float32(v) for v in (value if isinstance(value, list) else [value])]
        slots[slot] = [f"{slot}{i}" for i in range(len(values))]
        for name, array in zip(slots[slot], values):
            block.create_var(name, list(array.shape), to_var_type(array.dtype))
            feed[name] = array
    opdef = registry.get(case.op)
    outputs = {slot: [f"{slot}.out"] for slot in opdef.outputs}
    for names in outputs.values():
        block.create_var(names[0], None, None)
    op = block.append_op(case.op, slots, outputs, case.attrs)
    inferred = opdef.infer(InferContext(op, block))
    fetch = [names[0] for names in outputs.values()]
    values = dict(zip(fetch, gradc.Executor().run(program, feed, fetch, gradc.Scope())))
    for slot, (shape, dtype) in inferred.items():
        got = values[f"{slot}.out"]
        assert len(got.shape) == len(shape) and all(map(dims_match, got.shape, shape)), (slot, got.shape, shape)
        if dtype == gradc.VarType.FP32:
            assert got.dtype == np.float32, slot


def test_fractional_pooling_draws_u_when_it_is_zero():
    """random_u 0: Paddle draws u on every run (from its global generator); so does gradc, and the grad
    follows the mask of the same run: each output is the input at its mask, and X@GRAD gathers Out@GRAD there."""
    x = np.random.default_rng(3).permutation(64).reshape(1, 1, 8, 8) / 8.0
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", [1, 1, 8, 8], gradc.VarType.FP64)
    block.create_var("out", [1, 1, 3, 5], gradc.VarType.FP64)
    block.create_var("mask", [1, 1, 3, 5], gradc.VarType.INT32)
    block.append_op("fractional_max_pool2d", {"x": ["x"]}, {"out": ["out"], "mask": ["mask"]},
                    {"output_size": [3, 5], "random_u": 0.0})
    append_grad_ops(program, ["out"])
    dout = np.arange(15.0).reshape(1, 1, 3, 5) + 1
    out, mask, dx = gradc.Executor().run(program, {"x": x, "out@GRAD": dout}, ["out", "mask", "x@GRAD"],
                                         gradc.Scope())
    np.testing.assert_array_equal(out.ravel(), x.ravel()[mask.ravel()])
    expected = np.zeros(64)
    np.add.at(expected, mask.ravel(), dout.ravel())
    np.testing.assert_array_equal(dx.ravel(), expected)


def test_an_empty_ceil_mode_window_gives_paddles_fill_and_no_gradient():
    """A ceil_mode window past the input holds no cell: Out -FLT_MAX and Mask -1, as Paddle's kernel, and
    no gradient (Paddle's grad kernel writes before X@GRAD's start there)."""
    x = np.arange(9.0).reshape(1, 1, 3, 3)
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", [1, 1, 3, 3], gradc.VarType.FP64)
    block.create_var("out", [1, 1, 3, 3], gradc.VarType.FP64)
    block.create_var("mask", [1, 1, 3, 3], gradc.VarType.INT32)
    block.append_op("max_pool2d_with_index", {"X": ["x"]}, {"Out": ["out"], "Mask": ["mask"]},
                    {"ksize": [2, 2], "strides": [2, 2], "paddings": [1, 1], "ceil_mode": True})
    append_grad_ops(program, ["out"])
    out, mask, dx = gradc.Executor().run(program, {"x": x, "out@GRAD": np.ones((1, 1, 3, 3))},
                                         ["out", "mask", "x@GRAD"], gradc.Scope())
    np.testing.assert_array_equal(out[0, 0, :2, :2], [[0, 2], [6, 8]])
    assert (out[0, 0, 2] == -np.finfo(np.float32).max).all() and (mask[0, 0, :, 2] == -1).all()
    np.testing.assert_array_equal(dx[0, 0], [[1, 0, 1], [0, 0, 0], [1, 0, 1]])


def test_uint8_images_resize_with_truncation():
    """Paddle registers the linear resizes for uint8: weighed in float, truncated when stored."""
    x = np.array([[[[0, 100], [50, 201]]]], np.uint8)
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", [1, 1, 2, 2], gradc.VarType.UINT8)
    block.create_var("out", None, gradc.VarType.UINT8)
    block.append_op("bilinear_interp_v2", {"X": ["x"]}, {"Out": ["out"]},
                    {"interp_method": "bilinear", "out_h": 3, "out_w": 3, "align_corners": True})
    out, = gradc.Executor().run(program, {"x": x}, ["out"], gradc.Scope())
    rows = np.stack([x[0, 0, 0], x[0, 0].mean(0), x[0, 0, 1]]).astype(float)   # 2 -> 3 with align_corners
    expected = np.stack([rows[:, 0], rows.mean(1), rows[:, 1]], axis=1)
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out[0, 0], np.trunc(expected))
