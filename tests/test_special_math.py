"""The special functions (gradc.ops.special_math) beyond the registry walks: accuracy against math.lgamma /
math.erf / math.erfc, known values, exact rational references, power series; edge values as Paddle 3.3.1 gives
them, and the places gradc deliberately differs (limits at +-inf, Paddle's float32 losses)."""

import math
from fractions import Fraction

import numpy as np
import pytest

from gradc import Executor, Program, Scope
from gradc.executor.kernels.special_math import digamma, erfinv, hurwitz_zeta, lgamma, polygamma
from gradc.executor.kernels.special_math_bessel import i0, i0e, i1, i1e
from gradc.ir import to_var_type
from one_op import run

INF, NAN = np.inf, np.nan
ZETA3 = 1.2020569031595942854
rng = np.random.default_rng(18)


def grad(op_type, x, lowercase=True, attrs=None, **forward):
    """x@GRAD of the op's grad op for dOut = 1, fed the forward values it reads."""
    x_slot, out_slot = ("x", "out") if lowercase else ("X", "Out")
    inputs = {x_slot: x, f"{out_slot}@GRAD": np.ones_like(x), **forward}
    program = Program()
    block = program.global_block
    for slot, value in inputs.items():
        block.create_var(slot, list(value.shape), to_var_type(value.dtype))
    block.create_var("dx", list(x.shape), to_var_type(x.dtype))
    block.append_op(f"{op_type}_grad", {slot: [slot] for slot in inputs}, {f"{x_slot}@GRAD": ["dx"]}, attrs or {})
    return Executor().run(program, inputs, ["dx"], Scope())[0]


def test_lgamma_matches_math_lgamma_on_both_sides_of_zero():
    x = np.concatenate([np.linspace(-30.3, 60, 3001), np.geomspace(1e-300, 1e300, 400)])
    x = x[(x > 0) | (x != np.floor(x))]
    expected = np.array([math.lgamma(v) for v in x])
    assert np.all(np.abs(lgamma(x) - expected) <= 2e-15 * np.maximum(1, np.abs(expected)))


def test_lgamma_keeps_its_relative_accuracy_at_its_zeros_1_and_2():
    """lgamma(1 + z) = -gamma z + zeta(2) z^2 / 2 - ..., lgamma(2 + z) = (1 - gamma) z + (zeta(2) - 1) z^2 / 2 - ..."""
    zeta2 = math.pi ** 2 / 6
    for zero, c1, c2, c3 in ((1, -np.euler_gamma, zeta2, ZETA3), (2, 1 - np.euler_gamma, zeta2 - 1, ZETA3 - 1)):
        z = (zero + np.array([1e-12, -3e-9, 2e-6])) - zero   # exactly the distance from the zero
        np.testing.assert_allclose(lgamma(zero + z), c1 * z + c2 / 2 * z ** 2 - c3 / 3 * z ** 3, rtol=1e-14)


def test_digamma_known_values_recurrence_and_reflection():
    harmonic = sum(1 / k for k in range(1, 10))
    np.testing.assert_allclose(digamma(np.array([1.0, 0.5, 10.0])),
                               [-np.euler_gamma, -np.euler_gamma - 2 * math.log(2), harmonic - np.euler_gamma],
                               rtol=1e-15)
    x = np.concatenate([np.linspace(-40.05, 40, 801), np.geomspace(1e-8, 1e8, 100)])
    np.testing.assert_allclose(digamma(x + 1) - digamma(x), 1 / x, rtol=1e-12, atol=1e-13)
    x = rng.uniform(-20, 20, 200)
    np.testing.assert_allclose(digamma(1 - x) - digamma(x), math.pi / np.tan(math.pi * x), rtol=1e-11, atol=1e-12)


def test_polygamma_known_values():
    np.testing.assert_allclose(polygamma(1, np.array([1.0, 0.5])), [math.pi ** 2 / 6, math.pi ** 2 / 2], rtol=1e-15)
    np.testing.assert_allclose(polygamma(2, np.array([1.0])), [-2 * ZETA3], rtol=1e-15)
    np.testing.assert_allclose(polygamma(3, np.array([1.0])), [math.pi ** 4 / 15], rtol=1e-15)
    np.testing.assert_array_equal(polygamma(0, np.array([0.3, -2.5])), digamma(np.array([0.3, -2.5])))


def _polygamma_exactly(n, x):
    """(-1)^(n+1) n! (the first terms of the Hurwitz series in rationals + the rest, all of it positive)."""
    terms = math.ceil(-x) + 60
    exact = sum(Fraction(1) / (Fraction(x) + k) ** (n + 1) for k in range(terms))
    rest = float(hurwitz_zeta(n + 1, np.array(x + terms)))
    return (-1) ** (n + 1) * math.factorial(n) * (float(exact) + rest)


