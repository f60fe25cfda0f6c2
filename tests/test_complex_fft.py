"""Complex tensors and the fft ops beyond the registry walks: Paddle's gradient convention for complex vars
(z@GRAD = dL/dRe + i dL/dIm), the grads of angle and abs at 0, the transforms' scales and directions against numpy,
what fft_c2r does with the imaginary parts a Hermitian spectrum cannot have, dtypes, and a complex loss refused.
Expected values were printed by Paddle 3.3.1 (dygraph, paddle.angle / abs / fft.irfft / hfft / rfft)."""

import warnings

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError, GradError, ProgramError
from gradc.gradcheck import check_program, compare_program
from gradc.layers import ProgramBuilder
from one_op import run

Z = np.array([1 + 2j, 3 - 1j, 0j], np.complex64)
H = np.array([1 + 1j, 2 - 1j, 0.5 + 2j, -1 + 3j], np.complex64)
W6 = np.array([1.0, -2.0, 3.0, 0.5, -1.0, 2.0], np.float32)


def grad_of_weighted(x, *ops, weights=None):
    """d/dx of sum(W * the result of the chain ``ops`` ((type, attrs) pairs) on x), W ``weights`` (default ones),
    computed by gradc's backward and executor."""
    net = ProgramBuilder()
    name = value = net.data("x", list(x.shape), x.dtype.name, stop_gradient=False)
    for op_type, attrs in ops:
        value = net.op(op_type, {"X": value}, attrs)[0]
    shape = list(net.block.var(value).shape)
    w = net.data("w", shape, "float32")
    loss = net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": value, "Y": w})[0]}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss)
    feed = {name: x, w: np.ones(shape, np.float32) if weights is None else weights}
    return gradc.Executor().run(net.program, feed, [name + "@GRAD"], gradc.Scope())[0]


@pytest.mark.parametrize(("op", "expected"), [
    ("angle", [-0.4 + 0.2j, 0.1 + 0.3j, 0]),
    ("abs", [0.447214 + 0.894427j, 0.948683 - 0.316228j, 0]),
], ids=["angle", "abs"])
def test_the_grad_of_a_complex_input_is_d_re_plus_i_d_im_and_0_at_0(op, expected):
    grad = grad_of_weighted(Z, (op, {}))
    assert grad.dtype == np.complex64
    np.testing.assert_allclose(grad, expected, atol=1e-6)


def test_irfft_ignores_the_imaginary_parts_of_its_first_and_middle_entries_and_their_grads_are_0():
    attrs = {"axes": [0], "normalization": "backward", "forward": False}
    out = run("fft_c2r", {"X": H}, attrs)["Out"]
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, [0.833333, 0.294658, 0.449359, -0.166667, -1.282692, 0.872009], atol=1e-6)
    hermitian = H.copy()
    hermitian.imag[[0, -1]] = 0
    np.testing.assert_array_equal(run("fft_c2r", {"X": hermitian}, attrs)["Out"], out)
    grad = grad_of_weighted(H, ("fft_c2r", attrs), weights=W6)
    np.testing.assert_allclose(grad, [0.583333, -0.166667, 0.166667 + 2.309401j, 0.416667], atol=1e-6)


def test_hfft_is_the_forward_transform_of_the_hermitian_spectrum():
    attrs = {"axes": [0], "normalization": "ortho", "forward": True}
    out = run("fft_c2r", {"X": H}, attrs)["Out"]
    np.testing.assert_allclose(out, [2.041241, 2.135976, -3.141941, -0.408248, 1.1007, 0.721762], atol=1e-5)
    np.testing.assert_allclose(out, np.fft.hfft(H.astype(np.complex128), norm="ortho"), atol=1e-5)
    grad = grad_of_weighted(H, ("fft_c2r", attrs), weights=W6)
    np.testing.assert_allclose(grad, [1.428869, -0.408248, 0.408248 - 5.656854j, 1.020621], atol=1e-5)


def test_rfft_with_forward_normalization_and_the_grad_through_its_real_and_imaginary_parts():
    x = np.array([1.0, -2.0, 3.0, 0.5, -1.0], np.float32)
    attrs = {"axes": [0], "normalization": "forward", "forward": True, "onesided": True}
    out = run("fft_r2c", {"X": x}, attrs)["Out"]
    assert out.dtype == np.complex64
    np.testing.assert_allclose(out, [0.3, -0.551722 - 0.103681j, 0.901722 + 0.593085j], atol=1e-6)
    weights = np.float32([[1, 2], [3, -1], [0.5, 4]])
    grad = grad_of_weighted(x, ("fft_r2c", attrs), ("as_real", {}), weights=weights)
    assert grad.dtype == np.float32
    np.testing.assert_allclose(grad, [0.9, 0.024492, 0.623894, -1.132911, 0.584525], atol=1e-6)


