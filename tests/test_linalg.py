"""gradc.ops.linalg and linalg_decomp: the layouts and edge values Paddle 3.3.1 gives (checked against it), and the
gradients where gradc is right and Paddle is not."""

import numpy as np
import pytest

import gradc
from gradc.gradcheck import check_program
from gradc.layers import ProgramBuilder
from one_op import run

f32 = np.float32


def grad_of_sum(op_type, inputs, attrs=None, out_slot="Out"):
    """d sum(out_slot) / d each float input, by gradc's backward: {slot: gradient}."""
    net = ProgramBuilder()
    slots = {slot: net.data(slot.lower(), list(a.shape), a.dtype.name) for slot, a in inputs.items()}
    out = net.op(op_type, slots, attrs, outputs=[out_slot])[0]
    loss = net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss, no_grad_set=set())
    names = [f"{name}@GRAD" for name in slots.values()]
    values = gradc.Executor().run(net.program, {slots[s]: a for s, a in inputs.items()}, names, gradc.Scope())
    return dict(zip(slots, values))


def test_slogdeterminant_stacks_sign_then_log_abs_det_on_a_new_leading_dim():
    x = np.array([[[2.0, 0.0], [0.0, -3.0]], [[1.0, 2.0], [2.0, 4.0]]], f32)   # det -6, and a singular one
    out = run("slogdeterminant", {"Input": x})["Out"]
    assert out.dtype == f32 and out.shape == (2, 2)
    np.testing.assert_allclose(out[0], [-1.0, 0.0])
    assert out[1, 0] == pytest.approx(np.log(6.0)) and out[1, 1] == -np.inf


def test_determinant_of_one_matrix_is_0_d_and_its_gradient_at_a_singular_matrix_is_the_cofactors():
    x = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert run("determinant", {"Input": x})["Out"].shape == ()
    # d det / dA = the cofactor matrix [[d, -c], [-b, a]]; Paddle 3.3.1 gives zeros for any singular matrix
    np.testing.assert_allclose(grad_of_sum("determinant", {"Input": x})["Input"], [[4.0, -2.0], [-2.0, 1.0]])


def test_slogdeterminant_gradient_is_nan_only_for_the_singular_matrix_of_a_batch():
    x = np.array([[[2.0, 1.0], [1.0, 3.0]], [[1.0, 2.0], [2.0, 4.0]]])
    grad = grad_of_sum("slogdeterminant", {"Input": x})["Input"]
    np.testing.assert_allclose(grad[0], np.linalg.inv(x[0]).T)   # only log|det| counts: the sign is flat
    assert np.isnan(grad[1]).all()


def test_cholesky_reads_the_lower_triangle_or_with_upper_the_upper_one_as_paddle_does():
    spd = np.array([[4.0, 2.0], [2.0, 3.0]])
    noisy_upper, noisy_lower = np.tril(spd) + np.triu([[0, 9.0], [0, 0]]), np.triu(spd) - np.tril([[0, 0], [7.0, 0]])
    low = np.linalg.cholesky(spd)
    np.testing.assert_allclose(run("cholesky", {"X": noisy_upper})["Out"], low)
    np.testing.assert_allclose(run("cholesky", {"X": noisy_lower}, {"upper": True})["Out"], low.T)
    grad = grad_of_sum("cholesky", {"X": noisy_upper})["X"]
    assert grad[0, 1] == 0 and grad[1, 0] != 0   # the gradient of what it reads: Paddle's is symmetric


def test_cholesky_solve_gradient_reaches_only_the_triangle_of_y_it_reads():
    b, factor = np.ones((2, 1)), np.array([[2.0, 5.0], [1.0, 3.0]])   # the 5 is not part of L
    grads = grad_of_sum("cholesky_solve", {"X": b, "Y": factor})
    low = np.tril(factor)
    a_inv = np.linalg.inv(low @ low.T)
    np.testing.assert_allclose(grads["X"], a_inv @ np.ones((2, 1)))
    assert grads["Y"][0, 1] == 0


