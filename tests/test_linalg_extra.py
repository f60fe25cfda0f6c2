"""gradc.ops.linalg_extra against values Paddle 3.3.1 computes: matrix_rank's tolerances (attribute, tensor,
atol/rtol and their defaults), the order of eigvals, eig's complex results, the triangle indices, lu_solve."""

import numpy as np
import pytest

from gradc import Executor, Scope, append_backward
from gradc.errors import ExecutionError, GradError
from gradc.layers import ProgramBuilder
from gradc.limits import limited
from one_op import run

f32, f64 = np.float32, np.float64
STAIRS = np.diag([3.0, 2.0, 1.0, 0.0]).astype(f32)              # singular values 3, 2, 1, 0
TINY = np.diag([1.0, 1e-6, 1e-7])                                # under / over eps * 3 in float32


def rank(x, **attrs):
    return run("matrix_rank", {"X": x}, {"use_default_tol": "tol" not in attrs, **attrs})["Out"]


def rank_atol_rtol(x, atol, rtol=None, hermitian=False):
    inputs = {"x": x, "atol": np.asarray(atol, x.real.dtype)}
    if rtol is not None:
        inputs["rtol"] = np.asarray(rtol, x.real.dtype)
    return run("matrix_rank_atol_rtol", inputs, {"hermitian": hermitian})["out"]


def test_matrix_rank_default_tolerance_is_eps_times_size_times_the_largest():
    assert rank(TINY.astype(f32)) == 2 and rank(TINY) == 3        # Paddle: 2 in float32, 3 in float64
    assert rank(STAIRS) == 3 and rank(np.zeros((3, 3), f32)) == 0 and rank(np.ones((2, 5), f32)) == 1


def test_matrix_rank_counts_values_strictly_above_the_tolerance_and_int64_as_paddle_writes():
    assert [int(rank(STAIRS, tol=tol)) for tol in (1.0, 0.999, 2.0)] == [2, 3, 1]
    assert rank(STAIRS).dtype == np.int64


def test_a_negative_tol_counts_as_zero_and_drops_the_default_relative_one():
    assert rank(TINY.astype(f32), tol=1e-8) == 3                   # no eps * 3 * 1 beside the tol attribute
    assert rank(TINY.astype(f32), tol=-1.0) == 3 and rank(np.zeros((3, 3), f32), tol=-1.0) == 0


def test_matrix_rank_tol_tensor_broadcasts_over_the_batch():
    stack = np.stack([STAIRS, 2 * STAIRS])
    out = run("matrix_rank", {"X": stack, "TolTensor": np.array([1.5], f32)}, {"use_default_tol": False})["Out"]
    assert out.tolist() == [2, 3]
    out = run("matrix_rank", {"X": stack, "TolTensor": np.array([1.5, 3.5], f32)}, {"use_default_tol": False})
    assert out["Out"].tolist() == [2, 2]


@pytest.mark.parametrize("atol, expected", [(0.0, 2), (1e-30, 2), (-1e-20, 2), (1e-8, 3), (-1e-8, 3), (-1.0, 3)])
def test_without_rtol_the_default_relative_tolerance_applies_only_where_atol_is_zero(atol, expected):
    """Paddle 3.3.1: an |atol| under 1e-15 counts as none (found by bisection between 5e-16 and 1e-15)."""
    assert rank_atol_rtol(TINY.astype(f32), np.array(atol)) == expected


def test_atol_rtol_per_matrix_and_with_rtol():
    stack = np.stack([TINY, TINY]).astype(f32)
    assert rank_atol_rtol(stack, np.array([0.0, -1.0])).tolist() == [2, 3]
    assert rank_atol_rtol(TINY.astype(f32), np.array(0.0), np.array(0.0)) == 3
    assert rank_atol_rtol(STAIRS, np.array(0.0), np.array(1 / 3)) == 2     # above max(0, 3 / 3): 3 and 2


