"""gradc.ops.binary_math at the edges Paddle 3.3.1 pins down: NaN operands, ties, zeros and infinities, and the
gradients Paddle leaves out (lerp's Weight, fill_diagonal_tensor's Y). Expected values are Paddle's (its kernels,
run by hand) unless a test says gradc differs."""

import numpy as np
import pytest

from gradc import Executor, Scope, gradients
from gradc.ir import VarType
from gradc.layers import ProgramBuilder
from gradcheck_cases import binary_math as cases
from one_op import run
from test_family_float32 import test_float32_in_float32_out as float32_in_float32_out

NAN, INF = float("nan"), float("inf")
f32 = np.float32


def grads(op_type, inputs, dout, attrs=None, out_slot="Out"):
    """{slot: grad} of sum(out * dout) for the float inputs of one op."""
    net = ProgramBuilder()
    slots = {slot: net.data(slot.lower(), list(a.shape), a.dtype.name) for slot, a in inputs.items()}
    out = net.op(op_type, slots, attrs, outputs=[out_slot])[0]
    weights = net.data("dout", list(dout.shape), dout.dtype.name)
    loss = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": out, "Y": weights})[0]}, {"reduce_all": True})[0]
    wanted = [slot for slot, a in inputs.items() if a.dtype.kind == "f"]
    names = gradients(net.program, loss, [slots[slot] for slot in wanted])
    feed = {slots[slot]: a for slot, a in inputs.items()} | {weights: dout}
    return dict(zip(wanted, Executor().run(net.program, feed, names, Scope())))


def test_fmax_fmin_ignore_nan_and_give_a_tie_to_x():
    x, y = np.array([1, NAN, 3, NAN, 2], f32), np.array([NAN, 2, 1, NAN, 2], f32)
    np.testing.assert_array_equal(run("elementwise_fmax", {"X": x, "Y": y})["Out"], [1, 2, 3, NAN, 2])
    np.testing.assert_array_equal(run("elementwise_fmin", {"X": x, "Y": y})["Out"], [1, 2, 1, NAN, 2])
    dout = np.arange(1, 6, dtype=f32)
    for op in ("elementwise_fmax", "elementwise_fmin"):
        g = grads(op, {"X": x, "Y": y}, dout)
        # X where y is NaN (also both NaN) and on the tie; Y where x alone is NaN
        np.testing.assert_array_equal(g["X"], [1, 0, 3 * (op == "elementwise_fmax"), 4, 5])
        np.testing.assert_array_equal(g["Y"], [0, 2, 3 * (op == "elementwise_fmin"), 0, 0])


def test_heaviside_takes_y_at_zero_and_zero_at_nan():
    out = run("elementwise_heaviside", {"X": np.array([NAN, 0, -1, 2, -0.0], f32), "Y": np.full(5, 0.5, f32)})["Out"]
    np.testing.assert_array_equal(out, [0, 0.5, 0, 1, 0.5])
    assert out.dtype == f32
    g = grads("elementwise_heaviside", {"X": np.array([0, 1, 0], f32), "Y": np.array([3, 3, 3], f32)},
              np.array([1, 2, 4], f32))
    np.testing.assert_array_equal(g["X"], [0, 0, 0])
    np.testing.assert_array_equal(g["Y"], [1, 0, 4])


def test_copysign_follows_the_sign_bit_and_its_grad_is_zero_at_zero():
    x, y = np.array([1, -2, 0, 3], f32), np.array([-0.0, 2, -3, -1], f32)
    np.testing.assert_array_equal(np.signbit(run("copysign", {"x": x, "y": y})["out"]), [True, False, True, True])
    g = grads("copysign", {"x": x, "y": y}, np.array([1, 2, 3, 4], f32), out_slot="out")
    np.testing.assert_array_equal(g["x"], [-1, -2, 0, -4])
    np.testing.assert_array_equal(g["y"], [0, 0, 0, 0])
    ints = run("copysign", {"x": np.array([1, -2, 0]), "y": np.array([-1, 2, -3])})["out"]
    assert ints.dtype == np.int64 and ints.tolist() == [-1, 2, 0]