def test_triangular_solve_variants():
    x = np.array([[2.0, 1.0], [4.0, 5.0]])
    y = np.array([[1.0], [2.0]])
    upper = np.triu(x)
    np.testing.assert_allclose(run("triangular_solve", {"X": x, "Y": y})["Out"], np.linalg.solve(upper, y))
    unit_lower_t = np.array([[1.0, 0.0], [4.0, 1.0]]).T
    out = run("triangular_solve", {"X": x, "Y": y}, {"upper": False, "transpose": True, "unitriangular": True})
    np.testing.assert_allclose(out["Out"], np.linalg.solve(unit_lower_t, y))


def test_solve_takes_a_vector_per_matrix_as_paddle_does():
    x = np.stack([2 * np.eye(3), 4 * np.eye(3)]).astype(f32)
    np.testing.assert_allclose(run("solve", {"X": x, "Y": np.ones(3, f32)})["Out"], [[0.5] * 3, [0.25] * 3])
    np.testing.assert_allclose(run("solve", {"X": x, "Y": np.ones((2, 3), f32)})["Out"], [[0.5] * 3, [0.25] * 3])
    # a Y of X's rank - 1 shaped otherwise is one matrix for every X
    x = np.stack([2 * np.eye(2), 4 * np.eye(2), np.eye(2)]).astype(f32)
    out = run("solve", {"X": x, "Y": np.ones((2, 3), f32)})["Out"]
    assert out.shape == (3, 2, 3)
    np.testing.assert_allclose(out[:, 0, 0], [0.5, 0.25, 1.0])


def test_solve_leaves_out_unknown_when_the_declared_shapes_do_not_say_whether_y_holds_vectors():
    """X [-1, 3, 3], Y [4, 3]: vectors at a batch of 4, one 4-row matrix (refused) at another batch."""
    net = ProgramBuilder()
    x, y = net.data("x", [-1, 3, 3], "float32"), net.data("y", [4, 3], "float32")
    out = net.op("solve", {"X": x, "Y": y})[0]
    assert net.block.var(out).shape is None
    rhs = np.ones((4, 3), f32)
    at_4 = gradc.Executor().run(net.program, {x: np.broadcast_to(2 * np.eye(3, dtype=f32), (4, 3, 3)), y: rhs}, [out],
                                gradc.Scope())[0]
    np.testing.assert_allclose(at_4, np.full((4, 3), 0.5))
    with pytest.raises(gradc.ExecutionError, match=r"\(solve\): X is 3 x 3 but Y has 4 rows"):
        gradc.Executor().run(net.program, {x: np.zeros((2, 3, 3), f32), y: rhs}, [out], gradc.Scope())
    known = ProgramBuilder()
    out = known.op("solve", {"X": known.data("x", [4, 3, 3], "float32"), "Y": known.data("y", [4, 3], "float32")})[0]
    assert known.block.var(out).shape == [4, 3]


@pytest.mark.parametrize("n, expected", [(0, np.eye(2)), (2, [[7.0, 10.0], [15.0, 22.0]]),
                                         (-1, [[-2.0, 1.0], [1.5, -0.5]])])
def test_matrix_power(n, expected):
    x = np.array([[1.0, 2.0], [3.0, 4.0]], f32)
    out = run("matrix_power", {"X": x}, {"n": n})["Out"]
    assert out.dtype == f32
    np.testing.assert_allclose(out, expected, rtol=1e-6)


def test_lu_packs_l_and_u_with_lapack_pivots_and_infos():
    """Paddle 3.3.1's values: the row of largest magnitude is swapped in (1-based), a zero pivot sets Infos."""
    out = run("lu", {"X": np.array([[1.0, 2.0], [3.0, 4.0]], f32)})
    np.testing.assert_allclose(out["Out"], [[3.0, 4.0], [1 / 3, 2 / 3]], rtol=1e-6)
    assert out["Pivots"].tolist() == [2, 2] and out["Pivots"].dtype == np.int32 and out["Infos"] == 0
    zero = run("lu", {"X": np.zeros((2, 3, 3), f32)})
    assert zero["Pivots"].tolist() == [[1, 2, 3]] * 2 and zero["Infos"].tolist() == [1, 1]


