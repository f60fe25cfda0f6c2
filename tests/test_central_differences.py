"""Central differences along random directions: exact on known functions, and as sharp as the element-wise check
on wrong gradients (the registry walk in `make test` uses them; `make gradcheck` compares every element)."""

from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from gradc.central_differences import directional_derivatives, numeric_grad, random_directions, settled
from gradc.cli import cli
from gradc.executor import KERNELS
from gradc.gradcheck import GradcheckError, check_op

MLP = Path(__file__).parent.parent / "examples" / "mlp"


def test_directional_derivatives_of_a_known_function_and_the_value_put_back():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 5))
    before = x.copy()
    units = random_directions(rng, x, 4)
    assert np.allclose(np.linalg.norm(units, axis=1), 1)
    got = directional_derivatives(lambda: float(np.sum(np.sin(x))), x, 1e-6, units)
    assert np.allclose(got, units @ np.cos(before).reshape(-1), rtol=1e-8, atol=1e-10)
    assert np.array_equal(x, before)


def test_a_complex_value_is_moved_along_complex_directions():
    """The derivative along u is Re(sum(conj(g) * u)), g = dL/dRe + i dL/dIm as numeric_grad gives it."""
    rng = np.random.default_rng(2)
    z = rng.standard_normal(6) + 1j * rng.standard_normal(6)

    def loss() -> float:
        return float(np.sum(np.abs(z) ** 2 + z.real * z.imag))

    units = random_directions(rng, z, 3)
    assert np.iscomplexobj(units)
    g = numeric_grad(loss, z, 1e-6)
    got = directional_derivatives(loss, z, 1e-6, units)
    assert np.allclose(got, [np.vdot(g, u).real for u in units], rtol=1e-7)


def test_an_exception_in_the_function_still_puts_the_value_back():
    x = np.arange(4.0)

    def failing() -> float:
        raise RuntimeError("a kernel failed")

    with pytest.raises(RuntimeError):
        directional_derivatives(failing, x, 0.5, np.eye(4)[:1])
    assert np.array_equal(x, np.arange(4.0))


@pytest.mark.parametrize("directions", [None, 3], ids=["every-element", "directions"])
@pytest.mark.parametrize("error", [1e-2, -3e-3])
def test_a_gradient_wrong_at_one_element_of_many_is_caught(directions, error):
    """tanh_grad off by a small amount at one element of 60: both checks report it; along directions the report
    names the direction."""
    correct = KERNELS["tanh_grad"]

    def off_at_one(ctx):
        grad = correct(ctx)["X@GRAD"].copy()
        grad[2, 7] += error
        return {"X@GRAD": grad}

    KERNELS["tanh_grad"] = off_at_one
    try:
        with pytest.raises(GradcheckError, match="along random direction" if directions else r"at \(2, 7\)"):
            check_op("tanh", {"X": np.random.default_rng(3).standard_normal((4, 15))}, directions=directions)
    finally:
        KERNELS["tanh_grad"] = correct


@pytest.mark.parametrize("x", [1154.3212797974595, 245069.37372684813, -439142.7574571723])
def test_a_zero_gradient_is_not_settled_at_steps_rounding_loses(x):
    """f = 3 sin(x) + x/2 at x where x + 1e-13 == x: the steps below eps/100 measure a slope of 0 once rounding
    swallows them, which a wrong gradient of 0 would have matched (accepted at 184 of 4000 random x before)."""
    value = np.array([x])

    def f():
        return float(np.sum(3 * np.sin(value) + value / 2))

    indices = np.array([0])
    numeric = numeric_grad(f, value, 1e-6, indices)
    settled_slope = settled(f, value, 1e-6, indices, np.zeros(1), numeric, 1e-5, 1e-7)
    assert settled_slope[0] == pytest.approx(3 * np.cos(x) + 0.5, rel=1e-3)


def test_a_correct_gradient_passes_along_directions_and_a_small_var_is_checked_by_element():
    rng = np.random.default_rng(4)
    grads = check_op("elementwise_mul", {"X": rng.standard_normal((2, 15)), "Y": rng.standard_normal(2)},
                     {"axis": 0}, directions=3)
    assert set(grads) == {"X0", "Y0"}
    broken = KERNELS["elementwise_mul_grad"]
    KERNELS["elementwise_mul_grad"] = lambda ctx: {**broken(ctx), "Y@GRAD": broken(ctx)["Y@GRAD"] * 1.01}
    try:   # Y has 2 elements (fewer than 3 directions): compared at each, so the report names the element
        with pytest.raises(GradcheckError, match=r"Y0: .* at \(\d,\)"):
            check_op("elementwise_mul", {"X": rng.standard_normal((2, 15)), "Y": rng.standard_normal(2)},
                     {"axis": 0}, directions=3)
    finally:
        KERNELS["elementwise_mul_grad"] = broken


def test_gradc_check_along_directions():
    result = CliRunner().invoke(cli, ["check", str(MLP / "forward.pb"), "--feed", str(MLP / "feed.npz"),
                                      "--params", str(MLP / "params.npz"), "--directions", "2"])
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if "dir/" in line]
    assert len(rows) == 4 and all(row.endswith("ok") for row in rows)
    assert "4 var(s) checked" in result.output


def test_gradc_check_along_directions_names_a_wrong_gradient():
    correct = KERNELS["relu_grad"]
    KERNELS["relu_grad"] = lambda ctx: {"X@GRAD": ctx.x("Out@GRAD")}   # the mask forgotten
    try:
        result = CliRunner().invoke(cli, ["check", str(MLP / "forward.pb"), "--feed", str(MLP / "feed.npz"),
                                          "--params", str(MLP / "params.npz"), "--directions", "2"])
    finally:
        KERNELS["relu_grad"] = correct
    assert result.exit_code == 1
    wrong = [line for line in result.output.splitlines() if "MISMATCH along direction" in line]
    assert wrong and all(line.startswith("fc_0.") for line in wrong)
    assert "differ from central differences for fc_0.b_0, fc_0.w_0" in str(result.exception)   # main's error line