@pytest.mark.parametrize("normalization", ["backward", "forward", "ortho"])
@pytest.mark.parametrize("forward", [True, False])
def test_fft_c2c_scales_as_numpy_does(normalization, forward):
    x = (np.arange(12).reshape(3, 4) + 1j * np.arange(12)[::-1].reshape(3, 4)).astype(np.complex128)
    out = run("fft_c2c", {"X": x}, {"axes": [0, 1], "normalization": normalization, "forward": forward})["Out"]
    expected = (np.fft.fft2 if forward else np.fft.ifft2)(x, norm=normalization)
    assert out.dtype == np.complex128
    np.testing.assert_allclose(out, expected, atol=1e-10)


def test_complex_parts_round_trip_and_infer_their_dtypes():
    x, y = np.float32([[1, 2, 3]]), np.float32([[4], [5]])
    z = run("complex", {"X": x, "Y": y})["Out"]
    assert z.dtype == np.complex64 and z.shape == (2, 3)
    np.testing.assert_array_equal(run("real", {"X": z})["Out"], np.broadcast_to(x, (2, 3)))
    np.testing.assert_array_equal(run("imag", {"X": z})["Out"], np.broadcast_to(y, (2, 3)))
    pairs = run("as_real", {"X": z})["Out"]
    assert pairs.shape == (2, 3, 2) and pairs.dtype == np.float32
    np.testing.assert_array_equal(run("as_complex", {"X": pairs})["Out"], z)
    np.testing.assert_allclose(run("angle", {"X": np.float32([-2, 0, 3])})["Out"], [np.pi, 0, 0])


def test_a_complex_loss_is_refused():
    net = ProgramBuilder()
    x = net.data("x", [3], "float32", stop_gradient=False)
    z = net.op("complex", {"X": x, "Y": x})[0]
    loss = net.op("reduce_sum", {"X": z}, {"reduce_all": True})[0]
    with pytest.raises(GradError, match="must be a float var"):
        gradc.append_backward(net.program, loss)


def test_an_op_whose_grad_does_not_handle_complex_values_is_refused_by_name():
    net = ProgramBuilder()
    z = net.data("z", [3], "complex64", stop_gradient=False)
    loss = net.op("reduce_sum", {"X": net.op("abs", {"X": net.op("flip", {"X": z}, {"axis": [0]})[0]})[0]},
                  {"reduce_all": True})[0]
    with pytest.raises(GradError, match=r"op 0 \(flip\) reads complex z"):
        gradc.append_backward(net.program, loss)


@pytest.mark.parametrize("x_complex, y_complex", [(True, True), (False, True), (True, False)])
def test_second_and_third_derivatives_through_a_complex_quotient(x_complex, y_complex):
    """elementwise_div_grad's maker writes the quotient rule with the kernel's conjugates (dX = dOut / conj(y),
    dY = -dOut conj(x) / conj(y)^2), so its second and third derivatives match central differences along both axes
    of each complex operand (a real Y gets the real part)."""
    from gradcheck_cases.second_order import _weighted_sum, second_order
    z = np.array([[1 + 2j, -0.5 + 1j, 0.25 - 1.5j]])
    case = second_order("elementwise_div", {"X": z if x_complex else z.real, "Y": (z + 3) if y_complex else
                                            np.array([2.5, -3.0, 4.0])})
    built = case.program()
    check_program(**built)
    third = gradc.gradients(built["program"], built["loss"], built["wrt"])
    _weighted_sum(built["program"].global_block, third, built["feed"], "u", False, "loss3")
    check_program(built["program"], built["feed"], built["wrt"], loss="loss3", rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "sin", "tanh", "sigmoid", "silu", "softsign"])
def test_third_derivatives_through_complex_unary_math(op):
    """exp, log, sqrt, sin, tanh, sigmoid, silu (holomorphic) and softsign (not) of complex values: the grad ops'
    makers on complex values emit ops whose own makers take complex values too, so a third backward matches central
    differences along both axes."""
    from gradcheck_cases.second_order import _weighted_sum, second_order
    z = np.array([[0.3 + 0.4j, -0.5 + 0.2j, 0.25 - 0.6j]]) + (2.0 if op in ("log", "sqrt") else 0.0)
    built = second_order(op, {"X": z}).program()
    third = gradc.gradients(built["program"], built["loss"], built["wrt"])
    _weighted_sum(built["program"].global_block, third, built["feed"], "u", False, "loss3")
    check_program(built["program"], built["feed"], built["wrt"], loss="loss3", rtol=1e-4, atol=1e-6)


