"""Derivatives of derivatives: a backward pass over a program that already has one (Hessian-vector products,
gradient penalties, third derivatives), checked against float64 central differences."""

from __future__ import annotations

import numpy as np
import pytest

import gradc
from gradc.gradcheck import check_program
from gradc.layers import ProgramBuilder

RNG = np.random.default_rng(7)


def _weighted(net: ProgramBuilder, names: list[str], weights: dict, prefix: str) -> str:
    """sum over ``names`` of sum(W * var), each W a fed constant: a scalar whose gradient is W."""
    terms = []
    for name in names:
        shape = net.block.var(name).shape
        weight = net.data(f"{prefix}.{name}", shape, "float64", stop_gradient=True)
        weights[weight] = RNG.standard_normal(shape)
        product = net.op("elementwise_mul", {"X": name, "Y": weight})[0]
        terms.append(net.op("reduce_sum", {"X": product}, {"reduce_all": True, "dim": []})[0])
    return net.op("sum", {"X": terms})[0]


def fc(net: ProgramBuilder, x: str, size: int, act: str | None = None) -> str:
    """A float64 fully connected layer with Paddle's names (the builder's fc makes float32 parameters)."""
    layer = net.unique("fc")
    w = net.parameter(f"fc_{layer}.w_0", [net.block.var(x).shape[-1], size], "float64")
    b = net.parameter(f"fc_{layer}.b_0", [size], "float64")
    out = net.op("elementwise_add", {"X": net.op("mul", {"X": x, "Y": w})[0], "Y": b})[0]
    return net.op(act, {"X": out})[0] if act else out


def tanh_mlp(sizes=(3, 4, 2), batch=5):
    net = ProgramBuilder(seed=3)
    x = net.data("x", [batch, sizes[0]], "float64", stop_gradient=True)
    hidden = x
    for size in sizes[1:]:
        hidden = fc(net, hidden, size, act="tanh")
    loss = net.mean(net.op("elementwise_add", {"X": net.op("square", {"X": hidden})[0], "Y": hidden})[0])
    params = {name: RNG.standard_normal(var.shape) * 0.7 for name, var in net.block.vars.items() if var.is_parameter}
    return net, loss, params, {"x": RNG.standard_normal((batch, sizes[0]))}


def _scope(values: dict) -> gradc.Scope:
    scope = gradc.Scope()
    for name, value in values.items():
        scope[name] = value.copy()
    return scope


def test_a_second_backward_names_its_grads_apart_from_the_first():
    net, loss, params, feed = tanh_mlp()
    pairs = gradc.append_backward(net.program, loss)
    first = {name for name in net.block.vars if "@GRAD" in name}
    assert any("@RENAME@" in name for name in first)
    penalty = _weighted(net, [grad for _, grad in pairs], {}, "v")
    start = len(net.block.ops)
    grads = gradc.gradients(net.program, penalty, [param for param, _ in pairs])
    assert grads == [param + "@GRAD@2" for param, _ in pairs]
    written = {name for op in net.block.ops[start:] for name in op.output_names()}
    assert not written & first, "the second backward overwrote vars of the first"
    assert any("@RENAME@" in name for name in written), "its shared grads are summed under names of their own"


def test_hessian_vector_product_of_a_tanh_mlp():
    """H v by the second backward of v . grad(loss), against central differences of grad(loss) along v."""
    net, loss, params, feed = tanh_mlp()
    pairs = gradc.append_backward(net.program, loss)
    vectors = {}
    dot = _weighted(net, [grad for _, grad in pairs], vectors, "v")
    hvp = gradc.gradients(net.program, dot, list(params))
    executor = gradc.Executor()
    analytic = executor.run(net.program, {**feed, **vectors}, hvp, _scope(params))

    direction = {param: vectors[f"v.{grad}"] for param, grad in pairs}
    first_grads = [grad for _, grad in pairs]
    eps = 1e-5

    def grads_at(step: float) -> list[np.ndarray]:
        moved = {name: value + step * direction[name] for name, value in params.items()}
        return executor.run(net.program, {**feed, **vectors}, first_grads, _scope(moved))

    numeric = [(plus - minus) / (2 * eps) for plus, minus in zip(grads_at(eps), grads_at(-eps))]
    for name, got, want in zip(params, analytic, numeric):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=name)


def test_third_derivatives_of_a_tanh_mlp():
    """The backward of the backward of the backward: d/dW of u . d(v . grad(loss))/dW."""
    net, loss, params, feed = tanh_mlp(sizes=(2, 3, 2), batch=3)
    pairs = gradc.append_backward(net.program, loss)
    constants = {}
    dot = _weighted(net, [grad for _, grad in pairs], constants, "v")
    second = gradc.gradients(net.program, dot, list(params))
    third = _weighted(net, second, constants, "u")
    check_program(net.program, {**feed, **constants}, list(params), loss=third, params=params)


def small_cnn(pool: str):
    net = ProgramBuilder(seed=5)
    image = net.data("image", [2, 1, 5, 5], "float64", stop_gradient=False)
    label = net.data("label", [2, 1], "int64")
    filters = net.parameter("conv.w", [2, 1, 3, 3], "float64")
    hidden = net.op("conv2d", {"Input": image, "Filter": filters}, {"paddings": [1, 1]})[0]
    hidden = net.op("tanh", {"X": hidden})[0]
    hidden = net.op("pool2d", {"X": hidden}, {"pooling_type": pool, "ksize": [2, 2], "strides": [2, 2]})[0]
    flat = net.op("flatten_contiguous_range", {"X": hidden}, {"start_axis": 1, "stop_axis": 3})[0]
    loss = net.cross_entropy_loss(fc(net, flat, 3), label)
    params = {name: RNG.standard_normal(var.shape) * 0.5 for name, var in net.block.vars.items() if var.is_parameter}
    feed = {"image": RNG.standard_normal((2, 1, 5, 5)), "label": np.array([[2], [0]])}
    return net, loss, params, feed


@pytest.mark.parametrize("pool", ["avg", "max"])
def test_gradient_of_a_gradient_norm_penalty_of_a_small_cnn(pool):
    """WGAN-GP's penalty: the squared norm of d(loss)/d(image), whose gradient reaches every parameter."""
    net, loss, params, feed = small_cnn(pool)
    gradc.gradients(net.program, loss, ["image"])
    norm = net.op("reduce_sum", {"X": net.op("square", {"X": "image@GRAD"})[0]}, {"reduce_all": True, "dim": []})[0]
    grads = check_program(net.program, feed, list(params), loss=norm, params=params)
    assert all(np.abs(g).max() > 0 for g in grads.values())


def test_a_gradient_penalty_as_the_issue_tried_it():
    """gradients() of mean(fc_0.w_0@GRAD ** 2) in a tanh MLP that already has its backward."""
    net, loss, params, feed = tanh_mlp()
    gradc.append_backward(net.program, loss)
    penalty = net.mean(net.op("square", {"X": "fc_0.w_0@GRAD"})[0])
    assert gradc.gradients(net.program, penalty, ["fc_0.w_0"]) == ["fc_0.w_0@GRAD@2"]
    check_program(net.program, feed, list(params), loss=penalty, params=params)
