"""The products family's semantics worth pinning: Paddle 3.3.1's values at ties, zeros and defaults (checked
against Paddle by hand), einsum's equation reading, and where gradc's gradient departs from Paddle's."""

import re

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc import Executor, Scope, gradients
from gradc.errors import ProgramError
from gradc.layers import ProgramBuilder
from one_op import kernel_run, run

f32 = np.float32


def grads(op_type, inputs, attrs=None):
    """The gradients of sum(Out) by every input var, in float32."""
    net = ProgramBuilder()
    feed, names = {}, []
    slots = {}
    for slot, value in inputs.items():
        arrays = value if isinstance(value, list) else [value]
        slots[slot] = [net.data(f"{slot.lower()}{i}", list(a.shape), "float32") for i, a in enumerate(arrays)]
        feed.update(zip(slots[slot], (np.asarray(a, f32) for a in arrays)))
        names += slots[slot]
    out = net.op(op_type, slots, attrs, outputs=["Out"])[0]
    loss = net.op("reduce_sum", {"X": out}, {"reduce_all": True})[0]
    grad_names = gradients(net.program, loss, names)
    return Executor().run(net.program, feed, grad_names, Scope())


def a(*values):
    return np.array(values, f32)


def test_dist_inf_norm_ties_each_get_the_whole_gradient_as_in_paddle():
    """Paddle 3.3.1: dist([3, -3, 1], 0, inf) -> X@GRAD [1, -1, 0]; -inf at [1, -1, 3] -> [1, -1, 0]."""
    zero = np.zeros(3, f32)
    assert grads("dist", {"X": a(3, -3, 1), "Y": zero}, {"p": float("inf")})[0].tolist() == [1, -1, 0]
    assert grads("dist", {"X": a(1, -1, 3), "Y": zero}, {"p": float("-inf")})[0].tolist() == [1, -1, 0]
    assert run("dist", {"X": a(1, -1, 3), "Y": zero}, {"p": float("-inf")})["Out"] == 1


def test_dist_p_below_one_gives_a_zero_difference_zero_gradient_where_paddle_gives_nan():
    x, y = a(1, 2, 3, 0.5), a(1, 0, 0, 2.5)
    dx, dy = grads("dist", {"X": x, "Y": y}, {"p": 0.5})
    assert dx[0] == 0 and dy[0] == 0   # Paddle 3.3.1: nan
    np.testing.assert_allclose(dx[1:], [3.2247446, 2.632993, -3.2247446], rtol=1e-5)   # Paddle's values
    np.testing.assert_allclose(dy, -dx)


def test_dist_p0_counts_nonzeros_and_has_no_slope():
    assert run("dist", {"X": a(1, 2, 3, 0.5), "Y": a(1, 0, 0, 2.5)}, {"p": 0.0})["Out"] == 3
    assert not grads("dist", {"X": a(1, 2), "Y": a(0, 2)}, {"p": 0.0})[0].any()


def test_dist_broadcasts_and_sums_the_gradient_back():
    x, y = np.arange(6, dtype=f32).reshape(2, 3), a(1, 1, 1)
    out = run("dist", {"X": x, "Y": y}, {"p": 1.0})["Out"]
    assert out.shape == () and out == np.abs(x - y).sum()
    dx, dy = grads("dist", {"X": x, "Y": y}, {"p": 1.0})
    assert dx.tolist() == [[-1, 0, 1], [1, 1, 1]] and dy.tolist() == [0, -1, -2]


def test_frobenius_norm_of_zeros_has_a_zero_gradient_as_in_paddle():
    assert not grads("frobenius_norm", {"X": np.zeros((2, 2), f32)}, {"dim": [0, 1]})[0].any()


@pytest.mark.parametrize("name", ["in_dtype", "out_dtype"])
def test_frobenius_norm_refuses_a_dtype_its_kernel_would_ignore(name):
    with pytest.raises(ProgramError, match=rf"frobenius_norm {name} must be -1.*got 6"):
        run("frobenius_norm", {"X": np.ones((2, 2), f32)}, {"dim": [0, 1], name: 6})


def test_cross_takes_the_first_dim_of_size_3_by_default():
    x, y = np.eye(3, dtype=f32), np.roll(np.eye(3, dtype=f32), 1, axis=0)
    np.testing.assert_array_equal(run("cross", {"X": x, "Y": y})["Out"], np.cross(x, y, axis=0))
    x2 = np.arange(6, dtype=f32).reshape(2, 3)
    np.testing.assert_array_equal(run("cross", {"X": x2, "Y": x2[::-1]})["Out"], np.cross(x2, x2[::-1]))


