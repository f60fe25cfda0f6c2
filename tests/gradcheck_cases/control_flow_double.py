"""Second derivatives through control flow beyond control_flow.py's: a branch overwriting a value it had before
(at the top and nested), a pylayer nested in a cond's branch and a while's body, branches on a non-scalar condition,
two loops in a row, a loop over a fed var (its value before the loop kept by a copy the backward makes). Each a
whole program differentiated twice (control_flow._penalty_of), checked end to end with check_program."""

import numpy as np

from gradc.ir import AttrType, VarType
from programs import Net, _reads

from . import Case, rng
from .control_flow import _penalty_of, in_outer_branch
from .pylayer import unnamed_forward_blocks

r = rng(13)


def randn(*shape):
    return r.standard_normal(shape)


def _overwriting_branch(inner: float, reads_it: bool):
    """out = cond(flag > 0, 2 h, sigmoid(x @ w2)), h = x @ w1 in the outer branch, then overwritten in place by a
    nested branch (if inner > 0) with tanh(h) (``reads_it``) or tanh(x @ w2): where it does not run, h keeps its
    value."""
    def branch(net, x, w2, h, inner_pred):
        with net.sub_block() as body:
            net.assign(net.tanh(h if reads_it else net.matmul(x, w2)), h)
        op = net.block.append_op("conditional_block", {"Cond": [inner_pred], "Input": _reads(body)},
                                 {"Out": [h], "Scope": [net.scopes()]}, {"is_scalar_condition": True})
        op.set_attr("sub_block", body.idx, AttrType.BLOCK)
        return net.scale(h, scale=2.0)

    return in_outer_branch(inner, branch, lambda net, x, w2: net.sigmoid(net.matmul(x, w2)))


def _branch_overwriting_h(taken: bool, reads_it: bool, tensor: bool):
    """h = sigmoid(x @ w1), then overwritten in place by a branch at the top (Paddle's ConditionalBlock + assign)
    with tanh(h @ w2) (``reads_it``) or tanh(x @ w2), on flag > 0 or (``tensor``) where flag holds an element;
    loss = mean(h * h). The first grad op overwrites h@GRAD in place, and the branch h."""
    net = Net()
    x, f = net.data("x", [2, 3]), net.data("flag", [-1] if tensor else [1])
    w1, w2 = net.param("w1", [3, 3]), net.param("w2", [3, 3])
    h = net.sigmoid(net.matmul(x, w1))
    pred = f if tensor else net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    with net.sub_block() as body:
        net.assign(net.tanh(net.matmul(h if reads_it else x, w2)), h)
    op = net.block.append_op("conditional_block", {"Cond": [pred], "Input": _reads(body)},
                             {"Out": [h], "Scope": [net.scopes()]}, {"is_scalar_condition": not tensor})
    op.set_attr("sub_block", body.idx, AttrType.BLOCK)
    flag = randn(2 if taken else 0) if tensor else np.array([1.0 if taken else -1.0])
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": flag}, "wrt": ["x", "w1", "w2"],
            "loss": net.mean(net.elementwise_mul(h, h)), "params": {"w1": randn(3, 3), "w2": randn(3, 3)}}


def _branches_overwriting_h(taken: bool):
    """h = sigmoid(x @ w1), then overwritten in place by two branches at the top in a row, h = tanh(h @ w2) and
    h = tanh(h @ w3), both on flag > 0; loss = mean(h * h). Each grad op updates h@GRAD in place, each backward copying
    it before them (Versions.save: its copies' names must not meet an earlier backward's)."""
    net = Net()
    x, f = net.data("x", [2, 3]), net.data("flag", [1])
    w1, w2, w3 = net.param("w1", [3, 3]), net.param("w2", [3, 3]), net.param("w3", [3, 3])
    h = net.sigmoid(net.matmul(x, w1))
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    for w in (w2, w3):
        with net.sub_block() as body:
            net.assign(net.tanh(net.matmul(h, w)), h)
        op = net.block.append_op("conditional_block", {"Cond": [pred], "Input": _reads(body)},
                                 {"Out": [h], "Scope": [net.scopes()]}, {"is_scalar_condition": True})
        op.set_attr("sub_block", body.idx, AttrType.BLOCK)
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([1.0 if taken else -1.0])},
            "wrt": ["x", "w1", "w2", "w3"], "loss": net.mean(net.elementwise_mul(h, h)),
            "params": {"w1": randn(3, 3), "w2": randn(3, 3), "w3": randn(3, 3)}}


