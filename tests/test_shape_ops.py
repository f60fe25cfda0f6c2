"""Shape and indexing ops beyond the per-op gradchecks: forward semantics against numpy for the
cases that are easy to get wrong, shape inference against what the kernels produce, and the forward
values the grad ops read."""

import numpy as np
import pytest

import gradc
from fixtures import Fixture
from gradc import Executor, Scope, append_backward, registry
from gradc.errors import ProgramError
from gradc.ir import VarType
from gradc.layers import ProgramBuilder
from gradc.ops.infer import InferContext
from one_op import grad_op_of, run

r = np.random.default_rng(7)


x234 = r.standard_normal((2, 3, 4))


# ---------------------------------------------------------------- reshape family

@pytest.mark.parametrize("shape, expect", [([0, -1], (2, 12)), ([-1, 0, 2], (4, 3, 2)), ([4, 0, 2], (4, 3, 2)),
                                           ([24], (24,))])
def test_reshape2_copies_zero_dims_and_infers_minus_one(shape, expect):
    out = run("reshape2", {"X": x234}, {"shape": shape})
    assert out["Out"].shape == expect and out["XShape"].shape == (0, 2, 3, 4)
    np.testing.assert_array_equal(out["Out"].ravel(), x234.ravel())


# Paddle 3.3.1's PIR reshape of tensors with no elements (a generation loop's empty key/value cache)
@pytest.mark.parametrize("x, shape, expect", [
    ((6, 2, 0, 16), [-1, 3, 2, 0, 16], (2, 3, 2, 0, 16)), ((3, 0, 4), [0, -1], (0, 12)), ((3, 0, 4), [-1, 0], (12, 0)),
    ((3, 0, 4), [0, 0, 4], (0, 0, 4)), ((3, 0, 4), [0, 3, -1], (0, 3, 4)), ((3, 0, 4), [5, -1], (5, 0)),
    ((0, 4), [0, -1], (0, 4)), ((6, 2, 0, 16), [0, 0, 0, 0], (0, 0, 0, 0))])
def test_reshape2_of_no_elements_takes_a_zero_as_zero(x, shape, expect):
    assert run("reshape2", {"X": np.zeros(x)}, {"shape": shape})["Out"].shape == expect


@pytest.mark.parametrize("x, shape", [((3, 0, 4), [0, 0, -1]), ((6, 2, 0, 16), [0, -1, 0]), ((3, 0, 4), [0, 5, -1]),
                                      ((3, 0, 4), [2, 3])])
def test_reshape2_of_no_elements_refuses_what_paddle_refuses(x, shape):
    with pytest.raises(ProgramError, match="reshape2.*cannot reshape"):
        run("reshape2", {"X": np.zeros(x)}, {"shape": shape})


def test_reshape2_takes_its_shape_from_tensors_first():
    out = run("reshape2", {"X": x234, "ShapeTensor": [np.array([4], np.int32), np.array([-1], np.int32)]},
              {"shape": [3, 8]})
    assert out["Out"].shape == (4, 6)
    assert run("reshape2", {"X": x234, "Shape": np.array([0, 12])})["Out"].shape == (2, 12)


def test_reshape2_rejects_a_size_mismatch_naming_the_op():
    with pytest.raises(ProgramError, match="reshape2.*cannot reshape"):
        run("reshape2", {"X": x234}, {"shape": [5, -1]})


def test_unsqueeze2_inserts_axes_one_after_another():
    x = r.standard_normal((2, 3))
    assert run("unsqueeze2", {"X": x}, {"axes": [2, 0]})["Out"].shape == (1, 2, 3, 1)
    assert run("unsqueeze2", {"X": x}, {"axes": [0, 2]})["Out"].shape == (1, 2, 1, 3)
    assert run("unsqueeze2", {"X": x}, {"axes": [-1, -1]})["Out"].shape == (2, 3, 1, 1)


def test_squeeze2_ignores_listed_axes_whose_size_is_not_one():
    x = r.standard_normal((1, 3, 1, 2))
    assert run("squeeze2", {"X": x}, {"axes": [0, 1]})["Out"].shape == (3, 1, 2)
    assert run("squeeze2", {"X": x}, {"axes": []})["Out"].shape == (3, 2)
    assert run("squeeze2", {"X": x}, {"axes": [-2]})["Out"].shape == (1, 3, 2)


def test_flatten_and_transpose():
    x = r.standard_normal((2, 3, 4, 5))
    assert run("flatten_contiguous_range", {"X": x}, {"start_axis": 1, "stop_axis": -2})["Out"].shape == (2, 12, 5)
    np.testing.assert_array_equal(run("transpose2", {"X": x}, {"axis": [3, 0, 2, 1]})["Out"],
                                  x.transpose(3, 0, 2, 1))


