"""fused_bias_residual_layernorm (gradc.ops.extra_math_layernorm) against numbers Paddle 3.3.1's CPU kernel gave
(fused_layer_norm in legacy static mode, epsilon 1e-5, begin_norm_axis 1), and the grads gradc's own maker gives
(Paddle registers none)."""

import numpy as np
import pytest

import gradc
from gradc.gradcheck import check_program
from gradc.ir import VarType, to_var_type
from test_extra_math import program_of, round_trips_through_pir, run, weighted_loss

OP = "fused_bias_residual_layernorm"
X = np.array([[1, 2, 3, 4], [-1, 0, 2, 5]], np.float32)
RES = np.array([[0.5, -1, 2, 0], [1, 1, -2, 3]], np.float32)
BIAS = np.array([0.1, -0.2, 0.3, 0.0], np.float32)
W = np.array([1, 0.5, 2, 1.5], np.float32)
NORM_BIAS = np.array([0, 0.1, -0.1, 0.2], np.float32)
OUTS = ["out", "residual_out", "mean", "variance"]
# Paddle's fused_layer_norm(X, W, None, 1e-5, bias=BIAS): bias ignored without a residual. Its "variance" is the
# inverse standard deviation: row 0 has mean 2.5 and variance 1.25, 1 / sqrt(1.25 + 1e-5) = 0.89442366
NORMALISED = [[-1.3416355, -0.22360592, 0.89442366, 2.0124533], [-1.0910884, -0.32732654, 0.43643537, 2.2912858]]


def test_paddles_numbers_with_every_input():
    """fused_layer_norm(X, W, NORM_BIAS, 1e-5, residual_alpha=0.5, bias=BIAS, residual=RES)."""
    inputs = {"x": X, "bias": BIAS, "residual": RES, "norm_weight": W, "norm_bias": NORM_BIAS}
    out, residual_out, mean, variance = run(OP, inputs, OUTS, {"residual_alpha": 0.5})
    np.testing.assert_allclose(out, [[-0.9794646, -0.4073803, 2.1060011, 1.5368365],
                                     [-0.85806304, -0.19986072, -0.5613243, 2.7326698]], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(residual_out, [[1.35, 1.3, 4.3, 4.0], [-0.4, 0.3, 1.3, 6.5]], rtol=1e-6)
    np.testing.assert_allclose(mean, [2.7375002, 1.9250001], rtol=1e-6)
    np.testing.assert_allclose(variance, [0.70592034, 0.36905935], rtol=1e-6)
    assert out.dtype == residual_out.dtype == mean.dtype == variance.dtype == np.float32


def test_normalising_without_a_residual_ignores_bias_as_paddle():
    for inputs in ({"x": X, "norm_weight": W}, {"x": X, "norm_weight": W, "bias": BIAS}):
        out, mean, variance = run(OP, inputs, ["out", "mean", "variance"])
        np.testing.assert_allclose(out, NORMALISED, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(mean, [2.5, 1.5], rtol=1e-6)
        np.testing.assert_allclose(variance, [0.89442366, 0.43643537], rtol=1e-6)


def test_without_norm_weight_and_norm_bias_out_is_the_sum_bias_included_even_without_a_residual():
    """Paddle gives out = x + bias (and leaves mean and variance unwritten); gradc writes their values for h."""
    (out,) = run(OP, {"x": X, "bias": BIAS}, ["out"])
    np.testing.assert_allclose(out, [[1.1, 1.8, 3.3, 4.0], [-0.9, -0.2, 2.3, 5.0]], rtol=1e-6)
    out, residual_out, mean, _ = run(OP, {"x": X, "bias": BIAS, "residual": RES}, OUTS, {"residual_alpha": 0.5})
    np.testing.assert_allclose(out, [[1.35, 1.3, 4.3, 4.0], [-0.4, 0.3, 1.3, 6.5]], rtol=1e-6)
    np.testing.assert_array_equal(residual_out, out)
    np.testing.assert_allclose(mean, [2.7375002, 1.9250001], rtol=1e-6)


@pytest.mark.parametrize("axis", [0, 1, 2, 3])
def test_statistics_are_float32_one_per_row_for_any_x(axis):
    """As Paddle declares them: [rows] (the dims before begin_norm_axis multiplied), float32 for a float64 x too."""
    x = np.random.default_rng(3).standard_normal((2, 3, 4))
    program, _ = program_of(OP, {"x": x}, OUTS, {"begin_norm_axis": axis})
    block = program.global_block
    rows = int(np.prod(x.shape[:axis]))
    assert [(block.var(name).shape, block.var(name).dtype) for name in ("mean", "variance")] == \
        [([rows], VarType.FP32)] * 2
    assert block.var("out").dtype == VarType.FP64
    out, _, mean, variance = run(OP, {"x": x, "norm_weight": np.ones(x[0, 0].size if axis == 2 else
                                                                      int(np.prod(x.shape[axis:])))},
                                 OUTS, {"begin_norm_axis": axis})
    assert mean.shape == variance.shape == (rows,) and mean.dtype == np.float32
    flat = x.reshape(rows, -1)
    expected = (flat - flat.mean(1, keepdims=True)) / np.sqrt(flat.var(1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(out, expected.reshape(x.shape), rtol=1e-12, atol=1e-12)


def test_residual_takes_alpha_times_xs_grad_and_bias_their_row_sum_residual_out_counted():
    r = np.random.default_rng(6)
    inputs = {"x": r.standard_normal((2, 3, 4)), "bias": r.standard_normal((3, 4)),
              "residual": r.standard_normal((2, 3, 4)), "norm_weight": r.uniform(0.5, 1.5, 12)}
    program, feed = program_of(OP, inputs, ["out", "residual_out", "mean", "variance"],
                               {"begin_norm_axis": 1, "residual_alpha": 0.25}, grads=("x", "bias", "residual"))
    weighted_loss(program, feed, ["out", "residual_out"], [2, 3, 4], r)
    grads = check_program(program, feed, ["x0", "bias0", "residual0"], loss="loss")
    np.testing.assert_allclose(grads["residual0"], 0.25 * grads["x0"])
    np.testing.assert_allclose(grads["bias0"], grads["x0"].sum(0))


@pytest.mark.parametrize("optional", [("norm_weight",), ("bias", "residual", "norm_bias")])
def test_the_backward_is_paddles_ops_and_round_trips_through_pir(optional):
    """The maker emits layer_norm, layer_norm_grad and plain arithmetic, all of which PIR and Paddle know."""
    r = np.random.default_rng(7)
    inputs = {"x": r.standard_normal((2, 3)),
              **{slot: r.standard_normal((2, 3) if slot == "residual" else 3) for slot in optional}}
    program, feed = program_of(OP, inputs, OUTS, {"begin_norm_axis": 1, "residual_alpha": 0.5},
                               grads=("x", *optional))
    block = program.global_block
    block.create_var("total", [], to_var_type(np.dtype("float64")))
    block.append_op("reduce_sum", {"X": ["out"]}, {"Out": ["total"]}, {"reduce_all": True})
    gradc.append_backward(program, "total")
    types = {op.type for op in block.ops}
    assert {"layer_norm", "layer_norm_grad"} <= types and not any(t.startswith(OP + "_") for t in types)
    fetch = ["total", *[f"{slot}0@GRAD" for slot in ("x", *optional)]]
    round_trips_through_pir(program, feed, fetch, (OP, "layer_norm_grad"))