def test_cross_by_default_leaves_the_axis_to_run_time_behind_an_unknown_dim():
    """X [-1, 4]: the unknown dim may be the 3 (no dim of size 3 is known); X [-1, 3]: the kernel's axis may be 0."""
    for known, x in ((4, np.arange(12, dtype=f32).reshape(3, 4)), (3, np.arange(9, dtype=f32).reshape(3, 3))):
        net = ProgramBuilder()
        xs, ys = net.data("x", [-1, known]), net.data("y", [-1, known])
        out = net.op("cross", {"X": xs, "Y": ys})[0]
        assert net.block.var(out).shape == [-1, known]
        got = Executor().run(net.program, {"x": x, "y": x[::-1].copy()}, [out], Scope())[0]
        np.testing.assert_array_equal(got, np.cross(x, x[::-1], axis=0))


def test_dot_of_int32_stays_int32_in_the_kernel():
    rows = np.arange(6, dtype=np.int32).reshape(2, 3)
    assert kernel_run("dot", {"X": rows, "Y": rows})["Out"].dtype == np.int32


def test_dot_of_vectors_is_0d_and_of_rows_one_per_row():
    assert run("dot", {"X": a(1, 2, 3), "Y": a(4, 5, 6)})["Out"].shape == ()
    rows = np.arange(6, dtype=f32).reshape(2, 3)
    assert run("dot", {"X": rows, "Y": rows})["Out"].tolist() == [5, 50]


def test_addmm_input_broadcasts_and_its_gradient_is_summed_back_with_beta():
    """Paddle 3.3.1: addmm(Input [2, 1], X [2, 4], Y [4, 3], beta 0.5) -> Input@GRAD [[1.5], [1.5]]."""
    inputs = {"Input": a(1, 2).reshape(2, 1), "X": np.ones((2, 4), f32), "Y": np.ones((4, 3), f32)}
    assert run("addmm", inputs, {"Beta": 0.5, "Alpha": 2.0})["Out"].tolist() == [[8.5] * 3, [9.0] * 3]
    assert grads("addmm", inputs, {"Beta": 0.5, "Alpha": 2.0})[0].tolist() == [[1.5], [1.5]]


def test_multi_dot_with_vectors_at_both_ends_is_0d():
    out = run("multi_dot", {"X": [a(1, 2), np.eye(2, dtype=f32), a(3, 4)]})["Out"]
    assert out.shape == () and out == 11


def test_trace_and_diagonal_past_the_matrix_are_zero_and_empty():
    x = np.arange(24, dtype=f32).reshape(2, 3, 4)
    assert run("trace", {"Input": x}, {"offset": 5, "axis1": 1, "axis2": 2})["Out"].tolist() == [0, 0]
    assert run("diagonal", {"Input": x}, {"offset": 10})["Out"].shape == (4, 0)
    assert not grads("trace", {"Input": x}, {"offset": 5, "axis1": 1, "axis2": 2})[0].any()


def test_diagonal_with_axes_swapped_reads_axis1_as_rows():
    x = np.arange(24, dtype=f32).reshape(2, 3, 4)
    out = run("diagonal", {"Input": x}, {"offset": -1, "axis1": 2, "axis2": 0})["Out"]
    np.testing.assert_array_equal(out, np.diagonal(x, -1, 2, 0))
    assert out.shape == (3, 2)   # Paddle 3.3.1's shape


def test_diag_embed_puts_the_last_dim_on_the_offset_diagonal_of_dim1_dim2():
    x = a(1, 2, 3, 4, 5, 6).reshape(2, 3)
    out = run("diag_embed", {"Input": x}, {"offset": 1, "dim1": 0, "dim2": 2})["Out"]
    assert out.shape == (4, 2, 4)   # Paddle 3.3.1's shape
    expected = np.zeros((4, 2, 4), f32)
    for b in range(2):
        for i in range(3):
            expected[i, b, i + 1] = x[b, i]
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("equation, shapes, out_shape", [
    ("ba", [(2, 3)], (3, 2)),                               # implicit: the labels used once, sorted
    ("...ij,...jk", [(5, 2, 3), (1, 3, 4)], (5, 2, 4)),     # "..." first, broadcast
    ("i...->...", [(2, 3, 4)], (3, 4)),
    ("ij,ij->ij", [(2, 3), (1, 3)], (2, 3)),                # a labelled dim of size 1 broadcasts (as Paddle)
    ("a...a->...", [(3, 2, 3)], (2,)),
    ("i j , j k -> i k", [(2, 3), (3, 4)], (2, 4)),
])
def test_einsum_reads_equations_as_paddle(equation, shapes, out_shape):
    operands = [np.random.default_rng(0).standard_normal(s).astype(f32) for s in shapes]
    out = run("einsum", {"Operands": operands}, {"equation": equation})["Out"]
    assert out.shape == out_shape and out.dtype == f32
    try:
        np.testing.assert_allclose(out, np.einsum(equation.replace(" ", ""), *operands), rtol=1e-5)
    except ValueError:   # numpy does not broadcast a labelled dim of size 1
        np.testing.assert_allclose(out, np.einsum(equation, *np.broadcast_arrays(*operands)), rtol=1e-5)