@pytest.mark.parametrize("op_type, attrs", [
    ("reshape2", {"shape": [4, 6]}), ("transpose2", {"axis": [1, 2, 0]}), ("squeeze2", {"axes": []}),
    ("unsqueeze2", {"axes": [1]}), ("flatten_contiguous_range", {"start_axis": 0, "stop_axis": 1}),
])
def test_xshape_grads_read_xshape_not_x(op_type, attrs):
    grad = grad_op_of(op_type, {"X": x234}, attrs)
    assert grad.type == op_type + "_grad"
    assert "X" not in grad.inputs
    assert {"Out@GRAD", "XShape"} <= set(grad.inputs)
    assert registry.get(op_type).no_grad_outputs == {"XShape"}


MY_OPS = {"reshape2", "transpose2", "squeeze2", "unsqueeze2", "flatten_contiguous_range", "slice", "gather",
          "concat", "stack", "tile", "pad3d", "kldiv_loss", "bce_loss", "sigmoid_cross_entropy_with_logits",
          "softmax_with_cross_entropy"}


@pytest.mark.parametrize("case", ["tensor_ops", "transformer", "vision"])
def test_grad_ops_have_paddles_slots(case):
    """Paddle 3.3.1's own backward programs: each of these grad ops reads and writes the same slots."""
    fixture = Fixture(case)
    program = gradc.load(fixture.dir / "forward.pb")
    # kl_div's target detached, as Paddle's kldiv_loss_grad leaves it (gradc gives it a gradient otherwise)
    gradc.append_backward(program, loss=fixture.meta["loss"], no_grad_set=["softmax_0.tmp_0"] * (case == "tensor_ops"))
    paddle = gradc.load(fixture.dir / "backward.pb")

    def slots(prog):
        return [(op.type, sorted(op.inputs), sorted(op.outputs)) for op in prog.global_block.ops
                if op.type.removesuffix("_grad") in MY_OPS]

    assert slots(program) == slots(paddle)


# ---------------------------------------------------------------- slicing

x456 = r.standard_normal((4, 5, 6))


@pytest.mark.parametrize("attrs, expect", [
    ({"axes": [0, 2], "starts": [-100, 2], "ends": [100, -1]}, x456[:, :, 2:-1]),
    ({"axes": [1], "starts": [-2], "ends": [1000]}, x456[:, -2:]),
    ({"axes": [1], "starts": [3], "ends": [1]}, x456[:, 3:1]),
    ({"axes": [0, 1], "starts": [1, -1], "ends": [2, 10000], "decrease_axis": [0, 1]}, x456[1, -1]),
    ({"axes": [0, 1, 2], "starts": [3, 0, 5], "ends": [4, 1, 6], "decrease_axis": [0, 1, 2]}, x456[3, 0, 5]),
])
def test_slice_clamps_like_python_and_decreases_axes(attrs, expect):
    out = run("slice", {"Input": x456}, attrs)["Out"]
    assert out.shape == expect.shape
    np.testing.assert_array_equal(out, expect)


# Paddle 3.3.1's static executor bounds strided_slice (and set_value) as Python bounds a slice: measured on every
# start, end and stride in [-5, 5] and the int32 extremes on a dim of 4
@pytest.mark.parametrize("starts, ends, strides, expect", [
    ([0], [6], [2], x456[..., 0:6:2]),
    ([-1], [-1], [-1], x456[..., -1:-1:-1]),       # empty: end -1 is the last index, not "through index 0"
    ([2**31 - 1], [-2**31], [-1], x456[..., ::-1]),   # paddle.vander's reversal: every index
    ([4], [0], [-2], x456[..., 4:0:-2]),
    ([100], [-100], [-2], x456[..., ::-2]),
    ([-2], [-9], [-1], x456[..., -2::-1]),         # an end below -size keeps index 0
    ([-2], [-6], [-1], x456[..., -2:-6:-1]),
    ([1], [-1], [3], x456[..., 1:-1:3]),
])
def test_strided_slice_follows_paddles_bounds(starts, ends, strides, expect):
    out = run("strided_slice", {"Input": x456}, {"axes": [2], "starts": starts, "ends": ends, "strides": strides})
    np.testing.assert_array_equal(out["Out"], expect)


@pytest.mark.parametrize("value, fits", [((1, 6), True), ((1, 1, 6), True), ((6,), True), ((2, 6), False),
                                         ((6, 1), False)])
