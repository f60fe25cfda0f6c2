"""Control flow nested in control flow, differentiated and run, each gradient checked in float64 against central
differences of the whole program (gradc.gradcheck.check_program)."""

import numpy as np
import pytest

from gradc.gradcheck import check_program
from gradc.ir import VarType
from gradcheck_cases.control_flow import _penalty_of
from gradcheck_cases.control_flow_double import _pylayer_in_cond
from programs import Net

rng = np.random.default_rng(4)


def randn(*shape):
    return rng.standard_normal(shape)


def test_a_cond_inside_a_while():
    """Each iteration: h = tanh(h @ w1) if sum(h) > 0 else 0.5 * (h @ w2)."""
    net = Net()
    x, w1, w2 = net.data("x", [2, 3]), net.param("w1", [3, 3]), net.param("w2", [3, 3])
    i, n = net.constant(0), net.constant(4)
    h = net.copy(x)

    def body(i, h):
        pred = net.greater_than(net.reduce_sum(h, reduce_all=True, dim=[]), net.constant(0.0, (), VarType.FP64))
        new = net.cond(pred, lambda: net.tanh(net.matmul(h, w1)), lambda: net.scale(net.matmul(h, w2), scale=0.5))
        return [net.increment(i), new]

    net.while_loop(lambda i, h: net.less_than(i, n), body, [i, h])
    loss = net.mean(net.elementwise_mul(h, h))
    params = {"w1": randn(3, 3), "w2": randn(3, 3)}
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w1", "w2"], loss=loss, params=params)


def test_a_while_inside_a_while():
    """Outer loop (2 times): inner loop (3 times) h = tanh(h @ w); then h = h * s + x."""
    net = Net()
    x, w, s = net.data("x", [2, 3]), net.param("w", [3, 3]), net.param("s", [3])
    i, n_outer, n_inner = net.constant(0), net.constant(2), net.constant(3)
    h = net.copy(x)

    def outer(i, h):
        j = net.constant(0)
        net.while_loop(lambda j, h: net.less_than(j, n_inner),
                       lambda j, h: [net.increment(j), net.tanh(net.matmul(h, w))], [j, h])
        return [net.increment(i), net.elementwise_add(net.elementwise_mul(h, s), x)]

    net.while_loop(lambda i, h: net.less_than(i, n_outer), outer, [i, h])
    loss = net.mean(h)
    params = {"w": randn(3, 3), "s": randn(3)}
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w", "s"], loss=loss, params=params)


def test_a_cond_inside_a_while_taking_each_branch_in_turn():
    """Even iterations take the first branch, odd ones the second: each replay sees its own branch."""
    net = Net()
    x, w1, w2 = net.data("x", [2, 3]), net.param("w1", [3, 3]), net.param("w2", [3, 3])
    i, n, two = net.constant(0), net.constant(5), net.constant(2)
    h = net.copy(x)

    def body(i, h):
        even = net.equal(net.elementwise_mod(i, two), net.constant(0))
        new = net.cond(even, lambda: net.sigmoid(net.matmul(h, w1)), lambda: net.tanh(net.matmul(h, w2)))
        return [net.increment(i), new]

    net.while_loop(lambda i, h: net.less_than(i, n), body, [i, h])
    loss = net.mean(net.elementwise_mul(h, h))
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w1", "w2"], loss=loss,
                  params={"w1": randn(3, 3), "w2": randn(3, 3)})


def test_a_while_inside_a_while_inside_a_while():
    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", [3, 3])
    i, n = net.constant(0), net.constant(2)
    h = net.copy(x)

    def loop(depth):
        def body(k, h):
            if depth > 1:
                net.while_loop(lambda j, h: net.less_than(j, n), loop(depth - 1), [net.constant(0), h])
            return [net.increment(k), net.tanh(net.matmul(h, w))]
        return body

    net.while_loop(lambda i, h: net.less_than(i, n), loop(3), [i, h])
    loss = net.mean(h)
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w"], loss=loss, params={"w": 0.5 * randn(3, 3)})


@pytest.mark.parametrize("flag", [1.0, -1.0])
def test_a_while_inside_a_cond(flag):
    net = Net()
    x, f, w = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w", [3, 3])
    n = net.constant(3)

    def looping():
        h = net.copy(x)
        net.while_loop(lambda i, h: net.less_than(i, n),
                       lambda i, h: [net.increment(i), net.tanh(net.matmul(h, w))], [net.constant(0), h])
        return h

    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    out = net.cond(pred, looping, lambda: net.sigmoid(net.matmul(x, w)))
    loss = net.mean(net.elementwise_mul(out, out))
    check_program(net.program, {"x": randn(2, 3), "flag": np.array([flag])}, ["x", "w"], loss=loss,
                  params={"w": randn(3, 3)})


def test_a_pylayer_inside_a_cond_not_taken_is_differentiated_twice():
    """The other branch runs: the replay of the pylayer's branch writes no grads, and the second derivative is the
    sigmoid branch's (the pylayer's own are registry cases, gradcheck_cases/control_flow.py)."""
    case = _penalty_of(_pylayer_in_cond(-1.0))
    check_program(case["program"], case["feed"], case["wrt"], loss=case["loss"], params=case["params"])