def _tanh_layer(net: Net, z: str) -> str:
    """tanh(z) through a pylayer whose backward block reads the forward's tanh: g (1 - y^2)."""
    saved = {}

    def forward(z):
        saved["y"] = net.tanh(z)
        return saved["y"]

    def backward(g):
        return net.elementwise_mul(g, net.scale(net.elementwise_mul(saved["y"], saved["y"]), scale=-1.0, bias=1.0))

    return net.pylayer(forward, [z], backward)[0]


def _pylayer_in_cond(flag: float):
    """out = cond(flag > 0, layer(x @ w1), sigmoid(x @ w2)), layer a pylayer of tanh."""
    net = Net()
    x, f, w1, w2 = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w1", [3, 3]), net.param("w2", [3, 3])
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    out = net.cond(pred, lambda: _tanh_layer(net, net.matmul(x, w1)), lambda: net.sigmoid(net.matmul(x, w2)))
    loss = net.mean(net.elementwise_mul(out, out))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([flag])}, "loss": loss,
            "wrt": ["x", "w1", "w2"], "params": {"w1": randn(3, 3), "w2": randn(3, 3)}}


def _pylayer_in_while():
    """h = x; twice: h = layer(h @ w) + b, layer a pylayer of tanh; loss = mean(h * h)."""
    net = Net()
    x, w, b = net.data("x", [2, 3]), net.param("w", [3, 3]), net.param("b", [3])
    i, n = net.constant(0), net.constant(2)
    h = net.copy(x)
    net.while_loop(lambda i, h: net.less_than(i, n),
                   lambda i, h: [net.increment(i), net.elementwise_add(_tanh_layer(net, net.matmul(h, w)), b)], [i, h])
    loss = net.mean(net.elementwise_mul(h, h))
    return {"program": net.program, "feed": {"x": randn(2, 3)}, "loss": loss, "wrt": ["x", "w", "b"],
            "params": {"w": 0.5 * randn(3, 3), "b": randn(3)}}


def _tensor_condition(runs: bool, nested: bool):
    """A branch on a non-scalar condition c (it runs when c holds an element): out = tanh(x @ w2) * sigmoid(x @ w1)
    into a new var (c of 2 elements); ``nested`` in a cond's branch, h = x @ w1 overwritten in place by
    tanh(x @ w2) * h where c holds an element (2 or none), out = 2 h."""
    net = Net()
    x, c, f = net.data("x", [2, 3]), net.data("c", [-1]), net.data("flag", [1])
    w1, w2 = net.param("w1", [3, 3]), net.param("w2", [3, 3])

    def branch(h=None):
        with net.sub_block() as body:
            result = net.elementwise_mul(net.tanh(net.matmul(x, w2)), h or net.sigmoid(net.matmul(x, w1)))
            h = h or net.tmp([2, 3], block=body.parent)
            net.assign(result, h)
        op = net.block.append_op("conditional_block", {"Cond": [c], "Input": _reads(body)},
                                  {"Out": [h], "Scope": [net.scopes()]}, {"is_scalar_condition": False})
        op.set_attr("sub_block", body.idx, AttrType.BLOCK)
        return h

    if nested:
        pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
        out = net.cond(pred, lambda: net.scale(branch(net.matmul(x, w1)), scale=2.0),
                       lambda: net.sigmoid(net.matmul(x, w2)))
    else:
        out = branch()
    loss = net.mean(net.elementwise_mul(out, out))
    return {"program": net.program, "loss": loss, "wrt": ["x", "w1", "w2"],
            "feed": {"x": randn(2, 3), "c": randn(2 if runs else 0), "flag": np.array([1.0])},
            "params": {"w1": randn(3, 3), "w2": randn(3, 3)}}