def test_set_value_drops_a_values_leading_ones_beyond_the_slices_rank_as_paddle_does(value, fits):
    """x[1, 2] = v for a [6] slice: Paddle 3.3.1 takes v of [1, 6] and [1, 1, 6], refuses [2, 6] and [6, 1]."""
    attrs = {"axes": [0, 1], "starts": [1, 2], "ends": [2, 3], "steps": [1, 1], "decrease_axes": [0, 1]}
    v = np.arange(float(np.prod(value))).reshape(value)
    if not fits:
        with pytest.raises((ProgramError, gradc.ExecutionError), match="does not broadcast to the slice's shape"):
            run("set_value", {"Input": x456, "ValueTensor": v}, attrs)
        return
    expect = x456.copy()
    expect[1, 2] = np.arange(6.0)
    np.testing.assert_array_equal(run("set_value", {"Input": x456, "ValueTensor": v}, attrs)["Out"], expect)


@pytest.mark.parametrize("starts, ends, steps", [
    ([-1], [-1], [-1]), ([2**31 - 1], [-2**31], [-1]), ([-2], [-9], [-1]), ([3], [1], [1]), ([4], [0], [-2]),
])
def test_set_value_bounds_its_slice_as_strided_slice_does(starts, ends, steps):
    out = run("set_value", {"Input": x456}, {"axes": [2], "starts": starts, "ends": ends, "steps": steps,
                                              "shape": [1], "values": [7.0]})["Out"]
    expect = x456.copy()
    expect[..., slice(starts[0], ends[0], steps[0])] = 7.0    # an empty slice leaves Input as it is
    np.testing.assert_array_equal(out, expect)


def test_strided_slice_decrease_axis_with_the_minus_one_zero_marker():
    attrs = {"axes": [0, 1], "starts": [-1, 0], "ends": [0, 5], "strides": [1, 2], "infer_flags": [-1, 1],
             "decrease_axis": [0]}
    out = run("strided_slice", {"Input": x456}, attrs)["Out"]
    np.testing.assert_array_equal(out, x456[-1, 0:5:2])


def test_slice_bounds_from_tensors_override_the_attributes():
    out = run("slice", {"Input": x456, "StartsTensor": np.array([1, 2]), "EndsTensorList": [np.array([3]),
                                                                                          np.array([4])]},
              {"axes": [0, 2], "starts": [0, 0], "ends": [1, 1], "infer_flags": [-1, -1]})["Out"]
    np.testing.assert_array_equal(out, x456[1:3, :, 2:4])


# ---------------------------------------------------------------- gather / scatter

def test_gather_along_an_axis_and_with_a_scalar_index():
    index = np.array([3, 0, 3])
    np.testing.assert_array_equal(run("gather", {"X": x456, "Index": index}, {"axis": 1})["Out"], x456[:, index])
    np.testing.assert_array_equal(run("gather", {"X": x456, "Index": index, "Axis": np.array([-1])})["Out"],
                                  x456[:, :, index])
    np.testing.assert_array_equal(run("gather", {"X": x456, "Index": np.array(2)})["Out"], x456[2])


def test_gather_nd_picks_slices():
    index = np.array([[[0, 1], [3, 4]], [[2, 2], [1, 0]]])
    out = run("gather_nd", {"X": x456, "Index": index})["Out"]
    assert out.shape == (2, 2, 6)
    np.testing.assert_array_equal(out[1, 0], x456[2, 2])


def test_gather_grad_accumulates_repeated_indices():
    grad = grad_op_of("gather", {"X": r.standard_normal((4, 2)), "Index": np.array([1, 1, 3])})
    assert grad.type == "gather_grad" and sorted(grad.inputs) == ["Axis", "Index", "Out@GRAD", "X"]
    net = ProgramBuilder()
    x, index = net.data("x", [4, 2], "float64"), net.data("index", [3], "int64")
    out = net.op("gather", {"X": x, "Index": index})[0]
    net.block.var(x).is_parameter = True
    append_backward(net.program, net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0])
    (dx,) = Executor().run(net.program, {"x": np.ones((4, 2)), "index": np.array([1, 1, 3])}, ["x@GRAD"], Scope())
    np.testing.assert_array_equal(dx, [[0, 0], [2, 2], [0, 0], [1, 1]])


