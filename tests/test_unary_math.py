"""The unary math ops beyond the registry walks: edge values and attribute semantics as Paddle 3.3.1 computes
them (the expected numbers are Paddle's, float32, from its dygraph kernels), and the grads where gradc is more
accurate than Paddle."""

import numpy as np
import pytest

from gradc import Executor, Scope, gradients
from gradc.layers import ProgramBuilder
from one_op import run
from test_activation_math_family import run_op

f32 = np.float32
inf, nan = np.inf, np.nan


def forward(op, x, **attrs):
    return run(op, {"X": np.array(x, f32)}, attrs)["Out"]


def grad(op, x, dout=None, **attrs):
    """The op's grad kernel on x (and its output where the grad op reads it), dOut ones unless given."""
    x = np.array(x, f32)
    inputs = {"X": x, "Out": forward(op, x, **attrs),
              "Out@GRAD": np.ones_like(x) if dout is None else np.array(dout, f32)}
    reads = {"reciprocal": ("Out",), "expm1": ("Out",), "floor": (), "ceil": (), "round": (), "trunc": ()}
    wanted = {slot: value for slot, value in inputs.items() if slot in (*reads.get(op, ("X",)), "Out@GRAD")}
    return run_op(f"{op}_grad", wanted, attrs, outputs=("X@GRAD",))[0]


def assert_same(got, expected):
    assert got.dtype == f32
    np.testing.assert_allclose(got, np.array(expected, f32), rtol=1e-6, atol=0)


def test_round_ties_to_even_at_every_decimals():
    assert_same(forward("round", [0.5, 1.5, 2.5, -0.5, -2.5, inf, nan]), [0, 2, 2, -0.0, -2, inf, nan])
    # float32 arithmetic as Paddle: 2.675 is 2.67499995, times 100 rounds to 267.5, a tie to even
    assert_same(forward("round", [0.125, 0.135, 1.005, 2.675, -0.125], decimals=2), [0.12, 0.14, 1.0, 2.68, -0.12])
    assert_same(forward("round", [15, 25, -15, 14.9], decimals=-1), [20, 20, -20, 10])


def test_round_past_float32s_powers_of_ten_is_nan_as_paddle():
    assert_same(forward("round", [1.5, 0.0], decimals=40), [nan, nan])
    assert_same(forward("round", [1.5, 0.0], decimals=-40), [nan, nan])


@pytest.mark.parametrize("op", ["floor", "ceil", "round"])
def test_rounding_grads_scale_dout_by_zero(op):
    """Paddle multiplies dOut by 0: an infinite or NaN dOut gives NaN."""
    assert_same(grad(op, [0.5, 1.5, 2.5, -0.5], dout=[1, inf, nan, -3]), [0, nan, nan, 0])


def test_trunc_grad_is_zeros_whatever_dout():
    assert_same(grad("trunc", [0.5, 1.5, 2.5], dout=[1, inf, nan]), [0, 0, 0])
    assert_same(forward("trunc", [-1.5, 1.5, -0.5]), [-1, 1, -0.0])


def test_logit_with_eps_zero_is_nan_outside_the_unit_interval():
    x = [0.0, 1.0, -0.5, 1.5, 0.25, nan]
    assert_same(forward("logit", x, eps=0.0), [-inf, inf, nan, nan, -1.0986123085021973, nan])
    assert_same(grad("logit", x, eps=0.0), [inf, inf, nan, nan, 5.333333492279053, nan])


def test_logit_clips_to_eps_and_its_grad_is_zero_outside():
    """The bounds themselves take the inner slope, as Paddle's kernel."""
    x = [0.2, 0.8, 0.1, 0.9, 0.5]
    assert_same(forward("logit", x, eps=0.2), [-1.3862943649291992, 1.3862944841384888, -1.3862943649291992,
                                               1.3862944841384888, 0.0])
    assert_same(grad("logit", x, eps=0.2), [6.249999523162842, 6.25, 0.0, 0.0, 4.0])


def test_logit_default_eps_is_the_ops():
    """The op's default eps is 1e-6 (paddle.logit's Python default None passes 0)."""
    assert_same(forward("logit", [0.0, 5e-7]), [np.log(1e-6 / (1 - 1e-6))] * 2)


def test_logit_eps_above_one_half_makes_every_value_eps():
    """Paddle clips down to 1 - eps first, then up to eps."""
    assert_same(forward("logit", [0.5, 0.1, 0.9], eps=0.7), [0.8472978472709656] * 3)
    assert_same(grad("logit", [0.5, 0.1, 0.9], eps=0.7), [0, 0, 0])


def test_logit_negative_eps_clips_below_zero():
    assert_same(forward("logit", [0.5, -0.05, 1.05, -0.2], eps=-0.1), [0.0, nan, nan, nan])
    assert_same(grad("logit", [0.5, -0.05, 1.05, -0.2], eps=-0.1), [4.0, -19.047618865966797, -19.047637939453125, 0])