def test_qr_modes():
    x = np.random.default_rng(0).standard_normal((4, 3))
    complete = run("qr", {"X": x}, {"mode": "complete"})
    assert complete["Q"].shape == (4, 4) and complete["R"].shape == (4, 3)
    only_r = run("qr", {"X": x}, {"mode": "r"})
    assert only_r["Q"].shape == (0,)
    np.testing.assert_allclose(only_r["R"], np.linalg.qr(x)[1])
    np.testing.assert_allclose(complete["Q"] @ complete["R"], x, atol=1e-12)


def test_svd_full_matrices_shapes():
    out = run("svd", {"X": np.ones((2, 4, 3), f32)}, {"full_matrices": True})
    assert [out[s].shape for s in ("U", "S", "VH")] == [(2, 4, 4), (2, 3), (2, 3, 3)]


def test_eigh_reads_the_uplo_triangle():
    sym = np.array([[2.0, 1.0], [1.0, 2.0]])
    lower_noise = np.triu(sym) + np.tril([[0, 0], [5.0, 0]])
    np.testing.assert_allclose(run("eigh", {"X": lower_noise}, {"UPLO": "U"})["Eigenvalues"], [1.0, 3.0])
    grad = grad_of_sum("eigh", {"X": lower_noise}, {"UPLO": "U"}, out_slot="Eigenvalues")["X"]
    np.testing.assert_allclose(grad, [[1.0, 0.0], [0.0, 1.0]], atol=1e-12)   # d trace = I, on the upper triangle


@pytest.mark.parametrize("driver, residuals", [("gels", (2,)), ("gelsy", (0,)), ("gelsd", (2,)), ("gelss", (2,))])
def test_lstsq_outputs_by_driver(driver, residuals):
    """Residuals as Paddle's kernel gives them; Rank and SingularValues for every driver (Paddle's kernel leaves
    them unwritten for gels, and SingularValues for gelsy)."""
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((5, 3)).astype(f32), rng.standard_normal((5, 2)).astype(f32)
    out = run("lstsq", {"X": x, "Y": y}, {"driver": driver})
    expected = np.linalg.lstsq(x.astype(np.float64), y, rcond=None)
    np.testing.assert_allclose(out["Solution"], expected[0], rtol=1e-5, atol=1e-6)
    assert out["Residuals"].shape == residuals and out["Rank"] == 3 and out["Rank"].dtype == np.int32
    np.testing.assert_allclose(out["SingularValues"], expected[3], rtol=1e-5)
    if residuals != (0,):
        np.testing.assert_allclose(out["Residuals"], expected[1], rtol=1e-5)


def test_eigh_grad_keeps_its_uplo_through_pir_which_has_none():
    """PIR's eigh_grad has no UPLO: importing it takes the UPLO of the eigh op that wrote the eigenvectors."""
    from gradc.pir import parse_pir, serialize_pir

    net = ProgramBuilder()
    x = net.data("x", [3, 3], "float32")
    values = net.op("eigh", {"X": x}, {"UPLO": "U"}, outputs=["Eigenvalues"])[0]
    loss = net.op("reduce_sum", {"X": values}, {"reduce_all": True})[0]
    net.block.var(x).is_parameter = True
    gradc.append_backward(net.program, loss, no_grad_set=set())
    again = parse_pir(serialize_pir(net.program))
    assert [op.attrs["UPLO"] for op in again.global_block.ops if op.type in ("eigh", "eigh_grad")] == ["U", "U"]