def test_nan_tolerances_as_paddle():
    """Paddle 3.3.1 takes max(a, b) as a where a > b, else b: matrix_rank's max(tol, relative) ignores a NaN tol;
    matrix_rank_atol_rtol's max(relative, atol) ignores a NaN rtol, and a NaN atol makes the rank 0."""
    x, nan = np.diag([3.0, 2.0, 1.0, 1e-7]).astype(f32), np.float32("nan")
    assert rank(x, tol=float("nan")) == 4 and rank(x, tol=float("inf")) == 0
    out = run("matrix_rank", {"X": x, "TolTensor": np.array([nan])}, {"use_default_tol": False})["Out"]
    assert out.tolist() == [4]
    assert rank_atol_rtol(x, np.array(0.0), np.array(nan)) == 4 and rank_atol_rtol(x, 0.5, nan) == 3
    assert rank_atol_rtol(x, nan) == 0 and rank_atol_rtol(x, nan, 0.5) == 0


def test_hermitian_rank_reads_the_lower_triangle_and_counts_moduli():
    upper_noise = np.array([[1.0, 5.0], [0.0, 1.0]], f32)           # lower triangle: eigenvalues 1, 1
    assert rank(upper_noise, hermitian=True) == 2 and rank(upper_noise, tol=1.1, hermitian=True) == 0
    negative = np.diag([-3.0, 2.0, 1e-8, 0.5]).astype(f32)
    assert rank(negative, hermitian=True) == 3 and rank(negative, tol=0.6, hermitian=True) == 2


A = np.random.default_rng(0).standard_normal((4, 4)).astype(f32)
PADDLE_EIG = [0.8818754, -0.54047346 + 1.7034819j, -0.54047346 - 1.7034819j, -0.6691448]
PADDLE_EIGVALS = [-0.5404736 + 1.7034812j, -0.5404736 - 1.7034812j, 0.881875, -0.66914475]


def test_eig_and_eigvals_give_paddles_values_in_paddles_orders():
    """eigvals orders as LAPACK does for X^T (Paddle hands it the row-major matrix), eig as for X."""
    out = run("eig", {"X": A})
    assert out["Eigenvalues"].dtype == np.complex64 and out["Eigenvectors"].dtype == np.complex64
    np.testing.assert_allclose(out["Eigenvalues"], PADDLE_EIG, rtol=2e-6)
    np.testing.assert_allclose(run("eigvals", {"X": A})["Out"], PADDLE_EIGVALS, rtol=2e-6)
    vectors = out["Eigenvectors"].astype(np.complex128)
    np.testing.assert_allclose(A @ vectors, vectors * out["Eigenvalues"], atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=0), 1, rtol=1e-6)


def test_eig_of_a_matrix_with_real_eigenvalues_is_still_complex():
    out = run("eig", {"X": np.diag([2.0, -1.0])})
    assert out["Eigenvalues"].dtype == np.complex128 and out["Eigenvalues"].tolist() == [2, -1]


Z = np.random.default_rng(5).standard_normal((2, 3, 3, 2)) @ np.array([1, 1j])   # complex, not Hermitian


def test_complex_matrices_as_paddle():
    """Paddle 3.3.1 agrees with these to 1e-15 (eigvals of X^T's order again; eigvalsh reads the UPLO triangle)."""
    np.testing.assert_allclose(run("eigvals", {"X": Z[0]})["Out"], np.linalg.eigvals(Z[0].T), rtol=1e-12)
    for uplo in "LU":
        values = run("eigvalsh", {"X": Z}, {"UPLO": uplo})["Eigenvalues"]
        assert values.dtype == np.float64
        np.testing.assert_allclose(values, np.linalg.eigvalsh(Z, UPLO=uplo), rtol=1e-12)
    hermitian = np.array([[3, 2j, 0], [-2j, 1e-3, 0], [0, 0, 0]], np.complex64)
    assert rank(hermitian) == 2 and rank(hermitian, hermitian=True) == 2 and rank(hermitian, tol=1.0) == 1
    assert rank_atol_rtol(hermitian, np.array(0.01, f32)) == 2


def test_eig_of_a_complex_matrix_has_no_gradient_in_gradc():
    net = ProgramBuilder()
    x = net.data("x", [3, 3], "complex128")
    net.block.var(x).stop_gradient = False
    values = net.op("eig", {"X": x}, outputs=["Eigenvalues", "Eigenvectors"])[0]
    loss = net.op("reduce_sum", {"X": net.op("abs", {"X": values})[0]}, {"reduce_all": True})[0]
    with pytest.raises(GradError, match=r"eig\) reads complex x"):
        append_backward(net.program, loss)


