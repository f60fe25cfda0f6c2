"""gradc.executor.dual: tangents carried through numpy code, in place too, nested for second order; a tangent is
never dropped silently."""

import numpy as np
import pytest

from gradc.executor.dual import Dual


def _in_place_sigmoid_of_square(z):
    out = np.empty_like(z)
    np.multiply(z, z, out=out)
    np.negative(out, out=out)
    np.exp(out, out=out)
    out += 1
    return np.reciprocal(out, out=out)


def test_the_tangent_of_in_place_code_is_its_derivative():
    x, v = np.array([0.3, -1.1, 2.0]), np.array([1.0, -0.5, 0.25])
    result = _in_place_sigmoid_of_square(Dual(x, v))
    s = 1 / (1 + np.exp(-x * x))
    np.testing.assert_allclose(result.value, s, rtol=1e-15)
    np.testing.assert_allclose(result.tangent, s * (1 - s) * 2 * x * v, rtol=1e-14)


def test_nested_duals_give_the_mixed_second_derivative():
    x, a, v = np.array([0.3, -1.2]), np.array([1.0, 0.5]), np.array([0.2, 2.0])
    result = np.tanh(Dual(Dual(x, v), Dual(a, np.zeros(2)))) @ np.array([1.0, 1.0])
    t = np.tanh(x)
    assert result.tangent.tangent == pytest.approx(np.sum(-2 * t * (1 - t * t) * a * v), rel=1e-14)


def test_a_tangent_is_never_dropped():
    dual = Dual(np.ones(2), np.ones(2))
    with pytest.raises(TypeError, match="read as a plain array"):
        np.zeros(2)[:] = dual
    with pytest.raises(TypeError, match="written into a plain array"):
        np.add(dual, 1, out=np.zeros(2))
    with pytest.raises(TypeError, match="no tangent rule for sin"):
        np.sin(dual)
