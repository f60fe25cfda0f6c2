"""Second derivatives that reach a forward output a first backward never differentiates (huber_loss's
Residual, cross_entropy2's MatchX), and the ops gradc differentiates twice only in part (put_along_axis where
it is linear, cumprod along a dim of known size, median with its axes known when compiling, logcumsumexp along a
dim of unknown size)."""

from __future__ import annotations

import numpy as np
import pytest

import gradc
from gradc.gradcheck import check_program
from gradc.layers import ProgramBuilder

RNG = np.random.default_rng(11)


def _squared_mean(net: ProgramBuilder, x: str) -> str:
    return net.mean(net.op("square", {"X": x})[0])


def test_a_loss_of_huber_loss_s_residual_reaches_x_and_y():
    net = ProgramBuilder()
    x = net.data("x", [2, 3], "float64", stop_gradient=False)
    y = net.data("y", [2, 3], "float64", stop_gradient=False)
    residual = net.op("huber_loss", {"X": x, "Y": y}, {"delta": 1.0}, outputs=["Residual"])[0]
    grads = check_program(net.program, {"x": RNG.standard_normal((2, 3)), "y": RNG.standard_normal((2, 3))},
                          ["x", "y"], loss=_squared_mean(net, residual))
    np.testing.assert_allclose(grads["x"], -grads["y"])   # Residual = Y - X


def test_a_loss_of_cross_entropy2_s_match_x_reaches_x_at_the_labels_only():
    net = ProgramBuilder()
    x = net.data("x", [3, 4], "float64", stop_gradient=False)
    label = net.data("label", [3, 1], "int64")
    match = net.op("cross_entropy2", {"X": x, "Label": label}, outputs=["MatchX"])[0]
    labels = np.array([[2], [-100], [0]])
    grads = check_program(net.program, {"x": RNG.dirichlet(np.ones(4), 3), "label": labels}, ["x"],
                          loss=_squared_mean(net, match))
    at_labels = np.zeros((3, 4), bool)
    at_labels[[0, 2], [2, 0]] = True   # the ignored row gets nothing
    assert np.all(grads["x"][~at_labels] == 0) and np.all(grads["x"][at_labels] != 0)


def _weighted(net: ProgramBuilder, x: str, weights: str) -> str:
    return net.op("reduce_sum", {"X": net.op("elementwise_mul", {"X": x, "Y": weights})[0]},
                  {"dim": [0], "keep_dim": False, "reduce_all": True})[0]


def test_put_along_axis_with_reduce_mul_is_differentiated_five_times():
    """mul's grad is dOut times products of the other factors of each run-time group: its second derivative is
    put_along_axis_grad_grad along one direction (exact on duals), every later one that op along one more, each
    checked against central differences: groups of up to six factors, Input among them, a zero among them (several
    in one group: row 1's broadcast Value is 0)."""
    rng, value_shape = np.random.default_rng(5), (2, 1)
    net = ProgramBuilder()
    x = net.data("x", [2, 3], "float64", stop_gradient=False)
    value = net.data("value", list(value_shape), "float64", stop_gradient=False)
    for name, shape in (("index", [2, 6]), ("wx", [2, 3]), ("wv", list(value_shape)), ("wo", [2, 3])):
        net.data(name, shape, "int64" if name == "index" else "float64")
    out = net.op("put_along_axis", {"Input": x, "Index": "index", "Value": value},
                 {"Axis": 1, "Reduce": "mul"}, outputs=["Result"])[0]
    gradc.append_backward(net.program, _weighted(net, out, "wo"))
    feed = {"x": np.array([[0.9, 0.0, -0.8], [0.6, 1.1, -0.7]]), "index": np.array([[1, 1, 1, 1, 1, 0],
                                                                                    [0, 2, 2, 0, 2, 2]]),
            "value": rng.uniform(0.6, 1.2, value_shape) * rng.choice([-1, 1], value_shape),
            "wx": rng.normal(size=(2, 3)), "wv": rng.normal(size=value_shape), "wo": rng.normal(size=(2, 3))}
    feed["value"][1] = 0.0
    loss = None
    for order in (2, 3, 4, 5):
        suffix = "" if order == 2 else f"@{order - 1}"
        if loss is not None:
            gradc.gradients(net.program, loss, ["x", "value"])
        loss = net.op("elementwise_add", {"X": _weighted(net, f"x@GRAD{suffix}", "wx"),
                                          "Y": _weighted(net, f"value@GRAD{suffix}", "wv")})[0]
        grads = check_program(net.program, feed, ["x", "value"], loss=loss, rtol=1e-5, atol=1e-8)
        assert min(np.abs(grads[name]).max() for name in ("x", "value")) > 1
    assert [op.type for op in net.block.ops].count("put_along_axis_grad_grad") > 3