def test_elementwise_mul_of_complex_values_takes_the_conjugate_factor():
    x = np.array([1 + 2j, -0.5 + 1j], np.complex64)
    y = np.array([3 - 1j, 2 + 2j], np.complex64)
    net = ProgramBuilder()
    xs, ys = (net.data(n, [2], "complex64", stop_gradient=False) for n in ("x", "y"))
    real = net.op("real", {"X": net.op("elementwise_mul", {"X": xs, "Y": ys})[0]})[0]
    loss = net.op("reduce_sum", {"X": real}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss)
    dx, dy = gradc.Executor().run(net.program, {xs: x, ys: y}, [xs + "@GRAD", ys + "@GRAD"], gradc.Scope())
    np.testing.assert_allclose(dx, np.conj(y))   # d Re(xy) / dRe x + i d Re(xy) / dIm x = Re y - i Im y
    np.testing.assert_allclose(dy, np.conj(x))


def test_the_float64_pass_widens_complex64_so_a_float32_spectrum_checks_in_double_precision():
    net = ProgramBuilder()
    x = net.data("x", [2, 6], "float32", stop_gradient=False)
    spectrum = net.op("fft_r2c", {"X": x}, {"axes": [1], "normalization": "backward", "forward": True,
                                           "onesided": True})[0]
    loss = net.op("reduce_sum", {"X": net.op("abs", {"X": spectrum})[0]}, {"reduce_all": True})[0]
    wide = net.program.clone()
    gradc.passes.Float64Pass()(wide)
    assert wide.global_block.var(spectrum).dtype == gradc.ir.VarType.COMPLEX128
    feed = {"x": np.random.default_rng(3).standard_normal((2, 6)).astype(np.float32)}
    _, (check,) = compare_program(net.program, feed, ["x"], loss=loss, float64=True)
    assert check.mismatch is None and check.max_abs_error < 1e-7


def test_transforms_of_no_points_give_zeros_as_paddle_does():
    empty = np.zeros((3, 0), np.complex64)
    attrs = {"axes": [1], "normalization": "ortho", "forward": True}
    assert run("fft_c2c", {"X": empty}, attrs)["Out"].shape == (3, 0)
    out = run("fft_r2c", {"X": empty.real.copy()}, {**attrs, "onesided": True})["Out"]
    np.testing.assert_array_equal(out, np.zeros((3, 1), np.complex64))


def test_a_real_operand_of_a_complex_one_gives_a_complex_result_and_takes_the_real_part_of_its_grad():
    """Paddle 3.3.1 computes elementwise_add(float32 [1, 2, 3], complex64 z) as complex64 [2+1j, 4-1j, 3+3j]."""
    net = ProgramBuilder()
    x = net.data("x", [3], "float32", stop_gradient=False)
    z = net.data("z", [3], "complex64", stop_gradient=False)
    total = net.op("elementwise_add", {"X": x, "Y": z})[0]
    product = net.op("elementwise_mul", {"X": x, "Y": total})[0]
    assert net.block.var(total).dtype == gradc.ir.VarType.COMPLEX64
    loss = net.op("reduce_sum", {"X": net.op("imag", {"X": product})[0]}, {"reduce_all": True})[0]
    gradc.append_backward(net.program, loss)
    feed = {"x": np.float32([1, 2, 3]), "z": np.complex64([1 + 1j, 2 - 1j, 3j])}
    out, dx, dz = gradc.Executor().run(net.program, feed, [total, "x@GRAD", "z@GRAD"], gradc.Scope())
    np.testing.assert_array_equal(out, [2 + 1j, 4 - 1j, 3 + 3j])
    assert dx.dtype == np.float32
    np.testing.assert_array_equal(dx, feed["z"].imag)   # Im(x (x + z)) = x Im z
    np.testing.assert_array_equal(dz, 1j * feed["x"])


@pytest.mark.parametrize("op", ["relu", "reduce_max", "logsigmoid"])
def test_an_op_with_real_kernels_only_refuses_a_complex_input_by_name(op):
    with pytest.raises(ProgramError, match=f"{op} takes real values only .* input X 'x0' is complex64"):
        run(op, {"X": Z})


def test_a_complex_value_never_loses_its_imaginary_part_unseen():
    net = ProgramBuilder()
    x = net.data("x", [3], "float32")
    net.block.var(x).need_check_feed = False   # a var that takes any numeric array, cast
    with pytest.raises(ExecutionError, match="feed var 'x' is complex64, but block 0 declares float32"):
        gradc.Executor().run(net.program, {"x": Z}, [x], gradc.Scope())
    net = ProgramBuilder()   # a program declaring a real var for a complex value (Paddle's own infer does so)
    x, z = net.data("x", [3], "float32"), net.data("z", [3], "complex64")
    total = net.op("elementwise_add", {"X": x, "Y": z})[0]
    net.block.var(total).dtype = gradc.ir.VarType.FP32
    with pytest.raises(ExecutionError, match=f"computed '{total}' as complex64, but the program declares float32"):
        gradc.Executor().run(net.program, {"x": np.float32([1, 2, 3]), "z": Z}, [total], gradc.Scope())