@pytest.mark.parametrize("overwrite", [True, False])
def test_scatter_modes_and_x_grad_zero_on_every_indexed_row(overwrite):
    x = np.arange(10.0).reshape(5, 2)
    ids = np.array([1, 3, 1])
    updates = np.array([[10.0, 10], [20, 20], [30, 30]])
    out = run("scatter", {"X": x, "Ids": ids, "Updates": updates}, {"overwrite": overwrite})["Out"]
    row1 = [30, 30] if overwrite else [40, 40]  # overwrite: the last write wins; add: rows zeroed, then summed
    np.testing.assert_array_equal(out, [x[0], row1, x[2], [20, 20], x[4]])
    from gradc.gradcheck import check_op
    grads = check_op("scatter", {"X": x, "Ids": ids, "Updates": updates}, {"overwrite": overwrite})
    assert not grads["X0"][[1, 3]].any() and grads["X0"][[0, 2, 4]].all()
    assert (grads["Updates0"][0] == 0).all() == overwrite  # an overwritten update gets no grad


# ---------------------------------------------------------------- stack, expand, tile, pad, split

def test_stack_unstack_and_expand():
    xs = [r.standard_normal((2, 3)) for _ in range(3)]
    np.testing.assert_array_equal(run("stack", {"X": xs}, {"axis": -1})["Y"], np.stack(xs, -1))
    parts = run("unstack", {"X": x456}, {"axis": 1, "num": 5})["Y"]
    assert len(parts) == 5 and parts[2].shape == (4, 6)
    np.testing.assert_array_equal(parts[2], x456[:, 2])
    x = r.standard_normal((3, 1))
    np.testing.assert_array_equal(run("expand_v2", {"X": x}, {"shape": [2, -1, 4]})["Out"],
                                  np.broadcast_to(x, (2, 3, 4)))
    np.testing.assert_array_equal(run("expand_as_v2", {"X": x, "Y": x234})["Out"], np.broadcast_to(x, (2, 3, 4)))
    np.testing.assert_array_equal(run("tile", {"X": x}, {"repeat_times": [2, 1, 3]})["Out"], np.tile(x, (2, 1, 3)))


def test_pad_takes_a_pair_per_dim_from_the_first():
    x = r.standard_normal((2, 3))
    out = run("pad", {"X": x}, {"paddings": [1, 0, 0, 2], "pad_value": 9.0})["Out"]
    np.testing.assert_array_equal(out, np.pad(x, [(1, 0), (0, 2)], constant_values=9.0))


@pytest.mark.parametrize("paddings, phrase", [([1, 0], "needs 2 \\* rank = 4 paddings"), ([1, 0, -1, 0], ">= 0")])
def test_pad_rejects_paddings_paddle_rejects(paddings, phrase):
    with pytest.raises(ProgramError, match=f"op 0 \\(pad\\).*{phrase}"):
        run("pad", {"X": r.standard_normal((2, 3))}, {"paddings": paddings})


@pytest.mark.parametrize("mode, np_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
@pytest.mark.parametrize("data_format", ["NCDHW", "NDHWC"])
def test_pad3d_modes_match_numpy(mode, np_mode, data_format):
    x = r.standard_normal((1, 2, 3, 4, 3))
    # [left, right, top, bottom, front, back] pad W, H, D
    out = run("pad3d", {"X": x}, {"paddings": [1, 2, 0, 2, 1, 1], "mode": mode, "data_format": data_format})["Out"]
    spatial = [(1, 1), (0, 2), (1, 2)]
    pairs = [(0, 0), (0, 0)] + spatial if data_format == "NCDHW" else [(0, 0)] + spatial + [(0, 0)]
    np.testing.assert_array_equal(out, np.pad(x, pairs, mode=np_mode))


def test_split_normalises_a_negative_axis_with_sections():
    x = r.standard_normal((2, 6))
    parts = run("split", {"X": x}, {"axis": -1, "sections": [1, -1, 2]})["Out"]
    assert [p.shape for p in parts] == [(2, 1), (2, 3), (2, 2)]
    np.testing.assert_array_equal(np.concatenate(parts, -1), x)


def test_concat_grad_keeps_placeholders_for_inputs_without_grad():
    net = ProgramBuilder()
    a, b, c = (net.data(n, [2, k], "float64") for n, k in (("a", 1), ("b", 2), ("c", 3)))
    net.block.var(b).stop_gradient = True
    out = net.op("concat", {"X": [a, b, c]}, {"axis": -1})[0]
    append_backward(net.program, net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0])
    grad = next(op for op in net.block.ops if op.type == "concat_grad")
    assert grad.outputs["X@GRAD"] == ["a@GRAD", "@EMPTY@", "c@GRAD"]
    feed = {"a": np.ones((2, 1)), "b": np.ones((2, 2)), "c": np.ones((2, 3))}
    da, dc = Executor().run(net.program, feed, ["a@GRAD", "c@GRAD"], Scope())
    assert da.shape == (2, 1) and dc.shape == (2, 3)


