"""gradc.ops.extra_math: values at the edges (pinned against closed forms, mpmath and Paddle 3.3.1), the places
gradc departs from Paddle, and the PIR round trip of the ops no Paddle fixture holds (equal_all,
margin_cross_entropy)."""

import math

import numpy as np
import pytest

import gradc
from gradc import registry
from gradc.errors import ExecutionError, ProgramError
from gradc.gradcheck import check_program
from gradc.ir import to_var_type
from gradc.ops.infer import InferContext
from gradc.pir import parse_pir, serialize_pir
from gradc.verify_shapes import check_shapes


def program_of(op: str, inputs: dict, outputs: list[str], attrs: dict | None = None, *, grads: tuple = ()):
    """One op over fed inputs (names: the slots lowercased, a list slot's vars numbered); ``grads``: input slots
    to differentiate through loss = sum(out * w) over the first output."""
    program = gradc.Program()
    block = program.global_block
    feed, slots = {}, {}
    for slot, value in inputs.items():
        arrays = value if isinstance(value, list) else [value]
        slots[slot] = [f"{slot.lower()}{i}" for i in range(len(arrays))]
        for name, array in zip(slots[slot], arrays):
            var = block.create_var(name, list(array.shape), to_var_type(array.dtype))
            var.stop_gradient = slot not in grads
            feed[name] = array
    for slot in outputs:
        block.create_var(slot.lower(), None, None)
    appended = block.append_op(op, slots, {slot: [slot.lower()] for slot in outputs}, attrs or {})
    for slot, (shape, dtype) in registry.get(op).infer(InferContext(appended, block)).items():
        if slot in outputs:   # declared as inference says: the backward needs their dtypes
            block.var(slot.lower()).shape, block.var(slot.lower()).dtype = shape, dtype
    return program, feed


def run(op: str, inputs: dict, outputs: list[str], attrs: dict | None = None):
    program, feed = program_of(op, inputs, outputs, attrs)
    check_shapes(program)
    return gradc.Executor().run(program, feed, [slot.lower() for slot in outputs], gradc.Scope())


def test_gammaln_is_lgamma_with_its_poles():
    x = np.array([0.5, 3.0, 10.5, -2.5, 0.0, -3.0], np.float32)
    (out,) = run("gammaln", {"x": x}, ["out"])
    assert out.dtype == np.float32
    np.testing.assert_allclose(out[:4], [math.lgamma(v) for v in x[:4]], rtol=1e-6)
    assert np.isposinf(out[4:]).all()


def test_nextafter_steps_one_float32_ulp_toward_y():
    x, y = np.array([1.0, 1.0, 0.0], np.float32), np.array([2.0, 0.0, -1.0], np.float32)
    (out,) = run("nextafter", {"x": x, "y": y}, ["out"])
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [1 + 2.0 ** -23, 1 - 2.0 ** -24, -np.float32(1.4e-45)])


def test_multiplex_takes_int64_ids_which_paddles_cpu_kernel_refuses():
    """Paddle 3.3.1's CPU kernel reads Ids as int32 only (an int64 Ids fails: the multiplex_ids64 fixture)."""
    xs = [np.full((3, 2), float(k)) for k in range(3)]
    (out,) = run("multiplex", {"X": xs, "Ids": np.array([[2], [0], [1]], np.int64)}, ["Out"])
    np.testing.assert_array_equal(out[:, 0], [2, 0, 1])


def test_equal_all_and_is_empty():
    x = np.array([1.0, np.nan])
    assert not run("equal_all", {"X": x, "Y": x.copy()}, ["Out"])[0]   # NaN != NaN
    assert not run("equal_all", {"X": np.zeros(2), "Y": np.zeros(3)}, ["Out"])[0]
    assert run("equal_all", {"X": np.ones((2, 2)), "Y": np.ones((2, 2))}, ["Out"])[0]
    assert run("is_empty", {"X": np.zeros((0, 3))}, ["Out"])[0] and not run("is_empty", {"X": np.zeros(1)}, ["Out"])[0]


def test_swiglu_without_y_halves_x():
    x = np.array([[1.0, -2.0, 3.0, 0.5]])
    (out,) = run("swiglu", {"x": x}, ["out"])
    a, b = x[:, :2], x[:, 2:]
    np.testing.assert_allclose(out, a / (1 + np.exp(-a)) * b)