def test_triangle_indices_as_paddle():
    assert run("tril_indices", {}, {"rows": 4, "cols": 3, "offset": -1})["out"].tolist() == \
        [[1, 2, 2, 3, 3, 3], [0, 0, 1, 0, 1, 2]]
    assert run("triu_indices", {}, {"row": 4, "col": 3, "offset": 1})["out"].tolist() == [[0, 0, 1], [1, 2, 2]]
    everything = run("tril_indices", {}, {"rows": 3, "cols": 3, "offset": 5, "dtype": 2})["out"]
    assert everything.dtype == np.int32 and everything.shape == (2, 9)
    assert run("tril_indices", {}, {"rows": 3, "cols": 3, "offset": -5})["out"].shape == (2, 0)
    assert run("triu_indices", {}, {"row": 3, "col": 3, "offset": -5})["out"].shape == (2, 9)


@pytest.mark.parametrize("rows, cols", [(0, 3), (3, 0), (1, 4), (4, 1), (3, 5), (5, 3), (4, 4)])
def test_triangle_indices_are_numpys_for_every_offset(rows, cols):
    for offset in range(-6, 7):
        lower = run("tril_indices", {}, {"rows": rows, "cols": cols, "offset": offset})["out"]
        upper = run("triu_indices", {}, {"row": rows, "col": cols, "offset": offset, "dtype": 2})["out"]
        assert lower.tolist() == np.reshape(np.tril_indices(rows, offset, cols), (2, -1)).tolist()
        assert upper.tolist() == np.reshape(np.triu_indices(rows, offset, cols), (2, -1)).tolist()


def test_triangle_indices_of_huge_sizes_cost_what_their_result_holds():
    """Sizes of 2**31 with few pairs are cheap (no rows x cols mask); too many pairs hit the memory limit."""
    huge = 2**31 - 1
    assert run("tril_indices", {}, {"rows": 1, "cols": huge})["out"].tolist() == [[0], [0]]
    assert run("tril_indices", {}, {"rows": huge, "cols": 1, "offset": 1 - huge})["out"].tolist() == [[huge - 1], [0]]
    assert run("triu_indices", {}, {"row": huge, "col": 3, "offset": huge})["out"].shape == (2, 0)
    assert run("tril_indices", {}, {"rows": huge, "cols": 0})["out"].shape == (2, 0)
    with pytest.raises(ExecutionError, match="more than the limit"):
        run("tril_indices", {}, {"rows": huge, "cols": huge})
    with limited(max_bytes=10**6), pytest.raises(ExecutionError, match="with its working arrays"):
        run("tril_indices", {}, {"rows": 20_000, "cols": 1, "dtype": 2})     # out of 160 kB, working arrays of 1 MB


def test_ranks_take_the_shape_of_the_batch_broadcast_with_the_tolerances():
    """Paddle 3.3.1: one matrix against atol [2, 2] gives [2, 2] ranks; a batch [2] against tol [4, 1] gives [4, 2]."""
    stack = np.stack([STAIRS, 2 * STAIRS])
    assert rank_atol_rtol(STAIRS, np.array([[0.5, 1.5], [2.5, 3.5]])).tolist() == [[3, 2], [1, 0]]
    assert rank_atol_rtol(STAIRS, np.array([0.0])).tolist() == [3]
    tolerances = np.array([[0.5], [1.5], [2.5], [5.0]], f32)
    out = run("matrix_rank", {"X": stack, "TolTensor": tolerances}, {"use_default_tol": False})["Out"]
    assert out.tolist() == [[3, 3], [2, 3], [1, 2], [0, 1]]


@pytest.mark.parametrize("trans", ["N", "T", "C"])
def test_lu_solve_solves_with_a_or_its_transpose(trans):
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((2, 3, 3)) + 2 * np.eye(3), rng.standard_normal((2, 3, 2))
    factors = run("lu", {"X": a}, {"pivots": True})
    out = run("lu_solve", {"b": b, "lu": factors["Out"], "pivots": factors["Pivots"]}, {"trans": trans})["out"]
    np.testing.assert_allclose(out, np.linalg.solve(a if trans == "N" else np.swapaxes(a, -1, -2), b), rtol=1e-10)


