"""Derivatives through branches with several outputs: second derivatives through a cond's select_input /
select_output where no grad reaches one branch's output (its weight left out of the penalty, or a constant branch).
Each a whole program, checked end to end with check_program."""

import numpy as np

import gradc
from gradc.ir import VarType
from programs import Net

from . import Case, rng
from .control_flow import _penalty_of, in_outer_branch

r = rng(17)


def randn(*shape):
    return r.standard_normal(shape)


def _penalty_of_w1(case: dict) -> dict:
    """The program with its backward, and loss = mean(w1@GRAD^2): no grad reaches the branch that only w2 feeds."""
    program = case["program"]
    grads = dict(gradc.append_backward(program, case["loss"]))
    net = Net()
    net.program, net.block = program, program.global_block
    return {**case, "loss": net.mean(net.square(grads["w1"]))}


def _constant(net: Net) -> str:
    return net.constant(0.5, shape=(2, 3), dtype=VarType.FP64)


def _split_weights(flag: float, constant: bool = False):
    """a, b = cond(flag > 0, (tanh(x @ w1), sigmoid(x @ w2)), (sigmoid(x @ w2) or 0.5, tanh(x @ w1)));
    loss = mean(a * a + b)."""
    net = Net()
    x, f, w1, w2 = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w1", [3, 3]), net.param("w2", [3, 3])
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    a, b = net.cond_outputs(pred, lambda: [net.tanh(net.matmul(x, w1)), net.sigmoid(net.matmul(x, w2))],
                            lambda: [_constant(net) if constant else net.sigmoid(net.matmul(x, w2)),
                                     net.tanh(net.matmul(x, w1))])
    loss = net.mean(net.elementwise_add(net.elementwise_mul(a, a), b))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([flag])}, "loss": loss,
            "wrt": ["x", "w1", "w2"], "params": {"w1": randn(3, 3), "w2": randn(3, 3)}}


def _split_weights_nested(inner: float, constant: bool = False):
    """As _split_weights, in a cond's branch (h = x @ w1 there): a, b = cond(inner > 0, (tanh(h), sigmoid(x @ w2)),
    (sigmoid(x @ w2) or 0.5, tanh(h))); out = a * a + b."""
    def branch(net, x, w2, h, inner_pred):
        a, b = net.cond_outputs(inner_pred, lambda: [net.tanh(h), net.sigmoid(net.matmul(x, w2))],
                                lambda: [_constant(net) if constant else net.sigmoid(net.matmul(x, w2)),
                                         net.tanh(h)])
        return net.elementwise_add(net.elementwise_mul(a, a), b)

    return in_outer_branch(inner, branch, lambda net, x, w2: net.scale(net.matmul(x, w2), scale=2.0))


CASES = [
    *[Case("select_output", {}, {"penalty": "w1 only", "branch": flag > 0},
           program=lambda flag=flag: _penalty_of_w1(_split_weights(flag))) for flag in (1.0, -1.0)],
    *[Case("select_output", {}, {"penalty": "w1 only", "nested": "cond", "inner": inner > 0},
           program=lambda inner=inner: _penalty_of_w1(_split_weights_nested(inner))) for inner in (1.0, -1.0)],
    Case("select_output", {}, {"branch": "constant"}, program=lambda: _penalty_of(_split_weights(1.0, True))),
    Case("select_output", {}, {"branch": "constant", "nested": "cond"},
         program=lambda: _penalty_of(_split_weights_nested(-1.0, True))),
]
