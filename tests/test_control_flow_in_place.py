"""Control flow that overwrites values (in place, or a var a loop rewrites), differentiated and run: each
gradient checked in float64 against central differences of the whole program (gradc.gradcheck.check_program)."""

import numpy as np
import pytest

import gradc
from gradc.gradcheck import check_program
from gradc.ir import VarType
from programs import Net

rng = np.random.default_rng(5)


def randn(*shape):
    return rng.standard_normal(shape)


def test_a_value_the_loop_overwrites_is_kept_for_the_backward():
    """h = tanh(x) before the loop: tanh_grad needs that h, which the loop then updates in place."""
    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", [3, 3])
    i, n = net.constant(0), net.constant(2)
    h = net.tanh(x)
    net.while_loop(lambda i, h: net.less_than(i, n), lambda i, h: [net.increment(i), net.sigmoid(net.matmul(h, w))],
                   [i, h])
    loss = net.mean(net.elementwise_mul(h, h))
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w"], loss=loss, params={"w": randn(3, 3)})
    train = net.program.clone()
    gradc.append_backward(train, loss)
    tanh_grad = next(op for op in train.global_block.ops if op.type == "tanh_grad")
    assert tanh_grad.input("Out") == [f"{h}@SAVE@0@2"]


def _check_loop_updating_in_place(w_shape, steps, in_place, then):
    """h = copy(x); a while loop of ``steps`` iterations whose body runs ``in_place(net, h, w)`` (an op writing h
    over itself), then h = ``then(net, h, w)``; the loss mean(h * h) checked against central differences."""
    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", w_shape)
    i, n = net.constant(0), net.constant(steps)
    h = net.copy(x)

    def body(i, h):
        in_place(net, h, w)
        return [net.increment(i), then(net, h, w)]

    net.while_loop(lambda i, h: net.less_than(i, n), body, [i, h])
    loss = net.mean(net.elementwise_mul(h, h))
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w"], loss=loss, params={"w": randn(*w_shape)})


def test_a_body_that_updates_its_loop_var_in_place():
    """Body: h = tanh(h) in place, then h = h @ w: both grad ops need a value the name no longer holds."""
    _check_loop_updating_in_place([3, 3], 3, lambda net, h, w: net.block.append_op("tanh", {"X": [h]}, {"Out": [h]}),
                                  lambda net, h, w: net.matmul(h, w))


def test_a_body_that_multiplies_its_loop_var_in_place():
    """Body: h = h * w in place: elementwise_mul_grad needs h from before the op, i.e. the loop var."""
    _check_loop_updating_in_place(
        [2, 3], 2, lambda net, h, w: net.block.append_op("elementwise_mul", {"X": [h], "Y": [w]}, {"Out": [h]}),
        lambda net, h, w: net.tanh(h))


@pytest.mark.parametrize("flag", [1.0, -1.0])
def test_a_cond_that_updates_an_outer_var_in_place(flag):
    """if flag > 0: h = tanh(h @ w). When the branch does not run, h's grad passes through."""
    net = Net()
    x, f, w = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w", [3, 3])
    h = net.copy(x)
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    with net.sub_block() as body:
        net.assign(net.tanh(net.matmul(h, w)), h)
    op = net.block.append_op("conditional_block", {"Cond": [pred], "Input": [h, w]},
                             {"Out": [h], "Scope": [net.scopes()]}, {"is_scalar_condition": True})
    op.set_attr("sub_block", body.idx, gradc.ir.AttrType.BLOCK)
    loss = net.mean(net.elementwise_mul(h, h))
    grads = check_program(net.program, {"x": randn(2, 3), "flag": np.array([flag])}, ["x", "w"], loss=loss,
                          params={"w": randn(3, 3)})
    assert grads["w"].any() == (flag > 0)


@pytest.mark.parametrize("n_iter", [0, 2])
def test_a_loop_that_overwrites_a_var_without_reading_it(n_iter):
    """y = x; loop n times: y = tanh(h @ w), h = h + 1. With zero iterations y keeps x, and its grad."""
    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", [3, 3])
    i, n = net.constant(0), net.constant(n_iter)
    y, h = net.copy(x), net.scale(x, scale=0.5)

    def body(i, h):
        net.assign(net.tanh(net.matmul(h, w)), y)
        return [net.increment(i), net.scale(h, scale=1.0, bias=1.0)]

    net.while_loop(lambda i, h: net.less_than(i, n), body, [i, h])
    loss = net.mean(net.elementwise_mul(y, net.elementwise_add(y, h)))
    check_program(net.program, {"x": randn(2, 3)}, ["x", "w"] if n_iter else ["x"], loss=loss,
                  params={"w": randn(3, 3)})
