"""Derivatives through branches with several outputs: second derivatives through a cond's select_input /
select_output where no grad reaches one branch's output (its weight left out of the penalty, or a constant branch);
through a branch whose output that no loss reads is listed before the value it overwrites in place (Out@GRAD then
lists fewer grads than Out); and first and second derivatives through a branch overwriting in place a value it reads,
with one cut off from the inputs (its given grad must be replaced where the branch runs, not summed). Each a whole
program, checked end to end with check_program."""

import numpy as np

import gradc
from gradc.ir import AttrType, VarType
from programs import Net, _reads

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


def _overwrite(net: Net, pred: str, h: str, new_h, extra: str) -> None:
    """A branch on pred writing u = sigmoid(extra) first (Out lists it first; no loss reads it) and then h = new_h()
    in place."""
    u = net.tmp([2, 3])
    with net.sub_block() as body:
        net.assign(net.sigmoid(extra), u)
        net.assign(new_h(), h)
    op = net.block.append_op("conditional_block", {"Cond": [pred], "Input": _reads(body)},
                             {"Out": [u, h], "Scope": [net.scopes()]}, {"is_scalar_condition": True})
    op.set_attr("sub_block", body.idx, AttrType.BLOCK)


def _unused_output_first(taken: bool):
    """h = sigmoid(x @ w1); a branch writes u (unused), then h = tanh(h @ w2) in place; loss = mean(h * h)."""
    net = Net()
    x, f, w1, w2 = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w1", [3, 3]), net.param("w2", [3, 3])
    h = net.sigmoid(net.matmul(x, w1))
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    _overwrite(net, pred, h, lambda: net.tanh(net.matmul(h, w2)), net.matmul(x, w2))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([1.0 if taken else -1.0])},
            "wrt": ["x", "w1", "w2"], "loss": net.mean(net.elementwise_mul(h, h)),
            "params": {"w1": randn(3, 3), "w2": randn(3, 3)}}


def _unused_output_first_nested(inner: float):
    """In a cond's branch (h = x @ w1 there), a branch on inner > 0 writes u (unused), then h = tanh(h) in place;
    out = 2 h."""
    def branch(net, x, w2, h, inner_pred):
        _overwrite(net, inner_pred, h, lambda: net.tanh(h), net.matmul(x, w2))
        return net.scale(h, scale=2.0)

    return in_outer_branch(inner, branch, lambda net, x, w2: net.sigmoid(net.matmul(x, w2)))


def _overwriting_u(taken: bool, new_h: str | None, loss_reads_h: bool):
    """h = sigmoid(x @ w1), u = tanh(x @ w2); a branch overwrites u = sigmoid(h @ w2) in place and then h, if
    ``new_h``, with tanh(h) or the constant 0.5; loss = mean(u * u (+ h * h))."""
    net = Net()
    x, f, w1, w2 = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w1", [3, 3]), net.param("w2", [3, 3])
    h, u = net.sigmoid(net.matmul(x, w1)), net.tanh(net.matmul(x, w2))
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    with net.sub_block() as body:
        net.assign(net.sigmoid(net.matmul(h, w2)), u)
        if new_h is not None:
            net.assign(net.tanh(h) if new_h == "tanh" else _constant(net), h)
    op = net.block.append_op("conditional_block", {"Cond": [pred], "Input": _reads(body)},
                             {"Out": [u] if new_h is None else [u, h], "Scope": [net.scopes()]},
                             {"is_scalar_condition": True})
    op.set_attr("sub_block", body.idx, AttrType.BLOCK)
    loss = net.elementwise_mul(u, u)
    if loss_reads_h:
        loss = net.elementwise_add(loss, net.elementwise_mul(h, h))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([1.0 if taken else -1.0])},
            "wrt": ["x", "w1", "w2"], "loss": net.mean(loss), "params": {"w1": randn(3, 3), "w2": randn(3, 3)}}


def _overwriting_u_nested(inner: float):
    """In a cond's branch (h = x @ w1 there), u = tanh(x @ w2), then a branch on inner > 0 overwrites
    u = sigmoid(h @ w2) and h = tanh(h) in place (no loss reads that h: its grad is not given); out = 2 u."""
    def branch(net, x, w2, h, inner_pred):
        u = net.tanh(net.matmul(x, w2))
        with net.sub_block() as body:
            net.assign(net.sigmoid(net.matmul(h, w2)), u)
            net.assign(net.tanh(h), h)
        op = net.block.append_op("conditional_block", {"Cond": [inner_pred], "Input": _reads(body)},
                                 {"Out": [u, h], "Scope": [net.scopes()]}, {"is_scalar_condition": True})
        op.set_attr("sub_block", body.idx, AttrType.BLOCK)
        return net.scale(u, scale=2.0)

    return in_outer_branch(inner, branch, lambda net, x, w2: net.sigmoid(net.matmul(x, w2)))


CASES = [
    *[Case("conditional_block", {}, {"overwrites": "u, then h with a constant", "taken": taken},
           program=lambda taken=taken: _overwriting_u(taken, "constant", True)) for taken in (True, False)],
    *[Case("conditional_block_grad", {}, {"overwrites": "u reading h" + (", then h" if new_h else ""), "taken": True},
           program=lambda new_h=new_h: _penalty_of(_overwriting_u(True, new_h, False))) for new_h in (None, "tanh")],
    *[Case("conditional_block_grad", {}, {"overwrites": "u reading h, then h unread", "nested": "cond",
                                          "inner": inner > 0},
           program=lambda inner=inner: _penalty_of(_overwriting_u_nested(inner))) for inner in (1.0, -1.0)],
    *[Case("select_output", {}, {"penalty": "w1 only", "branch": flag > 0},
           program=lambda flag=flag: _penalty_of_w1(_split_weights(flag))) for flag in (1.0, -1.0)],
    *[Case("select_output", {}, {"penalty": "w1 only", "nested": "cond", "inner": inner > 0},
           program=lambda inner=inner: _penalty_of_w1(_split_weights_nested(inner))) for inner in (1.0, -1.0)],
    Case("select_output", {}, {"branch": "constant"}, program=lambda: _penalty_of(_split_weights(1.0, True))),
    Case("select_output", {}, {"branch": "constant", "nested": "cond"},
         program=lambda: _penalty_of(_split_weights_nested(-1.0, True))),
    *[Case("conditional_block_grad", {}, {"outputs": "unused one, then h in place", "taken": taken},
           program=lambda taken=taken: _penalty_of(_unused_output_first(taken))) for taken in (True, False)],
    *[Case("conditional_block_grad", {}, {"outputs": "unused one, then h in place", "nested": "cond",
                                          "inner": inner > 0},
           program=lambda inner=inner: _penalty_of(_unused_output_first_nested(inner))) for inner in (1.0, -1.0)],
]