def test_lu_unpack_gives_back_x_and_leaves_what_it_does_not_unpack_empty():
    x = np.random.default_rng(3).standard_normal((2, 4, 3)).astype(f32)
    packed = run("lu", {"X": x})
    out = run("lu_unpack", {"X": packed["Out"], "Pivots": packed["Pivots"]})
    assert [out[s].shape for s in ("Pmat", "L", "U")] == [(2, 4, 4), (2, 4, 3), (2, 3, 3)]
    np.testing.assert_allclose(out["Pmat"] @ out["L"] @ out["U"], x, rtol=1e-5, atol=1e-6)
    only_pivots = run("lu_unpack", {"X": packed["Out"], "Pivots": packed["Pivots"]}, {"unpack_ludata": False})
    assert only_pivots["L"].shape == only_pivots["U"].shape == (0,)


def test_second_derivatives_through_a_decomposition():
    """d/dx of |d eigvalsh(x) / dx|^2 (eigh_grad's own maker) against central differences."""
    from gradc.gradcheck import check_program

    net = ProgramBuilder()
    x = net.data("x", [3, 3], "float64")
    net.block.var(x).is_parameter = True
    values = net.op("eigh", {"X": x}, outputs=["Eigenvalues"])[0]
    cubed = net.op("pow", {"X": values}, {"factor": 3.0})[0]
    gradc.append_backward(net.program, net.op("reduce_sum", {"X": cubed}, {"reduce_all": True})[0])
    squared = net.op("square", {"X": "x@GRAD"})[0]
    penalty = net.op("reduce_sum", {"X": squared}, {"reduce_all": True})[0]
    sym = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, -0.3], [0.1, -0.3, -1.5]])
    assert check_program(net.program, {}, ["x"], loss=penalty, params={"x": sym})


@pytest.mark.parametrize("op_type, inputs, attrs", [
    ("inverse", {"Input": np.zeros((0, 3, 3), f32)}, {}), ("slogdeterminant", {"Input": np.zeros((0, 3, 3), f32)}, {}),
    ("qr", {"X": np.zeros((0, 4, 3), f32)}, {}), ("svd", {"X": np.zeros((0, 3, 4), f32)}, {}),
    ("lu", {"X": np.zeros((0, 3, 3), f32)}, {}), ("matrix_power", {"X": np.zeros((0, 3, 3), f32)}, {"n": -2}),
    ("lstsq", {"X": np.zeros((0, 4, 3), f32), "Y": np.zeros((0, 4, 2), f32)}, {"driver": "gelsd"}),
])
def test_an_empty_batch_gives_empty_results_of_the_inferred_shapes(op_type, inputs, attrs):
    results = run(op_type, inputs, attrs)   # run checks each result against its inferred shape
    assert all(value.size == 0 for value in results.values())


def test_slogdeterminant_leaves_paddles_legacy_declaration_and_refuses_another():
    """Paddle 3.3.1 declares Out with Input's shape ([3, 3]; its kernel writes [2]): verify accepts that, and
    [2], but not another shape."""
    def problems(declared):
        program = gradc.Program()
        block = program.global_block
        block.create_var("x", [3, 3])
        block.create_var("out", declared)
        block.append_op("slogdeterminant", {"Input": ["x"]}, {"Out": ["out"]})
        return gradc.verify(program)

    assert problems([3, 3]) == [] and problems([2]) == []
    assert any("declared with shape [5]" in problem for problem in problems([5]))


@pytest.mark.parametrize("columns", [2, 5])
@pytest.mark.parametrize("op_type, out_slot, attrs", [("svd", "U", {"full_matrices": True}), ("qr", "R", {}),
                                                       ("qr", "R", {"mode": "r"}), ("lu", "Out", {})])