def test_eigvalsh_grad_lands_on_the_triangle_read_for_every_matrix_of_a_batch():
    """Paddle 3.3.1's eigvalsh_grad is wrong for a batch; gradc's is V diag(dw) V^T on the triangle read."""
    rng = np.random.default_rng(4)
    x, weights = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3))
    net = ProgramBuilder()
    name, weight = net.data("x", [2, 3, 3], "float64"), net.data("w", [2, 3], "float64")
    net.block.var(name).stop_gradient = False
    values = net.op("eigvalsh", {"X": name}, {"UPLO": "U"}, outputs=["Eigenvalues", "Eigenvectors"])[0]
    weighted = net.op("elementwise_mul", {"X": values, "Y": weight})[0]
    loss = net.op("reduce_sum", {"X": weighted}, {"reduce_all": True})[0]
    append_backward(net.program, loss)
    (grad,) = Executor().run(net.program, {name: x, weight: weights}, [name + "@GRAD"], Scope())
    _, vectors = np.linalg.eigh(x, UPLO="U")
    sym = (vectors * weights[:, None, :]) @ np.swapaxes(vectors, -1, -2)   # d(sum W w) / dS
    assert np.all(np.tril(grad, -1) == 0)
    np.testing.assert_allclose(grad, np.triu(2 * sym) - sym * np.eye(3), atol=1e-12)


def test_lu_solve_of_empty_systems():
    empty = {"b": np.ones((0, 2)), "lu": np.ones((0, 0)), "pivots": np.zeros(0, np.int32)}
    assert run("lu_solve", empty, {"trans": "T"})["out"].shape == (0, 2)
    batch = {"b": np.ones((0, 3, 1)), "lu": np.ones((0, 3, 3)), "pivots": np.zeros((0, 3), np.int32)}
    assert run("lu_solve", batch)["out"].shape == (0, 3, 1)


def _eig_values_grad(x, weights):
    """d sum(weights * Re(w)) / dX for eig's eigenvalues w."""
    net = ProgramBuilder()
    name, weight = net.data("x", list(x.shape), "float64"), net.data("w", list(weights.shape), "float64")
    net.block.var(name).stop_gradient = False
    values = net.op("eig", {"X": name}, outputs=["Eigenvalues", "Eigenvectors"])[0]
    weighted = net.op("elementwise_mul", {"X": net.op("real", {"X": values})[0], "Y": weight})[0]
    append_backward(net.program, net.op("reduce_sum", {"X": weighted}, {"reduce_all": True})[0])
    return Executor().run(net.program, {name: x, weight: weights}, [name + "@GRAD"], Scope())[0]


def test_eig_grad_of_eigenvalues_alone_is_finite_where_they_repeat():
    """The trace's gradient is I at any X, repeated eigenvalues or not (Paddle 3.3.1 gives NaN: 0 / 0)."""
    q = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 3.0]])
    repeated = q @ np.diag([1.0, 1.0, 2.0]) @ np.linalg.inv(q)
    np.testing.assert_allclose(_eig_values_grad(repeated, np.ones(3)), np.eye(3), atol=1e-12)
    np.testing.assert_allclose(_eig_values_grad(np.eye(3), np.ones(3)), np.eye(3), atol=1e-12)
    np.testing.assert_allclose(_eig_values_grad(np.diag([1.0, 1.0, 2.0]), np.array([1.0, 2.0, 3.0])),
                               np.diag([1.0, 2.0, 3.0]), atol=1e-12)


def test_lu_solve_refuses_fed_rows_that_do_not_match_lu():
    """With unknown dims declared, b [2, 4, 1] against lu [2, 3, 3] used to solve with 3 of b's 4 rows."""
    net = ProgramBuilder()
    b, lu = net.data("b", [-1, -1, -1], "float64"), net.data("lu", [-1, -1, -1], "float64")
    pivots = net.data("p", [-1, -1], "int32")
    out = net.op("lu_solve", {"b": b, "lu": lu, "pivots": pivots})[0]
    feed = {b: np.ones((2, 4, 1)), lu: np.stack([np.eye(3)] * 2), pivots: np.ones((2, 3), np.int32)}
    with pytest.raises(ExecutionError, match="lu is 3 x 3 but b has 4 rows"):
        Executor().run(net.program, feed, [out], Scope())