def test_reduce_as_sums_leading_and_unit_dims():
    x = np.arange(24.0).reshape(2, 3, 4)
    (out,) = run("reduce_as", {"x": x, "target": np.zeros((3, 1))}, ["out"])
    np.testing.assert_array_equal(out, x.sum(axis=(0, 2))[:, None])


@pytest.mark.parametrize("dtype", ["bool", "int32"])
def test_reduce_as_sums_bool_and_int32_into_int64_as_paddle(dtype):
    (out,) = run("reduce_as", {"x": np.ones((2, 3), dtype), "target": np.ones(3, dtype)}, ["out"])
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [2, 2, 2])


def test_norm_differentiates_its_norm_output_which_paddle_leaves_out():
    """weight_norm's l2_norm keeps only Norm: Paddle 3.3.1 gives x no gradient at all (the l2_norm fixture); gradc
    gives d Norm / dX = Out, checked against central differences."""
    program, feed = program_of("norm", {"X": np.random.default_rng(3).standard_normal((3, 4))}, ["Out", "Norm"],
                               {"axis": 1}, grads=("X",))
    block = program.global_block
    feed["w"] = np.array([[1.0], [-2.0], [0.5]])
    block.create_var("w", [3, 1], to_var_type(np.dtype("float64"))).stop_gradient = True
    for name, shape in (("weighted", [3, 1]), ("loss", [])):
        block.create_var(name, shape, to_var_type(np.dtype("float64")))
    block.append_op("elementwise_mul", {"X": ["norm"], "Y": ["w"]}, {"Out": ["weighted"]})
    block.append_op("reduce_sum", {"X": ["weighted"]}, {"Out": ["loss"]}, {"reduce_all": True})
    grads = check_program(program, feed, ["x0"], loss="loss")
    np.testing.assert_allclose(grads["x0"], feed["w"] * feed["x0"] / np.linalg.norm(feed["x0"], axis=1, keepdims=True))


def margin_loss(logits, label, m1, m2, m3, scale):
    z = logits.copy()
    rows = np.arange(len(label))
    z[rows, label] = np.cos(m1 * np.arccos(z[rows, label]) + m2) - m3
    z *= scale
    return np.log(np.exp(z).sum(1)) - z[rows, label]


def test_margin_cross_entropy_is_the_angular_margin_softmax_loss():
    logits, label = np.random.default_rng(4).uniform(-0.8, 0.8, (3, 5)), np.array([[1], [0], [4]])
    attrs = {"margin1": 1.2, "margin2": 0.3, "margin3": 0.1, "scale": 3.0}
    softmax, loss = run("margin_cross_entropy", {"Logits": logits, "Label": label}, ["Softmax", "Loss"], attrs)
    np.testing.assert_allclose(loss[:, 0], margin_loss(logits, label[:, 0], 1.2, 0.3, 0.1, 3.0))
    # Softmax is that of the margined, scaled logits (Paddle's kernel): at the label, exp(-Loss)
    np.testing.assert_allclose(softmax.sum(1), 1.0)
    np.testing.assert_allclose(softmax[np.arange(3), label[:, 0]], np.exp(-loss[:, 0]))


