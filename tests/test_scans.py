"""Edge values of the scans ops (gradc.ops.scans) pinned to Paddle 3.3.1's outputs and gradients: ties, NaNs,
infinities, index dtypes, the median rules of both modes. Where gradc chooses differently (docs/ops-scans.md),
the test says so."""

import numpy as np
import pytest

from gradc import Executor, Scope, append_backward
from gradc.layers import ProgramBuilder

nan, inf = np.nan, np.inf
LOWEST32 = np.finfo(np.float32).min


def run(op_type, x, attrs=None, dout=None, x_slot="X", out_slot="Out", grad=True):
    """The op's outputs on x (a list: float32) by slot, and with ``grad`` "grad": x's gradient for the loss
    sum(out * dout) (dout: ones)."""
    x = x if isinstance(x, np.ndarray) else np.array(x, np.float32)
    net = ProgramBuilder()
    name = net.data("x", list(x.shape), x.dtype.name, stop_gradient=False)
    net.op(op_type, {x_slot: name}, attrs or {})
    op = net.block.ops[-1]
    outputs = {slot: args[0] for slot, args in op.outputs.items()}
    fetch = list(outputs.values())
    feed = {"x": x}
    if grad:
        out_var = net.block.var(outputs[out_slot])
        weights = net.data("dout", list(out_var.shape), x.dtype.name)
        feed["dout"] = np.ones(out_var.shape, x.dtype) if dout is None else np.asarray(dout, x.dtype)
        product = net.op("elementwise_mul", {"X": outputs[out_slot], "Y": weights})[0]
        append_backward(net.program, net.op("reduce_sum", {"X": product}, {"reduce_all": True})[0])
        fetch.append("x@GRAD")
    values = Executor().run(net.program, feed, fetch, Scope())
    return dict(zip([*outputs, "grad"], values))


def test_cummax_moves_the_index_to_the_latest_tie_and_each_nan():
    got = run("cummax", [1, 3, 3, 2, nan, 5, nan, 0], {"axis": 0}, x_slot="x", out_slot="out")
    np.testing.assert_array_equal(got["out"], [1, 3, 3, 3, nan, nan, nan, nan])
    np.testing.assert_array_equal(got["indices"], [0, 1, 2, 2, 4, 4, 6, 6])
    assert got["indices"].dtype == np.int64
    np.testing.assert_array_equal(got["grad"], [1, 1, 2, 0, 2, 0, 2, 0])   # dOut added up at each index


def test_cummin_with_int32_indices():
    got = run("cummin", [[3, 1, 1, 2, nan, 0]], {"axis": 1, "dtype": 2}, x_slot="x", out_slot="out")
    np.testing.assert_array_equal(got["out"], [[3, 1, 1, 1, nan, nan]])
    np.testing.assert_array_equal(got["indices"], [[0, 1, 2, 2, 4, 4]])
    assert got["indices"].dtype == np.int32


@pytest.mark.parametrize("attrs, expected", [
    ({}, [LOWEST32, LOWEST32, 1, inf, inf]),
    ({"exclusive": True}, [LOWEST32, LOWEST32, LOWEST32, 1, inf]),
    ({"reverse": True}, [inf, inf, inf, inf, 2]),
])
def test_logcumsumexp_empty_sums_are_the_lowest_float(attrs, expected):
    got = run("logcumsumexp", [-inf, -inf, 1, inf, 2], attrs, grad=False)
    np.testing.assert_array_equal(got["Out"], np.array(expected, np.float32))


def test_logcumsumexp_float64_and_flatten():
    x = np.array([[0.0, 1.0, 2.0], [-1e30, 5.0, 100.0]])
    got = run("logcumsumexp", x, {"flatten": True, "exclusive": True}, grad=False)
    assert got["Out"].dtype == np.float64 and got["Out"].shape == (6,)
    np.testing.assert_allclose(got["Out"], [np.finfo(np.float64).min, 0, 1.3132617, 2.4076059, 2.4076059,
                                            5.0721750], rtol=1e-6)