@pytest.mark.parametrize("attrs", [{"dim": 1}, {"dim": -1, "exclusive": True, "reverse": True}])
def test_cumprod_along_a_dim_of_unknown_size_is_differentiated_five_times(attrs):
    """The scan cumprod_grad's maker writes needs n; along a dim of unknown size the maker emits cumprod_grad_grad
    along one direction (exact on duals; zeros too), and every later backward that op along one more
    (gradc.ops.directional_double: duals nested once per direction), the fifth derivative too."""
    net = ProgramBuilder()
    x = net.data("x", [3, -1], "float64", stop_gradient=False)
    gradc.gradients(net.program, _squared_mean(net, net.op("cumprod", {"X": x}, attrs)[0]), ["x"])
    loss2 = _squared_mean(net, "x@GRAD")
    feed = {"x": np.array([[0.5, -1.2, 0.0, 1.1], [1.3, 0.8, -0.7, 0.9], [0.0, 0.0, 1.4, -0.6]])}
    check_program(net.program, feed, ["x"], loss=loss2)
    loss = loss2
    for order in (3, 4, 5):
        gradc.gradients(net.program, loss, ["x"])
        loss = _squared_mean(net, f"x@GRAD@{order - 1}")
        check_program(net.program, feed, ["x"], loss=loss, rtol=1e-5, atol=1e-8)
    assert [op.type for op in net.block.ops].count("cumprod_grad_grad") > 3


def test_cumprod_grad_of_complex_factors_takes_their_conjugates_as_paddles_kernel():
    """dX_j = sum over i >= j of dOut_i conj(prod_{k <= i, k != j} x_k): Paddle 3.3.1's cumprod_grad (paddle.grad on
    complex128), the convention cumprod_grad_grad's kernel follows for a complex X."""
    rng = np.random.default_rng(3)
    x, dout = (rng.normal(size=(2, 4)) + 1j * rng.normal(size=(2, 4)) for _ in range(2))
    net = ProgramBuilder()
    net.data("x", [2, 4], "complex128")
    net.data("dout", [2, 4], "complex128")
    (out,) = net.op("cumprod", {"X": "x"}, {"dim": 1})
    net.data("dx", [2, 4], "complex128")
    net.block.append_op("cumprod_grad", {"X": ["x"], "Out": [out], "Out@GRAD": ["dout"]}, {"X@GRAD": ["dx"]},
                        {"dim": 1})
    (dx,) = gradc.Executor().run(net.program, {"x": x, "dout": dout}, ["dx"])
    expected = [[sum(dout[r, i] * np.conj(np.prod(np.delete(x[r, :i + 1], j))) for i in range(j, 4))
                 for j in range(4)] for r in range(2)]
    np.testing.assert_allclose(dx, expected, rtol=1e-12)


@pytest.mark.parametrize("attrs", [{"dim": [1], "keep_dim": False}, {"reduce_all": True, "dim": [0]}])
def test_reduce_prod_over_dims_of_unknown_size_is_differentiated_five_times(attrs):
    """reduce_prod_grad's pairwise product needs the count; over dims of unknown size its maker emits
    reduce_prod_grad_grad along one direction (exact on duals; a zero and two zeros in a row too), and every later
    backward that op along one more, the fifth derivative too."""
    net = ProgramBuilder()
    x = net.data("x", [3, -1], "float64", stop_gradient=False)
    (product,) = net.op("reduce_prod", {"X": x}, attrs)
    # reduce_all over a zero: a loss whose grad at a product of 0 is not 0, else every derivative here would be 0
    gradc.gradients(net.program, net.mean(product) if attrs.get("reduce_all") else _squared_mean(net, product), ["x"])
    loss2 = _squared_mean(net, "x@GRAD")
    x_value = np.array([[0.5, -1.2, 0.0, 1.1], [1.3, 0.8, -0.7, 0.9], [0.0, 0.0, 1.4, -0.6]])
    if attrs.get("reduce_all"):   # one zero in all: its grad is the only nonzero one, and moves with every other x
        x_value = np.array([[0.5, -1.2, 0.9, 1.1], [1.3, 0.8, -0.7, 0.9], [0.0, 1.2, 1.4, -0.6]])
    check_program(net.program, {"x": x_value}, ["x"], loss=loss2)
    loss = loss2
    for order in (3, 4, 5):
        gradc.gradients(net.program, loss, ["x"])
        loss = _squared_mean(net, f"x@GRAD@{order - 1}")
        check_program(net.program, {"x": x_value}, ["x"], loss=loss, rtol=1e-5, atol=1e-8)
    assert [op.type for op in net.block.ops].count("reduce_prod_grad_grad") > 3