@pytest.mark.parametrize("op, x, out, dx", [
    ("asin", [1, -1, 1.5, 0.5], [1.5707963705062866, -1.5707963705062866, nan, 0.5235987901687622],
     [inf, inf, nan, 1.154700517654419]),
    ("acos", [1, -1, 1.5, 0.5], [0, 3.1415927410125732, nan, 1.0471975803375244],
     [-inf, -inf, nan, -1.154700517654419]),
    ("atanh", [1, -1, 1.5, 0.5], [inf, -inf, nan, 0.5493061542510986], [inf, inf, -0.800000011920929,
                                                                         1.3333333730697632]),
    ("acosh", [1, 0.5, 2], [0, nan, 1.316957950592041], [inf, nan, 0.5773502588272095]),
    ("reciprocal", [0, -0.0, inf, 4], [inf, -inf, 0, 0.25], [-inf, -inf, -0.0, -0.0625]),
    ("log2", [0, -1, inf, 8], [-inf, nan, inf, 3], [inf, -1.4426950216293335, 0, 0.1803368777036667]),
    ("log10", [0, -1, 1000], [-inf, nan, 3], [inf, -0.4342944622039795, 0.00043429445941001177]),
    ("log1p", [-1, -2, 1e-10], [-inf, nan, 1.000000013351432e-10], [inf, -1, 1]),
    ("expm1", [1e-10, 100, -inf], [1.000000013351432e-10, inf, -1], [1, inf, 0]),
    ("erf", [inf, -inf, 0, 0.5], [1, -1, 0, 0.5204998850822449], [0, 0, 1.128379225730896, 0.8787826299667358]),
    ("tan", [0, 1, np.pi / 2], [0, 1.5574077367782593, -22877334.0], [1, 3.4255189895629883, 523372366659584.0]),
    ("sinh", [100, -1], [inf, -1.175201177597046], [inf, 1.5430805683135986]),
    ("cosh", [100, -1], [inf, 1.5430805683135986], [inf, -1.175201177597046]),
    ("atan", [3e19, 1], [1.5707963705062866, 0.7853981852531433], [0, 0.5]),
])
def test_edge_values_are_paddles(op, x, out, dx):
    assert_same(forward(op, x), out)
    assert_same(grad(op, x), dx)


def test_stanh_default_scales():
    x = [0, 1, -2, 50]
    assert_same(forward("stanh", x), [0, 1.0037670135498047, -1.4957022666931152, 1.71589994430542])
    assert_same(grad("stanh", x), [1.1496529579162598, 0.7562400102615356, 0.2761322855949402, 0])


def test_asinh_and_acosh_grads_stay_right_where_paddles_square_overflows():
    """Paddle 3.3.1 computes 1 / sqrt(x^2 + 1) and 1 / sqrt(x^2 - 1) in float32, whose x^2 overflows past
    1.8e19: it gives 0 there. gradc's are 1 / |x| to float32's precision (Paddle's forward agrees)."""
    x = [3e19, -3e19]
    assert_same(forward("asinh", x), [45.54087448120117, -45.54087448120117])
    assert_same(grad("asinh", x), [1 / 3e19, 1 / 3e19])
    assert_same(forward("acosh", [3e19]), [45.54087448120117])
    assert_same(grad("acosh", [3e19]), [1 / 3e19])


def test_float64_stays_float64():
    x = np.array([0.3, 0.6])
    for op in ("log1p", "erf", "logit", "stanh", "round"):
        assert run(op, {"X": x})["Out"].dtype == np.float64


def test_acos_second_derivative_is_paddles():
    """Paddle 3.3.1's acos_double_grad (its one second derivative of the family), float64: d/dx of w . acos'(x)."""
    net = ProgramBuilder()
    x = net.data("x", [3], "float64", stop_gradient=False)
    w = net.data("w", [3], "float64", stop_gradient=True)
    loss = net.op("reduce_sum", {"X": net.op("acos", {"X": x})[0]}, {"reduce_all": True})[0]
    (slope,) = gradients(net.program, loss, [x])
    weighted = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": slope, "Y": w})[0]}, {"reduce_all": True})[0]
    (second,) = gradients(net.program, weighted, [x])
    feed = {"x": np.array([0.3, -0.5, 0.9]), "w": np.array([1.0, 2.0, -1.0])}
    first_values, second_values = Executor().run(net.program, feed, [slope, second], Scope())
    np.testing.assert_allclose(first_values, [-1.0482848367219182, -1.1547005383792517, -2.294157338705618], rtol=1e-14)
    np.testing.assert_allclose(second_values, [-0.3455884077105225, 1.539600717839002, 10.867061078079246], rtol=1e-14)