def test_a_decomposition_of_unknown_matrix_size_is_differentiated_three_times(op_type, out_slot, attrs, columns):
    """The makers cut Q, U, VH at min(M, N) and branch on M against N where the sizes are declared; of a size known
    at run time only they choose with selection matrices (tall and wide X through one program)."""
    net = ProgramBuilder()
    x = net.data("x", [3, -1], "float64", stop_gradient=False)
    out = net.op(op_type, {"X": x}, attrs, outputs=[out_slot])[0]

    def sines(value):
        return net.op("reduce_sum", {"X": net.op("sin", {"X": value})[0]}, {"reduce_all": True})[0]
    gradc.gradients(net.program, sines(out), ["x"])
    gradc.gradients(net.program, sines("x@GRAD"), ["x"])
    check_program(net.program, {"x": np.random.default_rng(columns).standard_normal((3, columns))}, ["x"],
                  loss=sines("x@GRAD@2"), rtol=1e-4, atol=1e-7)


def test_determinant_is_differentiated_twice_at_an_invertible_matrix_only():
    """determinant_grad's maker is dOut det(A) A^-T: at a singular A the run stops at its inverse, saying why."""
    net = ProgramBuilder()
    x = net.data("x", [2, 2], "float64", stop_gradient=False)
    gradc.gradients(net.program, net.op("determinant", {"Input": x})[0], ["x"])
    penalty = net.op("reduce_sum", {"X": net.op("square", {"X": "x@GRAD"})[0]}, {"reduce_all": True})[0]
    second = gradc.gradients(net.program, penalty, ["x"])
    a = np.array([[2.0, 1.0], [1.0, 3.0]])
    value = gradc.Executor().run(net.program, {"x": a}, second, gradc.Scope())[0]
    np.testing.assert_allclose(value, 2 * a)   # a 2 x 2 matrix's cofactors are its entries moved: |adj(A)|^2 = |A|^2
    with pytest.raises(gradc.ExecutionError, match=r"\(inverse\): Input holds a singular matrix, which has no inverse"):
        gradc.Executor().run(net.program, {"x": np.array([[1.0, 2.0], [2.0, 4.0]])}, second, gradc.Scope())


@pytest.mark.parametrize("n, expected", [(0, 0.0), (1, 1.0)])
def test_matrix_power_0_and_1_give_zero_second_derivatives_even_where_x_is_infinite(n, expected):
    """d/dx sum(x * d sum(X^n)/dx): X^0's gradient is zeros and X^1's ones whatever X holds, so their own
    derivatives in X are 0, not 0 * inf."""
    net = ProgramBuilder()
    x = net.data("x", [2, 2], "float64", stop_gradient=False)
    grad = gradc.gradients(net.program, net.op("reduce_sum", {"X": net.op("matrix_power", {"X": x}, {"n": n})[0]},
                                                                    {"reduce_all": True})[0], ["x"])[0]
    weighted = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": grad, "Y": x})[0]}, {"reduce_all": True})[0]
    second = gradc.gradients(net.program, weighted, ["x"])
    value = gradc.Executor().run(net.program, {"x": np.array([[np.inf, 1.0], [1.0, 3.0]])}, second, gradc.Scope())[0]
    np.testing.assert_array_equal(value, np.full((2, 2), expected))


def test_an_eigh_grad_without_its_eigh_is_refused_by_the_pir_import():
    """Without the eigh op that wrote its eigenvectors, PIR's eigh_grad (which has no UPLO) cannot say which triangle
    its gradient lands on: the import says so rather than taking 'L'."""
    from gradc.pir import parse_pir, serialize_pir

    program = gradc.Program()
    block = program.global_block
    for name, shape in (("w", [3]), ("v", [3, 3]), ("dw", [3]), ("dv", [3, 3]), ("dx", [3, 3])):
        block.create_var(name, shape)
    block.append_op("eigh_grad", {"Eigenvalues": ["w"], "Eigenvectors": ["v"], "Eigenvalues@GRAD": ["dw"],
                                  "Eigenvectors@GRAD": ["dv"]}, {"X@GRAD": ["dx"]}, {"UPLO": "U"})
    with pytest.raises(gradc.FormatError, match=r"no eigh op before it writes its eigenvectors \['v'\]"):
        parse_pir(serialize_pir(program))