def test_logcumsumexp_propagates_nan():
    """gradc's choice: Paddle 3.3.1 gives [1, 1.693, 2.551] (it reads the NaN as a copy of the running value)."""
    np.testing.assert_array_equal(run("logcumsumexp", [1, nan, 2], grad=False)["Out"], [1, nan, nan])


def test_logcumsumexp_grad_is_exact_where_large_and_small_terms_mix():
    """x = [1000, 1000, -1000, 3], exclusive: dx_j = sum over i > j of dout_i exp(x_j - out_i), exactly (float64
    below); Paddle's float32 kernel gives 0.5941146 for dx_0."""
    x, dout = np.array([1000, 1000, -1000, 3], np.float32), np.array([0.7, 0.3, -0.4, 0.9], np.float32)
    got = run("logcumsumexp", x, {"exclusive": True}, dout)
    out = np.array([-inf] + [np.logaddexp.reduce(x[:i].astype(np.float64)) for i in range(1, 4)])
    exact = [sum(dout[i] * np.exp(x[j] - out[i]) for i in range(j + 1, 4)) for j in range(4)]
    np.testing.assert_allclose(got["grad"], exact, rtol=1e-6)


@pytest.mark.parametrize("row, value, index", [
    ([1, 2, 2, 3, 3], 2, 2),          # equally frequent: the smallest value, its last occurrence
    ([3, 3, 2, 2, 1], 2, 3),
    ([5, 1, 5, 1, 2], 1, 3),
    ([nan, 1, nan, 1], 1, 3),         # each NaN is a value of its own
    ([nan, nan], nan, 0),
    ([2, nan, nan, 2, 1, 1], 1, 5),
])
def test_mode_rule(row, value, index):
    got = run("mode", row, grad=False)
    np.testing.assert_array_equal(got["Out"], value)
    assert got["Indices"] == index


def test_mode_grad_goes_to_the_index():
    got = run("mode", [[1, 2, 2], [3, 3, 1]], {"axis": 1, "keepdim": True}, dout=[[2], [3]])
    np.testing.assert_array_equal(got["Indices"], [[2], [1]])
    np.testing.assert_array_equal(got["grad"], [[0, 0, 2], [0, 3, 0]])


def median(op, x, axis, mode, keepdim=False, dout=None):
    slots = {"x_slot": "x", "out_slot": "out"} if op == "median" else {}
    got = run(op, x, {"axis": axis, "keepdim": keepdim, "mode": mode}, dout, **slots)
    return got.get("out", got.get("Out")), got.get("medians", got.get("MedianIndex")), got.get("grad")


@pytest.mark.parametrize("op", ["median", "nanmedian"])
def test_median_modes_without_ties(op):
    out, index, grad = median(op, [3, 1, 2, 5], [], "avg")
    assert out == 2.5 and index.tolist() == [2, 0] and grad.tolist() == [0.5, 0, 0.5, 0]
    out, index, grad = median(op, [3, 1, 2, 5], [], "min")
    assert out == 2 and index == 2 and grad.tolist() == [0, 0, 1, 0]


@pytest.mark.parametrize("op", ["median", "nanmedian"])
@pytest.mark.parametrize("mode", ["avg", "min"])
def test_median_shares_the_gradient_among_ties(op, mode):
    """Paddle 3.3.1: except in mode min over one axis, dOut is shared by every element equal to Out."""
    out, _, grad = median(op, [2, 2, 1, 2], [], mode)
    assert out == 2
    np.testing.assert_allclose(grad, [1 / 3, 1 / 3, 0, 1 / 3], rtol=1e-6)
    _, _, grad = median(op, [[7, 7, 7, 1]], [1], "avg")
    np.testing.assert_allclose(grad, [[1 / 3, 1 / 3, 1 / 3, 0]], rtol=1e-6)


def test_median_min_over_one_axis_gives_the_gradient_to_the_index():
    """One of the tied 2s gets it all: the one Paddle's nth_element puts in the middle."""
    out, index, grad = median("median", [[2, 1, 2, 5]], [1], "min")
    assert out.tolist() == [2] and index.tolist() == [2] and grad.tolist() == [[0, 0, 1, 0]]


