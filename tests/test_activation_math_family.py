"""The activation, math, reduce and logic families beyond the registry walks: random ops checked with
their noise pinned, the attributes Paddle 3.3.1 ignores, integer semantics, increment's and scale's
makers, assert, float32 kernels, and bad input reported with the op (docs/ops-activation-math.md)."""

import numpy as np
import pytest

import gradc
from gradc import GradError, Program, ProgramError, Scope, VarType, registry
from gradc.backward import append_backward, gradients
from gradc.executor import randomness
from gradc.executor.paddle_random import Engine
from gradc.gradcheck import check_op
from gradc.verify_shapes import check_shapes
from test_axis_errors import _one_op_program
from test_cli import assert_clean_failure
from test_cli import gradc as gradc_cli

F32, F64, I32 = VarType.FP32, VarType.FP64, VarType.INT32
rng = np.random.default_rng(17)


def run_op(op_type, inputs, attrs=None, outputs=("Out",)):
    """One op on the given arrays; returns its outputs."""
    program = Program()
    block = program.global_block
    for slot, value in inputs.items():
        block.create_var(slot.lower(), list(np.shape(value)), gradc.ir.to_var_type(np.asarray(value).dtype))
    for slot in outputs:
        block.create_var(slot.lower(), None, None)
    block.append_op(op_type, {s: [s.lower()] for s in inputs}, {s: [s.lower()] for s in outputs}, dict(attrs or {}))
    feed = {s.lower(): np.asarray(v) for s, v in inputs.items()}
    return gradc.Executor().run(program, feed, [s.lower() for s in outputs], Scope())


@pytest.fixture
def pinned_noise(monkeypatch):
    """Every draw of rrelu and gumbel_softmax starts from the same seed, so central differences see one
    function."""
    monkeypatch.setattr(randomness, "engine", lambda seed=None: Engine(5))


def test_rrelu_training_gradient_with_the_noise_pinned(pinned_noise):
    x = rng.standard_normal((3, 4))
    x[np.abs(x) < 0.1] = 0.5
    check_op("rrelu", {"X": x}, {"lower": 0.1, "upper": 0.6})
    out, noise = run_op("rrelu", {"X": x}, {"lower": 0.1, "upper": 0.6}, outputs=("Out", "Noise"))
    np.testing.assert_array_equal(out, x * noise)
    assert np.all(noise[x > 0] == 1) and np.all((noise[x < 0] >= 0.1) & (noise[x < 0] <= 0.6))


@pytest.mark.parametrize("attrs", [{"temperature": 0.5}, {"temperature": 2.0, "axis": 0}, {"axis": 1}])
def test_gumbel_softmax_gradient_with_the_noise_pinned(pinned_noise, attrs):
    """The check fails for Paddle's gradient, which leaves out 1/temperature."""
    check_op("gumbel_softmax", {"X": rng.standard_normal((3, 4))}, attrs)


def test_draws_differ_between_runs():
    x = -np.ones((4, 5))
    assert not np.array_equal(run_op("rrelu", {"X": x})[0], run_op("rrelu", {"X": x})[0])
    assert not np.array_equal(run_op("gumbel_softmax", {"X": x})[0], run_op("gumbel_softmax", {"X": x})[0])


def test_maxout_gives_a_tied_maximums_gradient_to_the_first_as_paddle():
    """Paddle 3.3.1: X [1, 1, 0.5, 2] in groups of 2 -> X@GRAD [1, 0, 0, 1]."""
    program = Program()
    block = program.global_block
    block.create_var("x", [1, 4, 1, 1], F64, is_parameter=True, persistable=True)
    block.create_var("out", [1, 2, 1, 1], F64)
    block.create_var("loss", [], F64)
    block.append_op("maxout", {"X": ["x"]}, {"Out": ["out"]}, {"groups": 2})
    block.append_op("reduce_sum", {"X": ["out"]}, {"Out": ["loss"]}, {"reduce_all": True})
    append_backward(program, "loss")
    scope = Scope()
    scope["x"] = np.array([1.0, 1.0, 0.5, 2.0]).reshape(1, 4, 1, 1)
    (grad,) = gradc.Executor().run(program, {}, ["x@GRAD"], scope)
    assert grad.reshape(-1).tolist() == [1.0, 0.0, 0.0, 1.0]