def test_cast_of_a_complex_value_to_a_real_dtype_keeps_its_real_part_as_paddle_does():
    with warnings.catch_warnings():
        warnings.simplefilter("error")   # no ComplexWarning
        out = run("cast", {"X": Z}, {"in_dtype": 23, "out_dtype": 5})["Out"]
    np.testing.assert_array_equal(out, Z.real)


def test_a_complex_input_that_wants_no_grad_still_needs_an_op_whose_grad_takes_its_conjugate():
    """d Im(w . z) / dw is Im(z), not the -Im(z) that dot_grad's real formula would give w."""
    net = ProgramBuilder()
    w = net.data("w", [2, 3], "float32", stop_gradient=False)
    z = net.data("z", [2, 3], "complex64", stop_gradient=True)
    out = net.op("dot", {"X": w, "Y": z})[0]
    net.block.var(out).dtype = gradc.ir.VarType.COMPLEX64
    loss = net.op("reduce_sum", {"X": net.op("imag", {"X": out})[0]}, {"reduce_all": True})[0]
    with pytest.raises(GradError, match=r"op 0 \(dot\) reads complex z"):
        gradc.append_backward(net.program, loss)


def test_fft_c2r_over_an_axis_of_no_points_gives_zeros_like_the_other_transforms():
    out = run("fft_c2r", {"X": np.zeros((0, 3), np.complex64)}, {"axes": [0, 1], "normalization": "backward"})["Out"]
    assert out.shape == (0, 4) and out.dtype == np.float32


def test_every_op_that_lets_a_complex_gradient_through_has_a_gradcheck_case_on_complex_values():
    """gradc.backward.path.COMPLEX_DIFFERENTIABLE is a promise: each op in it has a case in
    tests/gradcheck_cases/complex_fft.py on complex values (a grad op: its second-order case through a program;
    eig_grad's programs, of eig's complex outputs, are in tests/gradcheck_cases/linalg_extra.py)."""
    from gradc.backward.path import COMPLEX_DIFFERENTIABLE
    from gradcheck_cases import complex_fft, linalg_extra
    cases = complex_fft.CASES + [case for case in linalg_extra.CASES if case.op == "eig_grad"]

    def on_complex_values(case):   # complex inputs, a grad op's program, or an op making complex values of real ones
        arrays = [a for v in case.inputs.values() for a in (v if isinstance(v, list) else [v])]
        return case.program is not None or case.op in ("complex", "as_complex", "fft_r2c") \
            or any(np.iscomplexobj(a) for a in arrays)

    assert not COMPLEX_DIFFERENTIABLE - {case.op for case in cases if on_complex_values(case)}


def test_sign_of_a_complex_value_is_z_over_its_modulus_as_paddle_gives_on_any_numpy():
    """Paddle 3.3.1: sign([3+4j, 0, -2j]) = [0.6+0.8j, 0, -1j]; numpy before 2.0 gives the sign of the real part."""
    out = run("sign", {"X": np.complex64([3 + 4j, 0, -2j])})["Out"]
    np.testing.assert_allclose(out, [0.6 + 0.8j, 0, -1j], rtol=1e-6)


def test_a_complex_literal_goes_to_pir_and_back(tmp_path):
    """assign_value of complex values (Paddle Quantum's zero state, as Paddle 3.3.1 saves it: a_c128 numbers): Scalars
    of type COMPLEX128 in gradc, a_c128 in the PIR file, the same values after both trips."""
    from gradc.ops.creation import scalars
    from gradc.pir import save_pir
    values, out = [1 + 2j, 0j, -0.5j, 3 + 0j], "literal"
    program = gradc.Program()
    program.global_block.create_var(out, [2, 2], gradc.VarType.COMPLEX64)
    program.global_block.ops.append(gradc.ir.OpDesc(
        "assign_value", {}, {"Out": [out]}, {"shape": [2, 2], "dtype": int(gradc.VarType.COMPLEX64),
                                             "values": scalars(values)}, {"values": gradc.ir.AttrType.SCALARS}))
    expected = np.array(values, np.complex64).reshape(2, 2)
    np.testing.assert_array_equal(gradc.Executor().run(program, {}, [out])[0], expected)
    save_pir(program, tmp_path / "literal.json", [out])
    assert (tmp_path / "literal.json").read_text().count('"0.a_c128"') == 4
    loaded = gradc.load(tmp_path / "literal.json")
    fetched = [op.input("X")[0] for op in loaded.global_block.ops if op.type == "fetch"]
    np.testing.assert_array_equal(gradc.Executor().run(loaded, {}, fetched)[0], expected)