def test_einsum_gradient_of_a_broadcast_size_1_dim_is_summed():
    x, y = np.ones((2, 3), f32), a(1, 2, 3).reshape(1, 3)
    dx, dy = grads("einsum", {"Operands": [x, y]}, {"equation": "ij,ij->ij"})
    assert dx.tolist() == [[1, 2, 3]] * 2 and dy.tolist() == [[2, 2, 2]]


def test_einsum_gradient_of_a_diagonal_is_on_the_diagonal():
    dx, = grads("einsum", {"Operands": [np.ones((3, 3, 2), f32)]}, {"equation": "iij->j"})
    np.testing.assert_array_equal(dx, np.repeat(np.eye(3, dtype=f32)[..., None], 2, axis=2))


@pytest.mark.parametrize("equation, phrase", [
    ("ij,jk->ik", "has 2 input term(s) for 1 operand(s)"),
    ("i1", "term 'i1' must be letters with at most one '...'"),
    ("ijk", "term 'ijk' does not fit operand 0 of shape [2, 3]"),
    ("...i->i", "the output lacks the '...' of the input terms"),
    ("ij->ii", "each output label must be an input label, once"),
])
def test_einsum_refuses_a_bad_equation_naming_it(equation, phrase):
    net = ProgramBuilder()
    x = net.data("x", [2, 3], "float32")
    with pytest.raises(ProgramError, match=r"\(einsum\): .*" + re.escape(phrase)):
        net.op("einsum", {"Operands": [x]}, {"equation": equation})


def test_einsum_grad_reads_paddle_s_slots_so_paddle_can_run_gradc_s_backward():
    """Paddle's einsum_grad kernel takes the operands' data from InnerCache (XShape holds only their dims there):
    gradc's backward of Paddle's program passes both, as Paddle's own backward does."""
    row = DATA / "layers" / "einsum_matmul"
    program = gradc.load(row / "forward.pb")
    gradc.append_backward(program, "mean_0.tmp_0")
    ours = next(op for op in program.global_block.ops if op.type == "einsum_grad")
    theirs = next(op for op in gradc.load(row / "backward.pb").global_block.ops if op.type == "einsum_grad")
    assert ours.inputs == theirs.inputs and ours.outputs == theirs.outputs


def test_an_offset_past_the_matrix_is_its_empty_diagonal():
    """An offset beyond a C int (a hostile attribute) is the empty diagonal, as any offset past the matrix is:
    numpy's trace and diagonal refused it with an OverflowError."""
    x = np.arange(9, dtype=np.float32).reshape(3, 3)
    for offset in (3, 2**40, -(2**40)):
        assert run("trace", {"Input": x}, {"offset": offset})["Out"] == 0
        assert run("diagonal", {"Input": x}, {"offset": offset})["Out"].shape == (0,)


def test_a_float64_einsum_writes_the_float32_cache_paddle_declares():
    """Paddle declares einsum's InnerCache float32 [] whatever its operands (PaddleScience's SFNO: a float64 einsum of
    spherical-harmonic weights in a float32 program); gradc leaves the cache empty, in that dtype."""
    net = ProgramBuilder()
    a, b = net.data("a", [2, 3], "float64"), net.data("b", [3], "float64")
    caches = [net.program.global_block.create_var(f"cache{i}", [], gradc.VarType.FP32).name for i in range(2)]
    shapes = [net.program.global_block.create_var(f"shape{i}", None, gradc.VarType.FP64).name for i in range(2)]
    out = net.program.global_block.create_var("out", [2, 3], gradc.VarType.FP64).name
    net.program.global_block.append_op("einsum", {"Operands": [a, b]},
                                       {"Out": [out], "InnerCache": caches, "XShape": shapes}, {"equation": "mk,k->mk"})
    x, y = np.arange(6.0).reshape(2, 3), np.array([1.0, 2.0, 3.0])
    result, cache = Executor().run(net.program, {"a": x, "b": y}, [out, caches[0]], Scope())
    np.testing.assert_array_equal(result, x * y)
    assert result.dtype == np.float64 and cache.dtype == np.float32 and cache.size == 0