def test_relu6_threshold_and_swish_beta_are_honoured():
    """Paddle 3.3.1 ignores both (extra attributes); Paddle 2.x computed with them, as gradc does."""
    x = np.linspace(-8, 8, 9)
    np.testing.assert_array_equal(run_op("relu6", {"X": x}, {"threshold": 3.0})[0], np.clip(x, 0, 3))
    np.testing.assert_array_equal(run_op("relu6", {"X": x})[0], np.clip(x, 0, 6))
    np.testing.assert_allclose(run_op("swish", {"X": x}, {"beta": 2.0})[0], x / (1 + np.exp(-2 * x)))
    np.testing.assert_allclose(run_op("swish", {"X": x})[0], x / (1 + np.exp(-x)))


@pytest.mark.parametrize("op_type", ["swish", "silu"])
def test_swish_and_silu_gradients_hold_at_float32_extremes(op_type):
    """d(x sigmoid(x))/dx tends to 1 and to 0 at the ends (e^x (1 + x) far below 0). Paddle 3.3.1's float32 kernels
    give 0 for swish from x = 1e8 and -inf, then NaN, for silu from x = -88: an untrained PP-OCRv5 recognizer's
    activations of 1e10 reach them."""
    x = np.array([1e4, 1e8, 1e10, 3e38, -88, -89, -1e3, -3e38], np.float32)
    (out,) = run_op(op_type, {"X": x})
    inputs = {"X": x, **({"Out": out} if op_type == "silu" else {}), "Out@GRAD": np.ones_like(x)}
    (grad,) = run_op(f"{op_type}_grad", inputs, outputs=("X@GRAD",))
    assert grad.dtype == np.float32
    np.testing.assert_allclose(grad, [1, 1, 1, 1, np.exp(-88.0) * -87, np.exp(-89.0) * -88, 0, 0], rtol=1e-6, atol=0)


def test_sigmoid_keeps_its_negative_tail():
    """sigmoid(x) is e^x / (1 + e^x) to rounding far below 0, as Paddle's 1 / (1 + e^-x) (PaddleRec's FM ends in
    sigmoid(-27.09) = 1.72e-12, which the tanh form rounded to 0); 1 and 0 at the infinities, no overflow."""
    x = np.array([-27.08825, -60, -1, 0, 3, 100, np.inf, -np.inf], np.float32)
    (out,) = run_op("sigmoid", {"X": x})
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 1 / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6, atol=0)
    (wide,) = run_op("sigmoid", {"X": np.array([-40.0, -700.0])})
    np.testing.assert_allclose(wide, np.exp([-40.0, -700.0]), rtol=1e-15)


def test_integer_division_rounds_toward_zero_and_zero_divisors_are_errors():
    x, y = np.array([7, -7, 7, -7], np.int32), np.array([2, 2, -2, -2], np.int32)
    (out,) = run_op("elementwise_div", {"X": x, "Y": y})
    assert out.dtype == np.int32 and out.tolist() == [3, -3, -3, 3]
    for op_type in ("elementwise_div", "elementwise_floordiv", "elementwise_mod"):
        with pytest.raises(gradc.ExecutionError, match=rf"block 0, op 0 \({op_type}\).*integer division by zero"):
            run_op(op_type, {"X": x, "Y": np.array([1, 0, 1, 1], np.int32)})
    with np.errstate(divide="ignore"):
        (out,) = run_op("elementwise_div", {"X": np.array([1.0, -1.0]), "Y": np.array([0.0, 0.0])})
    assert out.tolist() == [np.inf, -np.inf]