@pytest.mark.parametrize("op, x, index, grad", [
    ("median", [1, 2, 2, 3, 3, 4], [1, 3], [0, 0.5, 0, 0.5, 0, 0]),     # no element equals 2.5: half each
    ("nanmedian", [1, 2, 2, 3, 3, 4], [2, 3], [0, 0, 0.5, 0.5, 0, 0]),  # its top_k takes more: other ties
    ("median", [-0.0, 0.0, 1, 1], [0, 3], [0.5, 0, 0, 0.5]),
    ("median", [2, 2, 1, 2], [3, 0], [1 / 3, 1 / 3, 0, 1 / 3]),
])
def test_median_indices_at_ties_are_paddles(op, x, index, grad):
    _, got_index, got_grad = median(op, x, [], "avg")
    assert got_index.tolist() == index
    np.testing.assert_allclose(got_grad, grad, rtol=1e-6)


def test_mode_of_a_long_row_names_the_occurrence_paddles_sort_puts_last():
    row = [4, 1, 4, 2, 1, 4, 7, 1, 9, 9, 8, 3, 3, 1, 2, 4, 5, 9, 9, 9, 9, 4, 4, 4, 4, 4, 1, 4, 4]
    got = run("mode", row, grad=False)
    assert got["Out"] == 4 and got["Indices"] == 0   # not 28, the last occurrence
    assert run("mode", np.full((2, 20), nan, np.float32), {"axis": 1}, grad=False)["Indices"].tolist() == [10, 10]


def test_median_of_a_row_with_nan_is_nan_at_its_first_nan():
    out, index, grad = median("median", [[1, nan, 3, 4], [nan, 1, nan, 0]], [1], "avg")
    np.testing.assert_array_equal(out, [nan, nan])
    np.testing.assert_array_equal(index, [[1, 1], [0, 0]])   # Paddle 3.3.1 writes one slot, of another row
    np.testing.assert_array_equal(grad, [[0, 1, 0, 0], [0.5, 0, 0.5, 0]])   # shared among the NaNs
    out, index, _ = median("median", [[1, nan, 3, 4]], [1], "min")
    assert np.isnan(out).all() and index.tolist() == [1]


def test_nanmedian_skips_nans():
    x = [[nan, nan, nan], [1, 2, nan], [nan, 5, 4]]
    out, index, grad = median("nanmedian", x, [1], "avg")
    np.testing.assert_array_equal(out, [nan, 1.5, 4.5])
    np.testing.assert_array_equal(index, [[-1, -1], [0, 1], [2, 1]])
    np.testing.assert_allclose(grad, [[1 / 3, 1 / 3, 1 / 3], [0.5, 0.5, 0], [0, 0.5, 0.5]], rtol=1e-6)
    out, index, grad = median("nanmedian", x, [1], "min")
    np.testing.assert_array_equal(index, [-1, 0, 2])
    np.testing.assert_array_equal(grad, [[0, 0, 0], [1, 0, 0], [0, 0, 1]])


def test_nanmedian_of_nans_only_sorts_the_rows_as_they_are():
    out, index, _ = median("nanmedian", [[nan, nan], [nan, nan]], [1], "avg")
    assert np.isnan(out).all() and index.tolist() == [[0, 1], [0, 1]]
    assert median("nanmedian", [[nan, nan], [nan, nan]], [1], "min")[1].tolist() == [0, 0]


def test_median_folds_several_axes_and_keeps_dims():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, :, ::-1] % 5
    out, index, _ = median("median", x, [0, 2], "avg", keepdim=True)
    np.testing.assert_array_equal(out, np.median(x, axis=(0, 2), keepdims=True))
    assert index.shape == (1, 3, 1, 2)
    np.testing.assert_array_equal(x.transpose(1, 0, 2).reshape(3, 8)[np.arange(3)[:, None], index.reshape(3, 2)]
                                  .mean(axis=1), out.reshape(3))


def test_median_of_integers_truncates_toward_zero():
    got = run("median", np.array([3, -4, 1, -6], np.int64), {"axis": [0], "mode": "avg"}, x_slot="x",
              out_slot="out", grad=False)
    assert got["out"].tolist() == [-1] and got["out"].dtype == np.int64
