"""Semantics of the extras ops pinned to Paddle 3.3.1's values (observed in dynamic mode): bitwise shifts past
the width, histogram's ranges and bins, unique_consecutive's runs, logspace's casts, renorm's scale and
subgradient, and the draws of bernoulli, multinomial and poisson."""

import numpy as np
import pytest

from gradc import Executor, Scope, append_backward
from gradc.executor import randomness
from gradc.ir import VarType
from gradc.layers import ProgramBuilder
from one_op import grad_op_of, run

i32 = np.int32


def test_shifts_past_the_width_or_negative_give_zero_or_the_sign():
    amounts = np.array([40, 1, -1], i32)
    values = np.array([-8, -8, 8], i32)
    assert run("bitwise_left_shift", {"x": np.array([1, -8, 3], i32), "y": amounts})["out"].tolist() == [0, -16, 0]
    logical = run("bitwise_right_shift", {"x": values, "y": amounts}, {"is_arithmetic": False})["out"]
    assert logical.tolist() == [0, 2147483644, 0]   # zeros move in from the left, even for a negative value
    arithmetic = run("bitwise_right_shift", {"x": values, "y": amounts}, {"is_arithmetic": True})["out"]
    assert arithmetic.tolist() == [-1, -4, 0]       # past the width: every bit is the sign
    unsigned = run("bitwise_right_shift", {"x": np.array([200, 7], np.uint8), "y": np.array([9, 1], np.uint8)})
    assert unsigned["out"].tolist() == [0, 3] and unsigned["out"].dtype == np.uint8


def test_bitwise_ops_broadcast_and_take_bools():
    out = run("bitwise_xor", {"X": np.array([[1], [6]], np.int64), "Y": np.array([3, 5, 4], np.int64)})["Out"]
    assert out.tolist() == [[2, 4, 5], [5, 3, 2]]
    flags = {"X": np.array([True, False, True]), "Y": np.array([True, True, False])}
    assert run("bitwise_and", flags)["Out"].tolist() == [True, False, False]
    assert run("bitwise_or", flags)["Out"].tolist() == [True, True, True]


def test_bitwise_not_of_bools_and_integers():
    assert run("bitwise_not", {"X": np.array([True, False])})["Out"].tolist() == [False, True]
    assert run("bitwise_not", {"X": np.array([1, -2, 0])})["Out"].tolist() == [-2, 1, -1]
    assert run("bitwise_not", {"X": np.array([1, 2], np.uint8)})["Out"].tolist() == [254, 253]


X8 = np.array([[-3.0, 0.5, 1.0, 2.0], [2.0, 2.0, 9.0, -1.0]], np.float32)


@pytest.mark.parametrize("attrs, expected", [
    ({"bins": 4, "min": -2.0, "max": 2.0}, [0, 1, 1, 4]),     # outside [min, max] is not counted; max: last bin
    ({"bins": 4}, [2, 5, 0, 1]),                              # min == max: X's own range [-3, 9]
    ({"bins": 4, "min": 1.0, "max": 1.0}, [2, 5, 0, 1]),      # any point range is X's own range
])
def test_histogram_counts(attrs, expected):
    out = run("histogram", {"X": X8}, attrs)["Out"]
    assert out.dtype == np.int64 and out.tolist() == expected


def test_histogram_of_a_point_widens_the_range_and_skips_nan():
    assert run("histogram", {"X": np.array([1.0, 1.0], np.float32)}, {"bins": 4})["Out"].tolist() == [0, 0, 2, 0]
    nan = np.array([1.0, 2.0, 3.0, np.nan], np.float32)
    assert run("histogram", {"X": nan}, {"bins": 3, "min": 0.0, "max": 4.0})["Out"].tolist() == [1, 1, 1]


def test_histogram_density_divides_by_what_falls_in_range():
    x = np.array([0.0, 0.2, 1.0, 7.0], np.float32)
    out = run("histogram", {"X": x}, {"bins": 3, "min": 0.0, "max": 1.0, "density": True})["Out"]
    assert out.dtype == np.float32 and np.allclose(out, [2.0, 0.0, 1.0])
    empty = run("histogram", {"X": np.array([7.0], np.float32)}, {"bins": 3, "min": 0.0, "max": 1.0, "density": True})
    assert np.isnan(empty["Out"]).all()