def _loops_in_a_row(n_iter: int = 2):
    """h = x; n_iter times: h = tanh(h @ w); then n_iter times: h = sigmoid(h @ v): the second loop starts from the
    first's result, and the first's while_grad from the grad the second's wrote."""
    net = Net()
    x, w, v = net.data("x", [2, 3]), net.param("w", [3, 3]), net.param("v", [3, 3])
    h, n = net.copy(x), net.constant(n_iter)
    for step in (lambda h: net.tanh(net.matmul(h, w)), lambda h: net.sigmoid(net.matmul(h, v))):
        net.while_loop(lambda i, h: net.less_than(i, n), lambda i, h, step=step: [net.increment(i), step(h)],
                       [net.constant(0), h])
    loss = net.mean(net.elementwise_mul(h, h))
    return {"program": net.program, "feed": {"x": randn(2, 3)}, "loss": loss, "wrt": ["x", "w", "v"],
            "params": {"w": 0.5 * randn(3, 3), "v": randn(3, 3)}}


def _loop_over_a_fed_var(n_iter: int):
    """n_iter times: x = tanh(x @ w) + b, x itself the loop var (no op sets it before the loop); loss = mean(x * x)."""
    net = Net()
    x, w, b = net.data("x", [2, 3]), net.param("w", [3, 3]), net.param("b", [3])
    n = net.constant(n_iter)
    net.while_loop(lambda i, h: net.less_than(i, n),
                   lambda i, h: [net.increment(i), net.elementwise_add(net.tanh(net.matmul(h, w)), b)],
                   [net.constant(0), x])
    loss = net.mean(net.elementwise_mul(x, x))
    return {"program": net.program, "feed": {"x": randn(2, 3)}, "loss": loss, "wrt": ["x", "w", "b"],
            "params": {"w": 0.5 * randn(3, 3), "b": randn(3)}}


CASES = [
    *[Case("conditional_block_grad", {}, {"nested": "cond overwriting h", "reads h": reads_it, "inner": inner > 0},
           program=lambda inner=inner, reads_it=reads_it: _penalty_of(_overwriting_branch(inner, reads_it)))
      for reads_it in (True, False) for inner in (1.0, -1.0)],
    *[Case("conditional_block_grad", {}, {"top": "cond overwriting h", "reads h": reads_it, "taken": taken},
           program=lambda taken=taken, reads_it=reads_it: _penalty_of(_branch_overwriting_h(taken, reads_it, False)))
      for reads_it in (True, False) for taken in (True, False)],
    *[Case("conditional_block_grad", {}, {"top": "cond on a tensor overwriting h", "taken": taken},
           program=lambda taken=taken: _penalty_of(_branch_overwriting_h(taken, True, True)))
      for taken in (True, False)],
    Case("conditional_block_grad", {}, {"nested": "pylayer"}, program=lambda: _penalty_of(_pylayer_in_cond(1.0))),
    Case("conditional_block_grad", {}, {"nested": "pylayer", "backward block": "names no forward block"},
         program=lambda: _penalty_of(unnamed_forward_blocks(_pylayer_in_cond(1.0)))),
    Case("conditional_block_grad", {}, {"condition": "tensor"},
         program=lambda: _penalty_of(_tensor_condition(runs=True, nested=False))),
    *[Case("conditional_block_grad", {}, {"nested": "cond on a tensor", "runs": runs},
           program=lambda runs=runs: _penalty_of(_tensor_condition(runs, nested=True))) for runs in (True, False)],
    Case("while_grad", {}, {"nested": "pylayer"}, program=lambda: _penalty_of(_pylayer_in_while())),
    Case("while_grad", {}, {"loops": "two in a row"}, program=lambda: _penalty_of(_loops_in_a_row())),
    *[Case("while_grad", {}, {"loop var": "fed", "iterations": n},
           program=lambda n=n: _penalty_of(_loop_over_a_fed_var(n))) for n in (2, 0)],
]