@pytest.mark.parametrize("n", [1, 2, 5, 8, 12])
def test_polygamma_below_zero_against_exact_sums(n):
    """Reflection keeps the digits the Hurwitz series from x < 0 cancels (Paddle's way: at x = -64.5, n = 6,
    Paddle 3.3.1 gives -1.5984e-9 for -1.5905e-9)."""
    x = [-0.3, -0.999, -2.5, -10.49, -63.5, -64.5, -100.7, -1000.25]
    expected = [_polygamma_exactly(n, v) for v in x]
    np.testing.assert_allclose(polygamma(n, np.array(x)), expected, rtol=1e-14)


def test_erfinv_inverts_erf_in_the_body_the_tails_and_near_zero():
    x = np.linspace(-0.999, 0.999, 2001)   # within the 1e-15 of gradc's erf, whose root erfinv finds
    assert np.max(np.abs([math.erf(v) for v in erfinv(x)] - x)) <= 1e-15
    x = 1 - np.geomspace(1.1e-16, 0.5, 300)
    complement = 1 - x   # exact
    back = np.array([math.erfc(v) for v in erfinv(x)])
    np.testing.assert_allclose(back, complement, rtol=3e-14)
    np.testing.assert_array_equal(-erfinv(-x), erfinv(x))
    tiny = np.geomspace(1e-300, 1e-3, 60)
    series = 1 + math.pi / 12 * tiny ** 2 + 7 * math.pi ** 2 / 480 * tiny ** 4
    np.testing.assert_allclose(erfinv(tiny), tiny * math.sqrt(math.pi) / 2 * series, rtol=4e-16)


def test_bessel_functions_against_their_power_series():
    def series(x, order):
        q = x * x / 4
        return sum((x / 2) ** order * q ** k / (math.factorial(k) * math.factorial(k + order)) for k in range(90))

    x = np.array([1e-20, 0.1, 1.0, 3.0, 7.99, 8.0, 8.01, 15.0, 30.0, -2.0, -12.5])
    zero = np.array([series(abs(v), 0) for v in x])
    one = np.array([math.copysign(series(abs(v), 1), v) for v in x])
    np.testing.assert_allclose(i0(x), zero, rtol=1e-15)
    np.testing.assert_allclose(i1(x), one, rtol=2e-15)
    np.testing.assert_allclose(i0e(x), zero * np.exp(-np.abs(x)), rtol=1e-15)
    np.testing.assert_allclose(i1e(x), one * np.exp(-np.abs(x)), rtol=2e-15)


@pytest.mark.parametrize("op_type, expected", [
    # Paddle 3.3.1, float64, at -2.5, -2, -1, -0, +0, 0.5, +inf, -inf, NaN
    ("lgamma", [-0.05624371649767407, INF, INF, INF, INF, 0.5723649429247001, INF, INF, NAN]),
    ("digamma", [1.1031566406452433, NAN, NAN, INF, -INF, -1.9635100260214227, INF, NAN, NAN]),
])
def test_the_gamma_family_at_its_poles_and_infinities_as_paddle(op_type, expected):
    x = np.array([-2.5, -2.0, -1.0, -0.0, 0.0, 0.5, INF, -INF, NAN])
    np.testing.assert_allclose(run(op_type, {"X": x})["Out"], expected, rtol=1e-15)


def test_polygamma_at_its_poles_as_paddle_and_at_inf_its_limit():
    """Paddle 3.3.1: (-1)^(n+1) inf at 0, the negative integers and -inf; NaN at +inf, whose limit is 0."""
    x = np.array([-2.5, -1.0, -0.0, 0.0, 1.0, INF, -INF])
    np.testing.assert_allclose(run("polygamma", {"x": x}, {"n": 1})["out"],
                               [9.539246644989124, INF, INF, INF, math.pi ** 2 / 6, 0, INF], rtol=1e-15)
    np.testing.assert_allclose(run("polygamma", {"x": x}, {"n": 2})["out"],
                               [-0.10820405164172819, -INF, -INF, -INF, -2 * ZETA3, 0, -INF], rtol=1e-14)
    # the grad is the next order: digamma's grad is polygamma 1's value, polygamma 1's is polygamma 2's
    np.testing.assert_allclose(grad("digamma", x, lowercase=False), polygamma(1, x), rtol=0)
    np.testing.assert_allclose(grad("polygamma", x, attrs={"n": 1}), polygamma(2, x), rtol=0)