def test_atan2_of_integers_is_float64_and_its_grad_is_nan_at_the_origin():
    out = run("atan2", {"X1": np.array([1, 2]), "X2": np.array([3, 4])})["Out"]
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, [0.32175055439664219, 0.46364760900080612])
    g = grads("atan2", {"X1": np.array([0, 1], f32), "X2": np.array([0, 1], f32)}, np.ones(2, f32))
    assert np.isnan(g["X1"][0]) and np.isnan(g["X2"][0])
    np.testing.assert_allclose([g["X1"][1], g["X2"][1]], [0.5, -0.5])


def test_atan2_grad_keeps_float32_operands_whose_squares_overflow_or_underflow():
    """d atan2 = (x2 dx1 - x1 dx2) / (x1^2 + x2^2), where x1^2 leaves float32's range past 1.8e19 and below 1e-19."""
    x1, x2 = np.array([3e19, 1e-30], f32), np.array([4e19, 1e-30], f32)
    g = grads("atan2", {"X1": x1, "X2": x2}, np.ones(2, f32))
    wide1, wide2 = x1.astype(np.float64), x2.astype(np.float64)
    norm = wide1 ** 2 + wide2 ** 2
    np.testing.assert_allclose(g["X1"], wide2 / norm, rtol=1e-6)
    np.testing.assert_allclose(g["X2"], -wide1 / norm, rtol=1e-6)


def test_isclose_as_paddle_with_infinities_close_only_to_themselves():
    a = np.array([1, NAN, INF, INF, 1, 1], f32)
    b = np.array([1.000001, NAN, INF, -INF, INF, 1.1], f32)
    np.testing.assert_array_equal(run("isclose", {"Input": a, "Other": b})["Out"], [1, 0, 1, 0, 0, 0])
    # Paddle 3.3.1 also says True for (inf, -inf) and (1, inf): inf <= atol + rtol * inf
    np.testing.assert_array_equal(run("isclose", {"Input": a, "Other": b}, {"equal_nan": True})["Out"],
                                  [1, 1, 1, 0, 0, 0])
    np.testing.assert_array_equal(run("isclose", {"Input": a, "Other": b}, {"rtol": "0.2"})["Out"],
                                  [1, 0, 1, 0, 0, 1])
    out = run("allclose", {"Input": a[:1], "Other": b[:1]}, {"atol": "0", "rtol": "1e-7"})["Out"]
    assert out.shape == () and not out


def test_isclose_and_allclose_of_inputs_declared_without_a_shape():
    """Inference leaves an unknown shape unknown (it took len() of None); the run compares the values."""
    net = ProgramBuilder()
    for name in ("input", "other"):
        net.block.create_var(name, None, VarType.FP32)
    close = net.op("isclose", {"Input": "input", "Other": "other"})[0]
    every = net.op("allclose", {"Input": "input", "Other": "other"})[0]
    assert net.block.var(close).shape is None and net.block.var(every).shape == []
    feed = {"input": np.array([1, 2], f32), "other": np.array([1, 3], f32)}
    got = Executor().run(net.program, feed, [close, every], Scope())
    assert got[0].tolist() == [True, False] and not got[1]


def test_nan_and_infinity_tests():
    x = np.array([1, NAN, INF, -INF], f32)
    assert run("isnan_v2", {"X": x})["Out"].tolist() == [False, True, False, False]
    assert run("isinf_v2", {"X": x})["Out"].tolist() == [False, False, True, True]
    assert run("isfinite_v2", {"X": x})["Out"].tolist() == [True, False, False, False]
    assert run("isfinite_v2", {"X": np.array([3, -1])})["Out"].tolist() == [True, True]