def margin_grad(logits, label, dloss, m1, m2, m3, scale):
    """dLogits from the formula: scale (softmax(z) - onehot) dLoss, times d/dc cos(m1 acos(c) + m2) =
    m1 sin(m1 acos(c) + m2) / sin(acos(c)) at the label, z the margined, scaled logits."""
    rows = np.arange(len(label))
    angle = np.arccos(logits[rows, label])
    z = logits.copy()
    z[rows, label] = np.cos(m1 * angle + m2) - m3
    z *= scale
    p = np.exp(z - z.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[rows, label] -= 1
    grad = scale * p * dloss[:, None]
    grad[rows, label] *= m1 * np.sin(m1 * angle + m2) / np.sin(angle)
    return grad


@pytest.mark.parametrize("margins", [(1.0, 0.5, 0.0), (1.0, 0.0, 0.35), (1.35, 0.0, 0.0), (1.2, 0.3, 0.1)],
                         ids=["arcface", "cosface", "sphereface", "combined"])
def test_margin_cross_entropy_grad_is_the_formulas_on_cpu(margins):
    """Paddle 3.3.1 has no CPU margin_cross_entropy_grad kernel (it cannot build the coverage rows); gradc's is the
    formula's, in float64, for each kind of margin (SphereFace: margin1 only)."""
    rng = np.random.default_rng(8)
    logits, label, dloss = rng.uniform(-0.8, 0.8, (4, 6)), np.array([[2], [0], [5], [2]]), rng.standard_normal(4)
    m1, m2, m3 = (float(np.float32(m)) for m in margins)   # float32 attributes, as the kernel reads them
    attrs = {"margin1": m1, "margin2": m2, "margin3": m3, "scale": 2.5, "return_softmax": True}
    program, feed = program_of("margin_cross_entropy", {"Logits": logits, "Label": label}, ["Softmax", "Loss"],
                               attrs, grads=("Logits",))
    block = program.global_block
    feed["dloss"] = dloss[:, None]
    for name, shape in (("dloss", [4, 1]), ("weighted", [4, 1]), ("total", [])):
        block.create_var(name, shape, to_var_type(np.dtype("float64")))
    block.append_op("elementwise_mul", {"X": ["loss"], "Y": ["dloss"]}, {"Out": ["weighted"]})
    block.append_op("reduce_sum", {"X": ["weighted"]}, {"Out": ["total"]}, {"reduce_all": True})
    gradc.append_backward(program, "total")
    (grad,) = gradc.Executor().run(program, feed, ["logits0@GRAD"], gradc.Scope())
    np.testing.assert_allclose(grad, margin_grad(logits, label[:, 0], dloss, m1, m2, m3, 2.5), rtol=1e-12, atol=1e-14)


def test_margin_cross_entropy_refuses_model_parallel_by_name():
    with pytest.raises(ProgramError, match=r"margin_cross_entropy.*nranks=2 is not supported"):
        program_of("margin_cross_entropy", {"Logits": np.zeros((2, 3)), "Label": np.zeros(2, np.int64)},
                   ["Softmax", "Loss"], {"nranks": 2})


def test_multiplex_refuses_an_index_past_its_tensors():
    with pytest.raises(ExecutionError, match=r"multiplex.*Ids 3 \(row 0\) picks no tensor of X"):
        run("multiplex", {"X": [np.zeros((1, 2))] * 2, "Ids": np.array([[3]], np.int32)}, ["Out"])


def round_trips_through_pir(program, feed: dict, fetch: list[str], ops: tuple[str, ...]) -> list:
    """gradc's PIR export of the program, holding ``ops``, read back, gives the same values (to float32 rounding: the
    file holds each float attribute, defaults included, as an a_f32, which a reader takes as a float32), and its
    export again the very same; returns them."""
    expected = gradc.Executor().run(program, feed, fetch, gradc.Scope())
    data = serialize_pir(program, fetch=fetch)
    assert all(f'"1.{op}"'.encode() in data for op in ops)
    read = parse_pir(data)
    again = gradc.Executor().run(read, feed, fetch, gradc.Scope())
    for want, got in zip(expected, again):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)
    twice = gradc.Executor().run(parse_pir(serialize_pir(read, fetch=fetch)), feed, fetch, gradc.Scope())
    for want, got in zip(again, twice):
        np.testing.assert_array_equal(got, want)
    return again


def test_equal_all_and_margin_cross_entropy_round_trip_through_pir():
    """No Paddle PIR program holds them (3.3.1: no CPU margin_cross_entropy kernels; equal_all's bool declared
    float32): gradc's export, read back, trains to the same loss and gradient."""
    logits, label = np.random.default_rng(5).uniform(-0.8, 0.8, (3, 4)), np.array([[3], [1], [0]])
    program, feed = program_of("margin_cross_entropy", {"Logits": logits, "Label": label}, ["Softmax", "Loss"],
                               {"scale": 2.0}, grads=("Logits",))
    block = program.global_block
    for name, shape, dtype in (("same", [], "bool"), ("total", [], "float64")):
        block.create_var(name, shape, to_var_type(np.dtype(dtype)))
    block.append_op("equal_all", {"X": ["logits0"], "Y": ["logits0"]}, {"Out": ["same"]})
    block.append_op("reduce_sum", {"X": ["loss"]}, {"Out": ["total"]}, {"reduce_all": True})
    gradc.append_backward(program, "total")
    values = round_trips_through_pir(program, feed, ["total", "same", "logits0@GRAD"],
                                     ("margin_cross_entropy_grad", "equal_all"))
    assert values[1]