def test_integer_values_carry_no_gradient():
    """float x -> int32 -> integer division -> float: piecewise constant, so x gets no gradient (Paddle
    differentiates through the integers); the float path beside it is unaffected."""
    program = Program()
    block = program.global_block
    block.create_var("x", [4], F64)
    for name, shape, dtype in (("xi", [4], I32), ("two", [1], I32), ("q", [4], I32), ("qf", [4], F64),
                               ("s", [4], F64), ("loss", [], F64)):
        block.create_var(name, shape, dtype)
    block.append_op("cast", {"X": ["x"]}, {"Out": ["xi"]}, {"in_dtype": int(F64), "out_dtype": int(I32)})
    block.append_op("fill_constant", {}, {"Out": ["two"]}, {"shape": [1], "value": 2.0, "dtype": int(I32)})
    block.append_op("elementwise_div", {"X": ["xi"], "Y": ["two"]}, {"Out": ["q"]})
    block.append_op("cast", {"X": ["q"]}, {"Out": ["qf"]}, {"in_dtype": int(I32), "out_dtype": int(F64)})
    block.append_op("elementwise_mul", {"X": ["qf"], "Y": ["x"]}, {"Out": ["s"]})
    block.append_op("reduce_sum", {"X": ["s"]}, {"Out": ["loss"]}, {"reduce_all": True})
    with pytest.raises(GradError, match="input 'xi' is int32: gradc computes gradients of float and complex vars only"):
        gradients(program.clone(), "loss", ["x", "xi"])
    (grad_x,) = gradients(program, "loss", ["x"])
    assert not any(op.type == "elementwise_div_grad" for op in block.ops)
    x = np.array([3.7, -5.2, 8.9, 1.1])
    (dx,) = gradc.Executor().run(program, {"x": x}, [grad_x], Scope())
    np.testing.assert_array_equal(dx, np.trunc(np.trunc(x) / 2))   # d(q * x)/dx with q held constant


def test_increment_gradient_is_the_identity_and_scales_grad_reads_the_scale_tensor():
    (grad,) = _grad_ops("increment", {"X": [1]}, {"step": 3.0})
    assert (grad.type, grad.attrs["scale"], grad.inputs["X"]) == ("scale", 1.0, ["out@GRAD"])
    (grad,) = _grad_ops("scale", {"X": [2, 3], "ScaleTensor": [1], "BiasTensor": [1]}, {"scale": 5.0, "bias": 2.0})
    assert grad.inputs == {"X": ["out@GRAD"], "ScaleTensor": ["scaletensor"]} and grad.attrs["bias"] == 0.0
    (grad,) = _grad_ops("elementwise_mod", {"X": [3], "Y": [3]})
    assert grad.type == "remainder_grad"


def _grad_ops(op_type, shapes, attrs=None):
    program = Program()
    block = program.global_block
    for slot, shape in shapes.items():
        block.create_var(slot.lower(), shape, F64, is_parameter=slot in ("X", "Y"), persistable=True)
    block.create_var("out", shapes["X"], F64)
    block.create_var("loss", [], F64)
    block.append_op(op_type, {slot: [slot.lower()] for slot in shapes}, {"Out": ["out"]}, dict(attrs or {}))
    block.append_op("mean", {"X": ["out"]}, {"Out": ["loss"]})
    append_backward(program, "loss")
    return [op for op in block.ops[2:] if op.type not in ("fill_constant", "mean_grad")]


def test_integer_scale_and_increment_cast_their_attributes_as_paddle_does():
    x = np.array([7, -7], np.int32)
    assert run_op("scale", {"X": x}, {"scale": 2.7, "bias": -0.6})[0].tolist() == [14, -14]
    assert run_op("scale", {"X": x, "ScaleTensor": np.array([3.9], np.float32)})[0].tolist() == [21, -21]
    assert run_op("increment", {"X": np.array([-7], np.int64)}, {"step": 1.7})[0].tolist() == [-6]


