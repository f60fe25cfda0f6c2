"""Float64 building blocks for derivative tests on gradc.ProgramBuilder programs (the builder's own fc makes
float32 parameters)."""

from __future__ import annotations

import numpy as np

import gradc
from gradc.gradcheck import check_program
from gradc.layers import ProgramBuilder


def float64_fc(net: ProgramBuilder, x: str, size: int, act: str | None = None) -> str:
    """A float64 fully connected layer with Paddle's names."""
    layer = net.unique("fc")
    w = net.parameter(f"fc_{layer}.w_0", [net.block.var(x).shape[-1], size], "float64")
    b = net.parameter(f"fc_{layer}.b_0", [size], "float64")
    out = net.op("elementwise_add", {"X": net.op("mul", {"X": x, "Y": w})[0], "Y": b})[0]
    return net.op(act, {"X": out})[0] if act else out


def weighted_sum(net: ProgramBuilder, names: list[str], feed: dict, prefix: str, rng) -> str:
    """sum over ``names`` of sum(W * var), each W a constant drawn from ``rng`` into ``feed``: a scalar whose
    gradient is W."""
    terms = []
    for name in names:
        shape = net.block.var(name).shape
        weight = net.data(f"{prefix}.{name}", shape, "float64", stop_gradient=True)
        feed[weight] = rng.standard_normal(shape)
        product = net.op("elementwise_mul", {"X": name, "Y": weight})[0]
        terms.append(net.op("reduce_sum", {"X": product}, {"reduce_all": True, "dim": []})[0])
    return net.op("sum", {"X": terms})[0]


def cumprod_index_put_net(net: ProgramBuilder, accumulate: bool, rng) -> tuple[str, dict]:
    """mean(y^2), y = cumprod(mask * index_put(a * c, rows, v^2)) with a, c = broadcast_tensors(tanh(x), b) and a
    zero in the mask: index_put_grad and broadcast_tensors_grad, linear in all they differentiate, between
    nonlinear ops. Returns the loss and the feed (x, rows, mask) drawn from ``rng``; parameters b and v, [4]."""
    x = net.data("x", [3, 1], "float64", stop_gradient=False)
    b, v = net.parameter("b", [4], "float64"), net.parameter("v", [4], "float64")
    rows, mask = net.data("rows", [1], "int64"), net.data("mask", [3, 4], "float64")
    a, c = net.op("broadcast_tensors", {"X": [net.op("tanh", {"X": x})[0], b]}, outputs=["Out"])
    put = net.op("index_put", {"x": net.op("elementwise_mul", {"X": a, "Y": c})[0], "indices": [rows],
                               "value": net.op("square", {"X": v})[0]}, {"accumulate": accumulate})[0]
    y = net.op("cumprod", {"X": net.op("elementwise_mul", {"X": put, "Y": mask})[0]}, {"dim": 1})[0]
    feed = {"x": rng.standard_normal((3, 1)), "rows": np.array([2]),
            "mask": np.where(np.arange(12).reshape(3, 4) == 5, 0.0, 1.0)}
    return net.mean(net.op("square", {"X": y})[0]), feed


def scope_of(values: dict) -> gradc.Scope:
    """A scope holding copies of ``values``."""
    scope = gradc.Scope()
    for name, value in values.items():
        scope[name] = value.copy()
    return scope


def assert_hessian_vector_product(net: ProgramBuilder, loss: str, params: dict, feed: dict, rng) -> None:
    """H v by the second backward of v . grad(loss), against central differences of grad(loss) along v (each
    parameter's part of H v clearly nonzero)."""
    pairs = gradc.append_backward(net.program, loss)
    vectors = {}
    dot = weighted_sum(net, [grad for _, grad in pairs], vectors, "v", rng)
    hvp = gradc.gradients(net.program, dot, list(params))
    executor = gradc.Executor()
    analytic = executor.run(net.program, {**feed, **vectors}, hvp, scope_of(params))
    direction = {param: vectors[f"v.{grad}"] for param, grad in pairs}
    eps = 1e-5

    def grads_at(step: float) -> list[np.ndarray]:
        moved = {name: value + step * direction[name] for name, value in params.items()}
        return executor.run(net.program, {**feed, **vectors}, [grad for _, grad in pairs], scope_of(moved))

    numeric = [(plus - minus) / (2 * eps) for plus, minus in zip(grads_at(eps), grads_at(-eps))]
    for name, got, want in zip(params, analytic, numeric):
        assert np.abs(want).max() > 1e-3, name
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8, err_msg=name)


def check_third_derivatives(case, rng) -> None:
    """A third backward over a second-order gradcheck case's program (the weighted sum of its grads' grads), checked
    against central differences: the ops each second-order maker emits have makers of their own."""
    built = case.program()
    net = ProgramBuilder()
    net.program, net.block = built["program"], built["program"].global_block
    third = gradc.gradients(net.program, built["loss"], built["wrt"])
    loss3 = weighted_sum(net, [name for name in third if name is not None], built["feed"], "u", rng)
    check_program(net.program, built["feed"], built["wrt"], loss=loss3, rtol=1e-4, atol=1e-6)