@pytest.mark.parametrize("op_type, attrs", [("logsumexp", {"axis": [1]}), ("frobenius_norm", {"dim": [1]})])
def test_a_reduce_grads_out_grad_of_the_wrong_rank_is_named_when_differentiated_twice(op_type, attrs):
    """The maker gives Out@GRAD back its reduced dims: a declared shape short of them is an error naming it."""
    net = ProgramBuilder()
    x = net.data("x", [2, 3], "float64", stop_gradient=False)
    out = net.op(op_type, {"X": x}, attrs)[0]
    gradc.gradients(net.program, _squared_mean(net, out), ["x"])
    net.program.global_block.var(f"{out}@GRAD").shape = []
    with pytest.raises(gradc.GradError, match=rf"{op_type}_grad: {out}@GRAD\S* has shape \[\], not the 1 dims"):
        gradc.gradients(net.program, _squared_mean(net, "x@GRAD"), ["x"])


def test_a_grad_makers_error_says_where_its_op_is():
    net = ProgramBuilder()
    x = net.data("x", [3, 4], "float64", stop_gradient=False)
    out = net.op("rms_norm", {"x": x}, {"normalized_shape": [4]})[0]
    gradc.gradients(net.program, _squared_mean(net, out), ["x"])
    net.program.global_block.var("x").shape = None
    index = next(i for i, op in enumerate(net.program.global_block.ops) if op.type == "rms_norm_grad")
    with pytest.raises(gradc.GradError, match=rf"^block 0, op {index} \(rms_norm_grad\): rms_norm_grad: "
                                              r"x x must have a known rank >= 2"):
        gradc.gradients(net.program, _squared_mean(net, "x@GRAD"), ["x"])


def test_logcumsumexp_along_a_dim_of_unknown_size_is_a_cumsum_exact_where_the_scan_spans_less_than_exp_s_range():
    """The maker's run-time-size form weighs a cumsum by exp(s - c), c halfway between the scan's ends: it gives the
    known-size form's grads (to rounding) while s spans < ~1400 in float64, and infinities and NaNs beyond."""
    def grads(dims, x):
        net = ProgramBuilder()
        net.data("x", dims, "float64", stop_gradient=False)
        gradc.gradients(net.program, _squared_mean(net, net.op("logcumsumexp", {"X": "x"}, {"axis": 1})[0]), ["x"])
        (g2,) = gradc.gradients(net.program, _squared_mean(net, "x@GRAD"), ["x"])
        return gradc.Executor().run(net.program, {"x": x}, ["x@GRAD", g2])

    x = np.array([[-600.0, 0.5, 650.0, -2.0], [1.0, 2.0, -3.0, 0.5]])
    for known, unknown in zip(grads([2, 4], x), grads([2, -1], x)):
        np.testing.assert_allclose(unknown, known, rtol=1e-12, atol=1e-300)
    far = grads([2, -1], x * 2)
    assert not np.all(np.isfinite(far[1])) and np.all(np.isfinite(grads([2, 4], x * 2)[1]))


def test_median_is_differentiated_twice_with_its_axes_in_axis_tensor():
    """median_grad's maker sums ddX over the folded dims with a reduce_sum reading AxisTensor at run time."""
    net = ProgramBuilder()
    x = net.data("x", [3, 4], "float64", stop_gradient=False)
    axis = net.data("axis", [1], "int64")
    out = net.op("median", {"x": x, "AxisTensor": axis}, {"keepdim": True}, outputs=["out"])[0]
    gradc.gradients(net.program, _squared_mean(net, out), ["x"])
    loss = _squared_mean(net, "x@GRAD")
    rng = np.random.default_rng(5)
    feed = {"x": rng.permutation(12).reshape(3, 4) + rng.uniform(0, 0.1, (3, 4)), "axis": np.array([1], np.int64)}
    check_program(net.program, feed, ["x"], loss=loss)


@pytest.mark.parametrize("reduce", ["amax", "mul"])
def test_put_along_axis_grad_of_complex_values_is_not_differentiated(reduce):
    """put_along_axis has no gradient of complex values (nor a complex kernel in Paddle), and gradc's own backwards no
    longer step its grad to complex factors, so a complex put_along_axis_grad is refused by name (amin/amax would
    order values by their real parts; mul's kernel takes no conjugates)."""
    net = ProgramBuilder()
    for name in ("x", "dout"):
        net.data(name, [2, 3], "complex128", stop_gradient=False)
    net.data("index", [2, 1], "int64")
    net.data("value", [2, 1], "complex128", stop_gradient=False)
    net.data("result", [2, 3], "complex128")
    net.data("dx", [2, 3], "complex128")
    net.block.append_op("put_along_axis_grad", {"Input": ["x"], "Index": ["index"], "Value": ["value"],
                                                "Result": ["result"], "Result@GRAD": ["dout"]}, {"Input@GRAD": ["dx"]},
                        {"Axis": 1, "Reduce": reduce})
    loss = net.mean(net.op("real", {"X": "dx"})[0])
    with pytest.raises(gradc.GradError, match=r"\(put_along_axis_grad\) reads complex"):
        gradc.gradients(net.program, loss, ["dout"])
