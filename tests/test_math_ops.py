"""Activation and math ops beyond the per-op gradchecks: which forward values grad ops read,
Paddle's legacy attributes, composite makers, shapes, and a small composed program."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradc import Executor, Program, Scope, VarType, append_backward, registry
from gradc.executor.kernels.activation import erf
from gradc.gradcheck import check_op, check_program
from gradc.ops.infer import InferContext

F64 = VarType.FP64


def one_op(op_type, shapes, attrs=None, outputs=("Out",), dtype=F64):
    """A program with one op reading vars named after their slots, and a scalar loss of its output."""
    program = Program()
    block = program.global_block
    for slot, shape in shapes.items():
        block.create_var(slot.lower(), shape, VarType.BOOL if slot == "Condition" else dtype)
    for slot in outputs:
        block.create_var(slot.lower(), None, dtype)
    block.append_op(op_type, {slot: [slot.lower()] for slot in shapes}, {s: [s.lower()] for s in outputs},
                    dict(attrs or {}))
    return program


def infer(op_type, shapes, attrs=None):
    program = one_op(op_type, shapes, attrs)
    op = program.global_block.ops[0]
    return registry.get(op_type).infer(InferContext(op, program.global_block))["Out"][0]


def grad_ops(op_type, shapes, attrs=None):
    """The backward ops gradc appends for mean(op(inputs)) with every float input differentiable."""
    program = one_op(op_type, shapes, attrs)
    block = program.global_block
    block.create_var("loss", [], F64)
    block.append_op("mean", {"X": ["out"]}, {"Out": ["loss"]})
    for slot in shapes:
        if slot != "Condition":
            block.var(slot.lower()).is_parameter = True
    append_backward(program, "loss")
    return [op for op in block.ops[2:] if op.type not in ("fill_constant", "mean_grad")]


@pytest.mark.parametrize("op_type, reads", [
    ("relu6", ["Out"]), ("hard_sigmoid", ["Out"]), ("log_softmax", ["Out"]), ("exp", ["Out"]),
    ("sqrt", ["Out"]), ("rsqrt", ["Out"]), ("gelu", ["X"]), ("leaky_relu", ["X"]), ("softplus", ["X"]),
    ("swish", ["X"]), ("hard_swish", ["X"]), ("log", ["X"]), ("square", ["X"]), ("abs", ["X"]),
    ("elu", ["X", "Out"]), ("silu", ["X", "Out"]),
])
def test_grad_ops_read_the_forward_values_paddle_reads(op_type, reads):
    (grad,) = grad_ops(op_type, {"X": [3, 4]})
    assert grad.type == op_type + "_grad"
    assert sorted(grad.inputs) == sorted(reads + ["Out@GRAD"])
    assert grad.outputs == {"X@GRAD": ["x@GRAD"]}


def test_legacy_attribute_defaults():
    """FLOAT defaults are held as float32, as Paddle's kernels read them (0.2 is 0.20000000298023224)."""
    def f32(value):
        return float(np.float32(value))

    assert registry.get("hard_sigmoid").attrs == {"slope": f32(0.2), "offset": 0.5}
    assert registry.get("relu6").attrs == {"threshold": 6.0} and registry.get("swish").attrs == {"beta": 1.0}
    assert registry.get("leaky_relu").attrs == {"alpha": f32(0.02)}
    assert registry.get("gelu").attrs == {"approximate": False}
    assert registry.get("matmul").attrs == {"transpose_X": False, "transpose_Y": False, "alpha": 1.0, "head_number": 1}
    assert registry.get("p_norm").attrs == {"porder": 2.0, "axis": -1, "epsilon": f32(1e-12), "keepdim": False,
                                            "asvector": False}


def test_sign_grad_is_a_zero_scale():
    (grad,) = grad_ops("sign", {"X": [3]})
    assert (grad.type, grad.inputs, grad.outputs) == ("scale", {"X": ["out@GRAD"]}, {"Out": ["x@GRAD"]})
    assert grad.attrs["scale"] == 0.0