def test_histogram_of_integers_bins_with_integer_division():
    out = run("histogram", {"X": np.array([1, 2, 3], np.int64)}, {"bins": 3, "density": True})["Out"]
    assert np.allclose(out, [0.5, 0.5, 0.5])
    assert run("histogram", {"X": np.array([0, 1, 5, 9], np.int32)}, {"bins": 3, "min": 0.0, "max": 9.0})[
        "Out"].tolist() == [2, 1, 1]


UNIQUE = {"return_inverse": True, "return_counts": True, "dtype": 3}


def test_unique_consecutive_keeps_each_run_once():
    out = run("unique_consecutive", {"X": np.array([1, 1, 2, 2, 3, 1, 1, 2])}, UNIQUE)
    assert out["Out"].tolist() == [1, 2, 3, 1, 2]
    assert out["Index"].tolist() == [0, 0, 1, 1, 2, 3, 3, 4] and out["Counts"].tolist() == [2, 2, 1, 2, 1]
    nan = run("unique_consecutive", {"X": np.array([1.0, np.nan, np.nan, 1.0], np.float32)}, UNIQUE)
    assert nan["Counts"].tolist() == [1, 1, 1, 1]   # NaN equals nothing, itself included


def test_unique_consecutive_along_an_axis_compares_slices():
    x = np.array([[2, 1, 3], [2, 1, 3], [3, 1, 3]])
    rows = run("unique_consecutive", {"X": x}, {**UNIQUE, "axis": [0]})
    assert rows["Out"].tolist() == [[2, 1, 3], [3, 1, 3]] and rows["Index"].tolist() == [0, 0, 1]
    columns = run("unique_consecutive", {"X": np.array([[2, 2, 3], [2, 2, 3]])}, {**UNIQUE, "axis": [1], "dtype": 2})
    assert columns["Out"].tolist() == [[2, 3], [2, 3]] and columns["Counts"].tolist() == [2, 1]
    assert columns["Counts"].dtype == np.int32


def _logspace(start, stop, num, base, dtype):
    scalar = {"Start": np.array([start], np.float32), "Stop": np.array([stop], np.float32),
              "Num": np.array([num], i32), "Base": np.array([base], np.float32)}
    return run("logspace", scalar, {"dtype": dtype})["Out"]


def test_logspace_matches_paddle():
    assert np.array_equal(_logspace(0, 1, 4, 2.0, 5), np.float32([1.0, 1.25992107, 1.58740103, 2.0]))
    assert _logspace(0, 3, 4, 10.0, 2).tolist() == [1, 10, 100, 1000]
    assert _logspace(0.5, 1, 3, 2.0, 3).tolist() == [1, 1, 2]          # Start cast to int64 first: 0
    assert _logspace(0, 2, 3, 2.5, 3).tolist() == [1, 2, 4]            # and Base: 2
    assert _logspace(2, 0, 1, 2.0, 5).tolist() == [4.0]
    negative = _logspace(0, 1, 4, -2.0, 5)
    assert negative[0] == 1 and negative[3] == -2 and np.isnan(negative[1:3]).all()


def test_renorm_scales_only_slices_over_max_norm():
    x = np.array([[0.0, 0.0], [3.0, 4.0], [0.3, 0.4]], np.float32)
    out = run("renorm", {"X": x}, {"p": 2.0, "axis": 0, "max_norm": 1.0})["Out"]
    assert out.dtype == np.float32 and np.allclose(out, [[0, 0], [0.6, 0.8], [0.3, 0.4]])
    # Paddle's own example: slices along axis 2 with 1-norms 10.1, 14, 10 scaled to 2.05
    x = np.array([[[2.0, 2.0, -2.0], [3.0, 0.3, 3.0]], [[2.0, -8.0, 2.0], [3.1, 3.7, 3.0]]], np.float32)
    out = run("renorm", {"X": x}, {"p": 1.0, "axis": 2, "max_norm": 2.05})["Out"]
    assert np.allclose(out, [[[0.40594056, 0.29285714, -0.41], [0.60891086, 0.04392857, 0.61500001]],
                             [[0.40594056, -1.17142856, 0.41], [0.62920785, 0.54178572, 0.61500001]]])