def test_a_failed_assert_names_the_op_the_condition_and_the_data():
    data = np.arange(10.0)
    run_op("assert", {"Cond": np.array([True]), "Data": data}, {"summarize": 3}, outputs=())
    with pytest.raises(gradc.ExecutionError,
                       match=r"block 0, op 0 \(assert\): assertion failed: Cond 'cond' is false; data \[10\]: "
                             r"\[0\. 1\. 2\.\]$"):
        run_op("assert", {"Cond": np.array([False]), "Data": data}, {"summarize": 3}, outputs=())


NEW_OPS = {
    "brelu": {}, "celu": {"alpha": 0.5}, "hard_shrink": {}, "logsigmoid": {}, "mish": {}, "selu": {},
    "softshrink": {}, "tanh_shrink": {}, "thresholded_relu": {}, "relu6": {"threshold": 3.0}, "swish": {"beta": 2.0},
    "maxout": {"groups": 2}, "rrelu": {}, "gumbel_softmax": {"temperature": 0.5}, "prelu": {"mode": "channel"},
}


@pytest.mark.parametrize("op_type", [*NEW_OPS, "bilinear_tensor_product", "elementwise_mod"])
def test_forward_and_backward_stay_float32(op_type):
    """The executor rejects a float32 var computed in float64, so running in float32 checks every kernel."""
    x = rng.standard_normal((2, 4, 2, 2)).astype(np.float32)
    inputs = {"X": x}
    if op_type == "prelu":
        inputs["Alpha"] = np.full(4, 0.2, np.float32)
    elif op_type == "bilinear_tensor_product":
        inputs = {"X": x[:, :, 0, 0], "Y": x[:, :3, 1, 1], "Weight": np.ones((2, 4, 3), np.float32),
                  "Bias": np.ones((1, 2), np.float32)}
    elif op_type == "elementwise_mod":
        inputs["Y"] = np.full(x.shape, 0.7, np.float32)
    grads = check_op(op_type, inputs, NEW_OPS.get(op_type, {}), eps=1e-2, rtol=1.0, atol=1e9)
    assert all(g.dtype == np.float32 for g in grads.values())


def _program(op_type, shapes, attrs, outputs=("Out",)):
    program = Program()
    block = program.global_block
    for slot, (shape, dtype) in shapes.items():
        block.create_var(slot.lower(), shape, dtype)
    for slot in outputs:
        block.create_var(slot.lower(), None, None)
    block.append_op(op_type, {s: [s.lower()] for s in shapes}, {s: [s.lower()] for s in outputs}, attrs)
    return program