# ---------------------------------------------------------------- programs and inference


def test_a_program_chaining_shape_ops_has_the_numeric_gradient():
    from gradc.gradcheck import check_program
    net = ProgramBuilder()
    x, w = net.data("x", [2, 3, 4], "float64"), net.data("w", [2, 6], "float64")
    flat = net.op("reshape2", {"X": x}, {"shape": [0, -1]})[0]                        # [2, 12]
    cols = net.op("transpose2", {"X": flat}, {"axis": [1, 0]})[0]                     # [12, 2]
    picked = net.op("gather", {"X": cols, "Index": net.data("index", [5], "int64")})[0]  # [5, 2]
    window = net.op("strided_slice", {"Input": cols}, {"axes": [0], "starts": [-1], "ends": [-1],
                                                      "strides": [-3]})[0]           # [4, 2]
    both = net.op("concat", {"X": [picked, window]}, {"axis": 0})[0]                  # [9, 2]
    tiled = net.op("tile", {"X": net.op("unsqueeze2", {"X": both}, {"axes": [0]})[0]},
                   {"repeat_times": [2, 1, 1]})[0]                                    # [2, 9, 2]
    best = net.op("top_k_v2", {"X": net.op("transpose2", {"X": tiled}, {"axis": [0, 2, 1]})[0]}, {"k": 3})[0]
    logits = net.op("flatten_contiguous_range", {"X": best}, {"start_axis": 1, "stop_axis": 2})[0]  # [2, 6]
    scattered = net.op("scatter", {"X": logits, "Ids": net.data("ids", [1], "int64"),
                                   "Updates": net.op("slice", {"Input": w}, {"axes": [0], "starts": [0],
                                                                            "ends": [1]})[0]})[0]
    target = net.op("softmax", {"X": net.data("t", [2, 6], "float64")}, {"axis": -1})[0]  # Target gets no grad
    loss = net.op("kldiv_loss", {"X": scattered, "Target": target}, {"reduction": "batchmean"}, outputs=["Loss"])[0]
    feed = {"x": r.standard_normal((2, 3, 4)), "w": r.standard_normal((2, 6)),
            "t": r.standard_normal((2, 6)),
            "index": np.array([0, 5, 5, 11, 3]), "ids": np.array([1])}
    check_program(net.program, feed, ["x", "w"], loss=loss)


@pytest.mark.parametrize("case", ["tensor_ops", "transformer", "vision"])
def test_shape_inference_agrees_with_paddles_declared_shapes(case):
    from gradc.verify_shapes import check_shapes
    check_shapes(gradc.load(Fixture(case).dir / "forward.pb"))


def test_shape_op_gives_the_dims_as_int32():
    program = gradc.Program()
    block = program.global_block
    block.create_var("x", [2, 3, 4], VarType.FP32)
    block.create_var("s", None, None)
    block.append_op("shape", {"Input": ["x"]}, {"Out": ["s"]})
    (dims,) = Executor().run(program, {"x": np.zeros((2, 3, 4), "float32")}, ["s"], Scope())
    assert dims.dtype == np.int32 and dims.tolist() == [2, 3, 4]
    (shape, dtype), = registry.get("shape").infer(InferContext(block.ops[0], block)).values()
    assert shape == [3] and dtype == VarType.INT32


def test_squeeze2_takes_a_listed_unknown_dim_for_1_like_paddles_inference():
    """Paddle declares squeeze2's output with listed unknown dims dropped; gradc's inference agrees, and
    squeezes only size-1 dims when no axis is listed."""
    from gradc.ops.shape import squeeze_dims
    assert squeeze_dims([2, -1, 1], [1]) == [2, 1]
    assert squeeze_dims([2, -1, 1], []) == [2, -1]
    assert squeeze_dims([1, 3, 1], [-1]) == [1, 3]


@pytest.mark.parametrize("attrs, expected", [
    ({"shape": [2], "dtype": 5, "fp32_values": [1.5, 2.5]}, np.array([1.5, 2.5], np.float32)),
    ({"shape": [1, 2], "dtype": 3, "int64_values": [2**40, -3]}, np.array([[2**40, -3]], np.int64)),
    ({"shape": [2], "dtype": 0, "bool_values": [1, 0]}, np.array([True, False])),
])
def test_assign_value_reads_paddle_2_per_dtype_values(attrs, expected):
    """Programs saved by Paddle 2.x keep assign_value's literal in the attribute of its dtype, not `values`."""
    out = run("assign_value", {}, attrs)["Out"]
    assert out.dtype == expected.dtype
    np.testing.assert_array_equal(out, expected)