def test_masked_fill_broadcasts_value_and_gives_it_the_masked_grads_paddle_loses():
    x, mask, value = np.ones((2, 3), f32), np.array([True, False, True]), np.array([[5], [6]], f32)
    np.testing.assert_array_equal(run("masked_fill", {"x": x, "mask": mask, "value": value})["out"],
                                  [[5, 1, 5], [6, 1, 6]])
    dout = np.arange(6, dtype=f32).reshape(2, 3)
    g = grads("masked_fill", {"x": x, "mask": mask, "value": value}, dout, out_slot="out")
    np.testing.assert_array_equal(g["x"], [[0, 1, 0], [0, 4, 0]])
    np.testing.assert_array_equal(g["value"], [[2], [8]])   # Paddle 3.3.1: zeros or stale memory


def test_lerp_weight_gets_the_gradient_paddle_leaves_out():
    x, y, w = np.array([1, 2], f32), np.array([[3, 6], [5, 2]], f32), np.array([0.25], f32)
    np.testing.assert_allclose(run("lerp", {"X": x, "Y": y, "Weight": w})["Out"], [[1.5, 3], [2, 2]])
    g = grads("lerp", {"X": x, "Y": y, "Weight": w}, np.ones((2, 2), f32))
    np.testing.assert_allclose(g["X"], [1.5, 1.5])
    np.testing.assert_allclose(g["Y"], np.full((2, 2), 0.25))
    np.testing.assert_allclose(g["Weight"], [(3 - 1) + (6 - 2) + (5 - 1) + (2 - 2)])


@pytest.mark.parametrize("shape, offset, dim1, dim2", [((3, 4), 1, 1, 0), ((3, 4), -1, 0, 1), ((2, 3, 4), 1, -1, 0),
                                                       ((2, 3, 4, 5), -2, 3, 1)])
def test_fill_diagonal_tensor_is_numpys_diagonal_and_y_gets_its_grad(shape, offset, dim1, dim2):
    """The layout paddle.diagonal_scatter gives (checked against Paddle 3.3.1 for these shapes)."""
    x = np.zeros(shape, f32)
    diagonal = np.diagonal(x, offset, dim1, dim2)
    y = np.arange(1, 1 + diagonal.size, dtype=f32).reshape(diagonal.shape)
    attrs = {"offset": offset, "dim1": dim1, "dim2": dim2}
    out = run("fill_diagonal_tensor", {"X": x, "Y": y}, attrs)["Out"]
    np.testing.assert_array_equal(np.diagonal(out, offset, dim1, dim2), y)
    assert np.count_nonzero(out) == y.size
    dout = np.arange(x.size, dtype=f32).reshape(shape) + 1
    g = grads("fill_diagonal_tensor", {"X": x + 1, "Y": y}, dout, attrs)
    np.testing.assert_array_equal(g["Y"], np.diagonal(dout, offset, dim1, dim2))   # Paddle: no gradient
    np.testing.assert_array_equal(g["X"], np.where(out != 0, 0, dout))   # out is nonzero on the diagonal only


def test_fill_diagonal_tensor_of_a_matrix_takes_y_as_a_row():
    out = run("fill_diagonal_tensor", {"X": np.zeros((3, 3), f32), "Y": np.array([[1, 2, 3]], f32)})["Out"]
    np.testing.assert_array_equal(out, np.diag([1, 2, 3]))
    g = grads("fill_diagonal_tensor", {"X": np.ones((3, 3), f32), "Y": np.ones((1, 3), f32)},
              np.arange(9, dtype=f32).reshape(3, 3))
    np.testing.assert_array_equal(g["Y"], [[0, 4, 8]])


def test_conj_of_a_real_tensor_is_a_copy_and_so_is_its_grad():
    x = np.array([1.5, -2], f32)
    out = run("conj", {"X": x})["Out"]
    np.testing.assert_array_equal(out, x)
    assert out is not x
    np.testing.assert_array_equal(grads("conj", {"X": x}, np.array([3, 4], f32))["X"], [3, 4])


ONE_OP_CASES = [case for case in cases.CASES if case.program is None]


@pytest.mark.parametrize("case", ONE_OP_CASES, ids=[case.id for case in ONE_OP_CASES])
def test_float32_stays_float32_forward_and_backward(case):
    float32_in_float32_out(case)