X4 = {"X": ([2, 4, 3, 3], F32)}
BAD_INPUT = {
    "celu alpha 0": ("celu", X4, {"alpha": 0.0}, "attribute alpha=0.0 is out of range"),
    "softshrink negative lambda": ("softshrink", X4, {"lambda": -0.5}, "attribute lambda=-0.5"),
    "selu scale 0": ("selu", X4, {"scale": 0.0}, "attribute scale=0.0"),
    "selu negative alpha": ("selu", X4, {"alpha": -1.0}, "attribute alpha=-1.0"),
    "rrelu lower below 0": ("rrelu", X4, {"lower": -0.1}, "lower=-0.1"),
    "rrelu upper above 1": ("rrelu", X4, {"upper": 1.5}, "upper=1.5"),
    "rrelu upper below lower": ("rrelu", X4, {"lower": 0.5, "upper": 0.25}, "upper=0.25 is below lower=0.5"),
    "maxout groups 1": ("maxout", X4, {"groups": 1}, "groups=1 is out of range"),
    "maxout missing groups": ("maxout", X4, {}, "groups=0 is out of range"),
    "maxout axis 2": ("maxout", X4, {"groups": 2, "axis": 2}, "axis 2 is not supported"),
    "maxout channels": ("maxout", X4, {"groups": 3}, "4 channels of X (axis 1) do not split into groups of 3"),
    "maxout rank 3": ("maxout", {"X": ([2, 4, 3], F32)}, {"groups": 2}, "4-D X"),
    "gumbel temperature": ("gumbel_softmax", X4, {"temperature": 0.0}, "temperature=0.0"),
    "gumbel axis": ("gumbel_softmax", X4, {"axis": 4}, "axis 4 is out of range"),
    "prelu mode": ("prelu", {**X4, "Alpha": ([1], F32)}, {"mode": "bogus"}, "unknown mode 'bogus'"),
    "prelu all": ("prelu", {**X4, "Alpha": ([2], F32)}, {"mode": "all"}, "one slope, but Alpha has shape [2]"),
    "prelu channel": ("prelu", {**X4, "Alpha": ([3], F32)}, {"mode": "channel"}, "per channel (4)"),
    "prelu channel nhwc": ("prelu", {**X4, "Alpha": ([4], F32)}, {"mode": "channel", "data_format": "NHWC"},
                           "per channel (3)"),
    "prelu layout": ("prelu", {**X4, "Alpha": ([4], F32)}, {"mode": "channel", "data_format": "NCDHW"},
                     "data_format NCHW or NHWC, got 'NCDHW'"),
    "prelu channel rank 1": ("prelu", {"X": ([4], F32), "Alpha": ([4], F32)}, {"mode": "channel"}, "rank >= 2"),
    "prelu element rank": ("prelu", {**X4, "Alpha": ([36], F32)}, {"mode": "element"}, "Alpha of X's rank"),
    "prelu element size": ("prelu", {**X4, "Alpha": ([1, 4, 3, 2], F32)}, {"mode": "element"},
                           "one slope per element of a sample ([4, 3, 3])"),
    "bilinear weight": ("bilinear_tensor_product", {"X": ([2, 3], F32), "Y": ([2, 4], F32), "Weight": ([5, 4, 4], F32)},
                        {}, "do not match"),
    "bilinear batch": ("bilinear_tensor_product", {"X": ([2, 3], F32), "Y": ([3, 4], F32), "Weight": ([5, 3, 4], F32)},
                       {}, "do not match"),
    "bilinear bias": ("bilinear_tensor_product", {"X": ([2, 3], F32), "Y": ([2, 4], F32), "Weight": ([5, 3, 4], F32),
                                                  "Bias": ([5], F32)}, {}, "Bias must be a row [1, 5], got [5]"),
    "scale tensor": ("scale", {"X": ([2, 3], F32), "ScaleTensor": ([2], F32)}, {}, "ScaleTensor must hold one value"),
    "reduce_all dim": ("reduce_all", {"X": ([2, 3], VarType.BOOL)}, {"dim": [2]}, "axis 2 is out of range"),
    "increment size": ("increment", {"X": ([2], F32)}, {}, "one element, got shape [2]"),
    "assert cond": ("assert", {"Cond": ([2], VarType.BOOL), "Data": ([3], F32)}, {}, "Cond must hold one bool"),
}


@pytest.mark.parametrize("case", BAD_INPUT, ids=str)
def test_bad_input_names_the_op_and_the_attribute_or_input(case):
    op_type, shapes, attrs, phrase = BAD_INPUT[case]
    program = _program(op_type, shapes, attrs, outputs=registry.get(op_type).outputs)
    with pytest.raises(ProgramError) as error:
        check_shapes(program)
    assert f"block 0, op 0 ({op_type})" in str(error.value) and phrase in str(error.value), str(error.value)


@pytest.mark.parametrize("type, ins, attrs, shapes, phrase", [
    ("prelu", {"X": ["w"], "Alpha": ["a"]}, {"mode": "channel"}, {"w": [2, 3], "a": [4]}, "per channel (3)"),
    ("maxout", {"X": ["w"]}, {"groups": 3, "axis": -1}, {"w": [1, 2, 2, 4]}, "do not split into groups of 3"),
])
def test_gradc_compile_reports_bad_input_in_one_line(tmp_path, type, ins, attrs, shapes, phrase):
    program = _one_op_program(tmp_path / "p.pb", type, ins, attrs, shapes, [shapes["w"]])
    assert_clean_failure(gradc_cli("compile", program, "-o", tmp_path / "o.pb"), f"block 0, op 0 ({type})", phrase)