def test_renorm_grad_at_zero_takes_paddles_subgradient():
    """p = 1 at x = 0: Paddle's renorm_grad counts the sign of 0 as +1. With X = [0, 2, -1] (1-norm 3 over
    max_norm 1) and dOut = 1: dX = 1/3 - (1/9) sign(x) sum(x), sum(x) = 1."""
    grad = grad_op_of("renorm", {"X": np.array([[0.0, 2.0, -1.0]])}, {"p": 1.0, "axis": 0, "max_norm": 1.0})
    assert grad.type == "renorm_grad" and set(grad.inputs) == {"X", "Out@GRAD"}
    net = ProgramBuilder()
    x = net.data("x", [1, 3], "float32")
    net.block.var(x).is_parameter = True
    out = net.op("renorm", {"X": x}, {"p": 1.0, "axis": 0, "max_norm": 1.0})[0]
    append_backward(net.program, net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0])
    (dx,) = Executor().run(net.program, {x: np.array([[0.0, 2.0, -1.0]], np.float32)}, [f"{x}@GRAD"], Scope())
    assert dx.dtype == np.float32 and np.allclose(dx, [[1 / 3 - 1 / 9, 1 / 3 - 1 / 9, 1 / 3 + 1 / 9]])


def test_bernoulli_draws_zeros_and_ones_with_probability_x():
    randomness.seed(18)
    p = np.array([0.0, 1.0, 0.25], np.float32).repeat(4000).reshape(3, 4000)
    out = run("bernoulli", {"X": p})["Out"]
    assert out.dtype == np.float32 and set(np.unique(out)) <= {0.0, 1.0}
    assert out[0].sum() == 0 and out[1].sum() == 4000 and abs(out[2].mean() - 0.25) < 0.03


def test_multinomial_draws_categories_by_weight():
    randomness.seed(18)
    weights = np.array([[0.0, 3.0, 1.0], [1.0, 0.0, 0.0]], np.float32)   # weights need not sum to 1
    out = run("multinomial", {"X": weights}, {"num_samples": 4000, "replacement": True})["Out"]
    assert out.dtype == np.int64 and out.shape == (2, 4000)
    assert (out[0] != 0).all() and abs((out[0] == 1).mean() - 0.75) < 0.03 and (out[1] == 0).all()
    distinct = run("multinomial", {"X": np.ones(5, np.float32)}, {"num_samples": 5})["Out"]
    assert sorted(distinct.tolist()) == [0, 1, 2, 3, 4]   # without replacement: each category once


def test_multinomial_of_weights_declared_without_a_shape():
    """Inference leaves Out's shape unknown (it took len() of None); the run draws from the values."""
    net = ProgramBuilder()
    net.block.create_var("weights", None, VarType.FP32)
    out = net.op("multinomial", {"X": "weights"}, {"num_samples": 3})[0]
    assert net.block.var(out).shape is None
    drawn = Executor().run(net.program, {"weights": np.ones((2, 3), np.float32)}, [out], Scope())[0]
    assert drawn.shape == (2, 3) and all(sorted(row) == [0, 1, 2] for row in drawn.tolist())


def test_poisson_draws_counts_with_mean_x_and_a_zero_gradient():
    randomness.seed(18)
    rates = np.array([0.0, 3.0], np.float32).repeat(4000).reshape(2, 4000)
    out = run("poisson", {"X": rates})["Out"]
    assert out.dtype == np.float32 and (out[0] == 0).all() and abs(out[1].mean() - 3.0) < 0.1
    grad = grad_op_of("poisson", {"X": np.full((2, 3), 2.0)})
    assert grad.type == "poisson_grad" and set(grad.inputs) == {"Out@GRAD"}


def test_seeded_draws_repeat():
    p = np.full((3, 5), 0.5, np.float32)
    randomness.seed([1, 2])
    first = run("bernoulli", {"X": p})["Out"]
    randomness.seed([1, 2])
    assert np.array_equal(first, run("bernoulli", {"X": p})["Out"])