def test_erfinv_at_and_beyond_plus_minus_one_as_paddle():
    """Paddle 3.3.1 gives +-inf past +-1 too (mathematically undefined), and its grad from Out is inf there."""
    x = np.array([-1.5, -1.0, -0.0, 0.0, 1.0, 1.5, NAN])
    out = run("erfinv", {"X": x})["Out"]
    np.testing.assert_array_equal(out, [-INF, -INF, -0.0, 0.0, INF, INF, NAN])
    np.testing.assert_array_equal(np.signbit(out[2:4]), [True, False])
    np.testing.assert_allclose(grad("erfinv", x, lowercase=False, Out=out),
                               [INF, INF, math.sqrt(math.pi) / 2, math.sqrt(math.pi) / 2, INF, INF, NAN])


def test_float32_in_float32_out_computed_in_float64():
    """Paddle 3.3.1 computes float32 in float32: erfinv of the largest float32 below 1 is inf there, its trigamma
    (digamma's grad) is off below 0 (negative at -18.99925, where it is 1.78e6)."""
    below_one = np.array([np.nextafter(np.float32(1), np.float32(0))], np.float32)
    out = run("erfinv", {"X": below_one})["Out"]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, erfinv(below_one.astype(np.float64)).astype(np.float32), rtol=0)
    assert math.isclose(math.erfc(float(out[0])), 1 - float(below_one[0]), rel_tol=1e-6)
    x = np.array([-18.99925, -9.2389497756958, 2.5], np.float32)
    dx = grad("digamma", x, lowercase=False)
    assert dx.dtype == np.float32
    np.testing.assert_allclose(dx, polygamma(1, x.astype(np.float64)).astype(np.float32), rtol=0)
    assert np.all(dx > 0)
    for op_type in ("i0", "i0e", "i1", "i1e", "polygamma"):
        assert run(op_type, {"x": x})["out"].dtype == np.float32


def test_float16_in_float16_out():
    """The kernels give the input's float dtype: float16 in, float16 out (they computed float32, which the
    declared float16 output refused)."""
    x = np.array([0.5, 2.5, 3.0], np.float16)
    wide = x.astype(np.float64)
    for op_type, function in (("lgamma", lgamma), ("digamma", digamma)):
        out = run(op_type, {"X": x})["Out"]
        assert out.dtype == np.float16
        np.testing.assert_array_equal(out, function(wide).astype(np.float16))
    for op_type, function in (("i0", i0), ("i0e", i0e), ("i1", i1), ("i1e", i1e)):
        out = run(op_type, {"x": x})["out"]
        assert out.dtype == np.float16
        np.testing.assert_array_equal(out, function(wide).astype(np.float16))
    assert grad("lgamma", x, lowercase=False).dtype == np.float16


def test_bessel_grads_at_zero_and_infinity():
    """i0e has a kink at 0: as Paddle 3.3.1, slope -1 at +0 and +1 at -0. i1' and i1e' are 1/2 at 0 (Paddle: its
    special case below machine epsilon). At +-inf gradc gives the limits where Paddle 3.3.1 gives NaN
    (exp(inf) times a scaled value that is 0 there)."""
    x = np.array([0.0, -0.0, 1e-30, INF, -INF])
    np.testing.assert_array_equal(grad("i0e", x, out=i0e(x)), [-1, 1, -1, 0, 0])
    np.testing.assert_array_equal(grad("i1", x, out=i1(x)), [0.5, 0.5, 0.5, INF, INF])
    np.testing.assert_array_equal(grad("i1e", x, out=i1e(x)), [0.5, 0.5, 0.5, 0, 0])
    np.testing.assert_allclose(grad("i0", x), [0, 0, 5e-31, INF, -INF], rtol=1e-15)
    np.testing.assert_array_equal(run("i0", {"x": x})["out"], [1, 1, 1, INF, INF])
    np.testing.assert_allclose(run("i1", {"x": x})["out"], [0, 0, 5e-31, INF, -INF], rtol=1e-15)


def test_polygamma_order_is_its_attribute():
    x = np.array([0.7, 2.5, -1.3])
    for n in range(5):
        out = run("polygamma", {"x": x}, {"n": n})["out"]
        np.testing.assert_array_equal(out, polygamma(n, x))
    steps = np.array([1e-5, -1e-5])
    for n in (0, 3):   # each order is the derivative of the one before it
        slope = np.diff(polygamma(n, 1.7 + steps)) / np.diff(steps)
        np.testing.assert_allclose(slope, polygamma(n + 1, np.array([1.7])), rtol=1e-8)


def test_polygamma_of_any_order_stays_bounded():
    """An order whose n! overflows (a hostile attribute: n = 2^31 - 1 took the fuzz past its time limit) gives
    infinities of polygamma's sign, or NaN where they meet, without a series of n terms or a polynomial of degree n."""
    x = np.array([0.5, 2.0, -1.5])
    for n in (171, 2**31 - 1):
        values = polygamma(n, x)
        assert np.all(np.isinf(values[:2]) | np.isnan(values[:2])) and np.isnan(values[2])
        assert np.all(values[np.isinf(values)] > 0) == (n % 2 == 1)