def test_floordiv_has_no_grad_mod_has_paddles_remainder_grad_and_both_follow_python():
    assert not registry.get("elementwise_floordiv").differentiable
    (grad,) = grad_ops("elementwise_mod", {"X": [4], "Y": [4]})
    assert (grad.type, sorted(grad.inputs)) == ("remainder_grad", ["Out@GRAD", "X", "Y"])
    x, y = np.array([7.0, -7.0, 7.5, -7.5]), np.array([3.0, 3.0, -2.0, -2.0])
    for op_type, expected in (("elementwise_mod", x % y), ("elementwise_floordiv", x // y)):
        (out,) = Executor().run(one_op(op_type, {"X": [4], "Y": [4]}), {"x": x, "y": y}, ["out"], Scope())
        np.testing.assert_array_equal(out, expected)


def test_cumsum_grad_is_paddles_cumsum_grad_and_keeps_x_shape_with_flatten():
    """Paddle 3.3.1 emits cumsum_grad reading X and Out@GRAD (see tests/data/paddle/tensor_ops)."""
    (grad,) = grad_ops("cumsum", {"X": [2, 3]}, {"axis": 1, "reverse": False})
    assert (grad.type, grad.inputs) == ("cumsum_grad", {"X": ["x"], "Out@GRAD": ["out@GRAD"]})
    x = np.arange(6.0).reshape(2, 3)
    grads = check_op("cumsum", {"X": x}, {"flatten": True, "exclusive": True})
    assert grads["X0"].shape == (2, 3)


def test_max_min_pow_grads_honour_axis_where_paddle_does_not():
    """Y [3] lines up with X [2, 3, 4] at axis 1 (Paddle's grads align it with the trailing dim)."""
    x = np.arange(24.0).reshape(2, 3, 4) / 10 - 1.15
    y = np.array([-0.52, 0.13, 0.71])
    grads = check_op("elementwise_max", {"X": x, "Y": y}, {"axis": 1})
    w = np.random.default_rng(0).standard_normal((2, 3, 4))  # check_op's weights for seed 0
    takes_y = x <= y[None, :, None]
    np.testing.assert_allclose(grads["Y0"], (w * takes_y).sum(axis=(0, 2)))
    np.testing.assert_allclose(grads["X0"], w * ~takes_y)
    check_op("elementwise_pow", {"X": x + 2, "Y": y}, {"axis": 1})


def test_reduce_prod_grad_is_exact_at_zeros():
    x = np.array([[0.0, 2.0, 3.0], [0.0, 0.0, 5.0]])
    grads = check_op("reduce_prod", {"X": x}, {"dim": [1]})
    w = np.random.default_rng(0).standard_normal(2)
    np.testing.assert_allclose(grads["X0"], [[6 * w[0], 0, 0], [0, 0, 0]])


@pytest.mark.parametrize("op_type, shapes, attrs, out", [
    ("matmul", {"X": [4], "Y": [4]}, {}, [1]),
    ("matmul", {"X": [2, 4, 3], "Y": [3, 5]}, {"transpose_X": False}, [2, 4, 5]),
    ("matmul", {"X": [3, 2], "Y": [5, 3]}, {"transpose_X": True, "transpose_Y": True}, [2, 5]),
    ("matmul", {"X": [4], "Y": [2, 4, 5]}, {}, [2, 5]),
    ("bmm", {"X": [-1, 3, 4], "Y": [6, 4, 5]}, {}, [6, 3, 5]),
    ("p_norm", {"X": [2, 3]}, {"asvector": True}, []),
    ("p_norm", {"X": [2, 3]}, {"asvector": True, "keepdim": True}, [1, 1]),
    ("p_norm", {"X": [2, 3, 4]}, {"axis": 1}, [2, 4]),
    ("p_norm", {"X": [2, 3, 4]}, {"axis": -1, "keepdim": True}, [2, 3, 1]),
    ("reduce_max", {"X": [2, 3, 4]}, {"dim": [0, 2], "keep_dim": True}, [1, 3, 1]),
    ("reduce_prod", {"X": [2, 3]}, {"reduce_all": True}, []),
    ("cumsum", {"X": [2, 3]}, {"flatten": True}, [6]),
    ("where", {"Condition": [3, 1], "X": [3, 4], "Y": [4]}, {}, [3, 4]),
    ("elementwise_max", {"X": [2, 3, 4], "Y": [3]}, {"axis": 1}, [2, 3, 4]),
])
def test_shape_inference(op_type, shapes, attrs, out):
    assert infer(op_type, shapes, attrs) == out


def test_shape_inference_names_the_op_on_bad_input():
    with pytest.raises(Exception, match="bmm"):
        infer("bmm", {"X": [2, 3, 4], "Y": [2, 5, 6]})
    with pytest.raises(Exception, match="contraction"):
        infer("matmul", {"X": [3, 4], "Y": [5, 6]})


def test_kernels_keep_float32():
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    ops = {"gelu": {}, "elu": {"alpha": 1.0}, "softplus": {}, "hard_swish": {}, "log_softmax": {"axis": -1},
           "exp": {}, "pow": {"factor": 2.0}, "p_norm": {}, "cumsum": {}, "reduce_prod": {"dim": [1]}}
    from gradc.executor import KERNELS

    class Ctx:
        def __init__(self, attrs):
            self.attrs = {**registry.get(op).attrs, **attrs}

        def x(self, slot):
            return x if slot == "X" else None

        def has(self, slot):
            return slot == "X"

        def attr(self, name):
            return self.attrs[name]

    for op, attrs in ops.items():
        assert KERNELS[op](Ctx(attrs))["Out"].dtype == np.float32, op


def test_erf_matches_math_erf():
    xs = np.linspace(-7, 7, 2801)
    np.testing.assert_allclose(erf(xs), [math.erf(v) for v in xs], rtol=0, atol=5e-15)
    assert erf(np.float32([0.5])).dtype == np.float32


def test_square_error_cost_composition_differentiates_correctly():
    """mean((x - label)^2), the square_error_cost pattern, checked end to end in float64."""
    program = Program()
    block = program.global_block
    block.create_var("x", [3, 4], F64, is_parameter=True, persistable=True)
    block.create_var("label", [3, 4], F64)
    for name, shape in (("diff", [3, 4]), ("sq", [3, 4]), ("loss", [])):
        block.create_var(name, shape, F64)
    block.append_op("elementwise_sub", {"X": ["x"], "Y": ["label"]}, {"Out": ["diff"]}, {"axis": -1})
    block.append_op("square", {"X": ["diff"]}, {"Out": ["sq"]})
    block.append_op("reduce_mean", {"X": ["sq"]}, {"Out": ["loss"]}, {"dim": [], "reduce_all": True})
    rng = np.random.default_rng(3)
    x, label = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    grads = check_program(program, {"label": label}, wrt=["x", "label"], loss="loss", params={"x": x})
    np.testing.assert_allclose(grads["x"], 2 * (x - label) / 12)
    np.testing.assert_allclose(grads["label"], -2 * (x - label) / 12)

    train = program.clone()
    append_backward(train, "loss")
    types = [op.type for op in train.global_block.ops[3:]]
    assert types == ["fill_constant", "reduce_mean_grad", "square_grad", "elementwise_sub_grad"]


def _grid(shape, offset, seed):
    """Distinct values on a 0.1 grid shifted by ``offset``: two grids with offsets 0 and 0.05 never tie."""
    n = int(np.prod(shape))
    return np.random.default_rng(seed).permutation((np.arange(n) - n // 2) * 0.1 + offset).reshape(shape)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.data(),
       st.sampled_from(["elementwise_max", "elementwise_min", "elementwise_pow"]), st.integers(0, 2**16))
def test_binary_grads_honour_any_axis(x_shape, data, op_type, seed):
    """Y is any run of X's dims (some of them 1) placed at any axis; grads are summed back to Y."""
    axis = data.draw(st.integers(0, len(x_shape) - 1))
    length = data.draw(st.integers(1, len(x_shape) - axis))
    y_shape = [d if data.draw(st.booleans()) else 1 for d in x_shape[axis:axis + length]]
    x, y = _grid(x_shape, 0.0, seed), _grid(y_shape, 0.05, seed + 1)
    if op_type == "elementwise_pow":
        x = np.abs(x) + 0.5
    check_op(op_type, {"X": x, "Y": y}, {"axis": axis if length < len(x_shape) else -1})


@settings(max_examples=20, deadline=None)
@given(st.lists(st.integers(1, 3), min_size=1, max_size=4), st.data(),
       st.sampled_from(["reduce_max", "reduce_min", "reduce_prod", "reduce_sum", "reduce_mean"]),
       st.booleans(), st.integers(0, 2**16))
def test_reduce_grads_over_any_dims(shape, data, op_type, keep_dim, seed):
    dims = data.draw(st.lists(st.integers(-len(shape), len(shape) - 1), min_size=1, max_size=3))
    reduce_all = data.draw(st.booleans())
    x = _grid(shape, 0.0, seed) + 0.05
    if op_type == "reduce_prod":   # magnitudes near 1: a product of 9 of the grid's up to 4.05 swamped the digits of
        x = np.sign(x) * (1 + np.abs(x) / (5 * np.abs(x).max()))   # central differences (1.5e-6 off at seed 1)
    check_op(op_type, {"X": x}, {"dim": dims, "keep_dim": keep_dim, "reduce_all": reduce_all})