@pytest.mark.parametrize("optional", [(), ("bias", "residual", "norm_bias")])
def test_fused_rms_norm_quant_grad_round_trips_through_pir(optional):
    """Paddle 3.3.1 builds no PIR backward of fused_rms_norm_quant on CPU: gradc's export of its own, read back."""
    r = np.random.default_rng(7)
    inputs = {"x": r.standard_normal((2, 3)), "norm_weight": r.uniform(0.5, 1.5, 3),
              **{slot: r.standard_normal((2, 3) if slot == "residual" else 3) for slot in optional}}
    program, feed = program_of("fused_rms_norm_quant", inputs, ["out", "inv_var"],
                               {"begin_norm_axis": 1, "epsilon": 1e-5}, grads=("x", "norm_weight", *optional))
    block = program.global_block
    block.create_var("total", [], to_var_type(np.dtype("float64")))
    block.append_op("reduce_sum", {"X": ["out"]}, {"Out": ["total"]}, {"reduce_all": True})
    gradc.append_backward(program, "total")
    fetch = ["total", *[f"{slot}0@GRAD" for slot in ("x", "norm_weight", *optional)]]
    round_trips_through_pir(program, feed, fetch, ("fused_rms_norm_quant_grad",))


def weighted_loss(program, feed: dict, names: list[str], shape: list[int], rng) -> None:
    """loss = sum over ``names`` of sum(name * w_name), each w_name fed standard normal of ``shape``."""
    block = program.global_block
    float64 = to_var_type(np.dtype("float64"))
    terms = []
    for name in names:
        feed[f"w_{name}"] = rng.standard_normal(shape)
        block.create_var(f"w_{name}", shape, float64).stop_gradient = True
        for suffix, dims in (("product", shape), ("sum", [])):
            block.create_var(f"{name}.{suffix}", dims, float64)
        block.append_op("elementwise_mul", {"X": [name], "Y": [f"w_{name}"]}, {"Out": [f"{name}.product"]})
        block.append_op("reduce_sum", {"X": [f"{name}.product"]}, {"Out": [f"{name}.sum"]}, {"reduce_all": True})
        terms.append(f"{name}.sum")
    block.create_var("loss", [], float64)
    block.append_op("sum", {"X": terms}, {"Out": ["loss"]})


def test_fused_rms_norm_quant_gives_residual_and_bias_their_grads_and_counts_residual_out():
    """Paddle's grad op has no residual or bias grads and ignores residual_out's grad; gradc's maker adds them."""
    r = np.random.default_rng(6)
    inputs = {"x": r.standard_normal((2, 3)), "bias": r.standard_normal(3), "residual": r.standard_normal((2, 3)),
              "norm_weight": r.uniform(0.5, 1.5, 3)}
    program, feed = program_of("fused_rms_norm_quant", inputs, ["out", "residual_out", "inv_var"],
                               {"begin_norm_axis": 1, "epsilon": 1e-5}, grads=("x", "bias", "residual"))
    weighted_loss(program, feed, ["out", "residual_out"], [2, 3], r)
    grads = check_program(program, feed, ["x0", "bias0", "residual0"], loss="loss")
    np.testing.assert_allclose(grads["residual0"], grads["x0"])
    np.testing.assert_allclose(grads["bias0"], grads["x0"].sum(0))


def test_fused_rms_norm_quant_ignores_bias_without_a_residual_as_paddle():
    """Paddle 3.3.1's kernel adds bias only along with a residual (fused_rms_norm(x, w, None, 1e-6, 1, bias=b) equals
    it without b); the empty rows (0 of them) normalise to nothing."""
    r = np.random.default_rng(8)
    x, weight = r.standard_normal((2, 6)), r.uniform(0.5, 1.5, 6)
    attrs = {"begin_norm_axis": 1, "epsilon": 1e-6}
    (out,) = run("fused_rms_norm_quant", {"x": x, "norm_weight": weight, "bias": r.standard_normal(6)}, ["out"], attrs)
    np.testing.assert_allclose(out, x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * weight)
    (empty,) = run("fused_rms_norm_quant", {"x": np.zeros((0, 6)), "norm_weight": weight}, ["out"], attrs)
    assert empty.shape == (0, 6)


def test_fused_rms_norm_quant_refuses_the_quantized_path_by_name():
    with pytest.raises(ProgramError, match=r"fused_rms_norm_quant.*quant_scale=0.5: the quantized path"):
        program_of("fused_rms_norm_quant", {"x": np.zeros((2, 3)), "norm_weight": np.ones(3)}, ["out", "inv_var"],
                   {"quant_scale": 0.5})
