"""Cases for control flow. conditional_block and while run a sub-block, which a one-op program
cannot hold: their cases build a whole program around the op (tests/programs.py) and check it end to
end with check_program."""

import numpy as np

import gradc
from gradc.ir import VarType
from programs import Net

from . import Case, rng

r = rng(11)


def randn(*shape):
    return r.standard_normal(shape)


def _cond(flag: float):
    """out = cond(flag > 0, tanh(x @ w1), 2 * (x @ w2)); loss = mean(out * out)."""
    net = Net()
    x, f, w1, w2 = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w1", [3, 3]), net.param("w2", [3, 3])
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    out = net.cond(pred, lambda: net.tanh(net.matmul(x, w1)), lambda: net.scale(net.matmul(x, w2), scale=2.0))
    loss = net.mean(net.elementwise_mul(out, out))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([flag])}, "loss": loss,
            "wrt": ["x", "w1", "w2"], "params": {"w1": randn(3, 3), "w2": randn(3, 3)}}


def _while(n_iter: int):
    """h = x; n_iter times: h = tanh(h @ w) + b; loss = mean(h * h)."""
    net = Net()
    x, w, b = net.data("x", [2, 3]), net.param("w", [3, 3]), net.param("b", [3])
    i, n = net.constant(0), net.constant(n_iter)
    h = net.copy(x)
    net.while_loop(lambda i, h: net.less_than(i, n),
                   lambda i, h: [net.increment(i), net.elementwise_add(net.tanh(net.matmul(h, w)), b)], [i, h])
    loss = net.mean(net.elementwise_mul(h, h))
    return {"program": net.program, "feed": {"x": randn(2, 3)}, "loss": loss, "wrt": ["x", "w", "b"],
            "params": {"w": 0.5 * randn(3, 3), "b": randn(3)}}


def _square_in_branch():
    """out = cond(flag > 0, h * h, 2 * (x @ w2)), h = x @ w1 computed before: the branch reads h twice in one op."""
    net = Net()
    x, f, w1, w2 = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w1", [3, 3]), net.param("w2", [3, 3])
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    h = net.matmul(x, w1)
    out = net.cond(pred, lambda: net.elementwise_mul(h, h), lambda: net.scale(net.matmul(x, w2), scale=2.0))
    loss = net.mean(net.elementwise_mul(out, out))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([1.0])}, "loss": loss,
            "wrt": ["x", "w1", "w2"], "params": {"w1": randn(3, 3), "w2": randn(3, 3)}}


def in_outer_branch(inner: float, branch, otherwise) -> dict:
    """out = cond(flag > 0, branch(net, x, w2, h, inner > 0), otherwise(net, x, w2)), h = x @ w1 and inner > 0 made
    in the outer branch (flag 1); loss = mean(out * out)."""
    net = Net()
    x, f, g = net.data("x", [2, 3]), net.data("flag", [1]), net.data("inner", [1])
    w1, w2 = net.param("w1", [3, 3]), net.param("w2", [3, 3])
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))

    def outer_branch():
        h = net.matmul(x, w1)
        return branch(net, x, w2, h, net.greater_than(g, net.constant(0.0, dtype=VarType.FP64)))

    out = net.cond(pred, outer_branch, lambda: otherwise(net, x, w2))
    loss = net.mean(net.elementwise_mul(out, out))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([1.0]), "inner": np.array([inner])},
            "loss": loss, "wrt": ["x", "w1", "w2"], "params": {"w1": randn(3, 3), "w2": randn(3, 3)}}


def _nested_cond(inner: float):
    """out = cond(flag > 0, cond(inner > 0, tanh(h), h * h), 2 * (x @ w2)), h = x @ w1 in the outer branch."""
    return in_outer_branch(inner, lambda net, x, w2, h, inner_pred: net.cond(
        inner_pred, lambda: net.tanh(h), lambda: net.elementwise_mul(h, h)),
        lambda net, x, w2: net.scale(net.matmul(x, w2), scale=2.0))
















def _cond_in_while(flag: float, n_iter: int = 2):
    """h = x; n_iter times: z = h @ w, h = cond(flag > 0, tanh(z) + b, z * z); loss = mean(h * h)."""
    net = Net()
    x, f, w, b = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w", [3, 3]), net.param("b", [3])
    i, n = net.constant(0), net.constant(n_iter)
    h = net.copy(x)

    def body(i, h):
        z = net.matmul(h, w)
        pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
        return [net.increment(i), net.cond(pred, lambda: net.elementwise_add(net.tanh(z), b),
                                           lambda: net.elementwise_mul(z, z))]

    net.while_loop(lambda i, h: net.less_than(i, n), body, [i, h])
    loss = net.mean(net.elementwise_mul(h, h))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([flag])}, "loss": loss,
            "wrt": ["x", "w", "b"], "params": {"w": 0.5 * randn(3, 3), "b": randn(3)}}


def _while_in_cond(flag: float):
    """out = cond(flag > 0, (h = x; twice: h = tanh(h @ w) + b), 2 * (x @ w)); loss = mean(out * out)."""
    net = Net()
    x, f, w, b = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w", [3, 3]), net.param("b", [3])
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))

    def looping():
        i, n, h = net.constant(0), net.constant(2), net.copy(x)
        net.while_loop(lambda i, h: net.less_than(i, n),
                       lambda i, h: [net.increment(i), net.elementwise_add(net.tanh(net.matmul(h, w)), b)], [i, h])
        return h

    out = net.cond(pred, looping, lambda: net.scale(net.matmul(x, w), scale=2.0))
    loss = net.mean(net.elementwise_mul(out, out))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([flag])}, "loss": loss,
            "wrt": ["x", "w", "b"], "params": {"w": 0.5 * randn(3, 3), "b": randn(3)}}


def _while_in_while():
    """h = x; twice: (twice: h = tanh(h @ w)); h = h * s + x; loss = mean(h * h)."""
    net = Net()
    x, w, s = net.data("x", [2, 3]), net.param("w", [3, 3]), net.param("s", [3])
    i, n = net.constant(0), net.constant(2)
    h = net.copy(x)

    def outer(i, h):
        net.while_loop(lambda j, h: net.less_than(j, n),
                       lambda j, h: [net.increment(j), net.tanh(net.matmul(h, w))], [net.constant(0), h])
        return [net.increment(i), net.elementwise_add(net.elementwise_mul(h, s), x)]

    net.while_loop(lambda i, h: net.less_than(i, n), outer, [i, h])
    loss = net.mean(net.elementwise_mul(h, h))
    return {"program": net.program, "feed": {"x": randn(2, 3)}, "loss": loss, "wrt": ["x", "w", "s"],
            "params": {"w": 0.5 * randn(3, 3), "s": randn(3)}}


def _cond_in_while_in_cond():
    """Three levels: out = cond(flag > 0, (h = x; twice: z = h @ w, h = cond(flag > 0, tanh(z) + b, z * z)),
    2 * (x @ w)); loss = mean(out * out)."""
    net = Net()
    x, f, w, b = net.data("x", [2, 3]), net.data("flag", [1]), net.param("w", [3, 3]), net.param("b", [3])
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))

    def body(i, h):
        z = net.matmul(h, w)
        return [net.increment(i), net.cond(pred, lambda: net.elementwise_add(net.tanh(z), b),
                                           lambda: net.elementwise_mul(z, z))]

    def looping():
        i, n, h = net.constant(0), net.constant(2), net.copy(x)
        net.while_loop(lambda i, h: net.less_than(i, n), body, [i, h])
        return h

    out = net.cond(pred, looping, lambda: net.scale(net.matmul(x, w), scale=2.0))
    loss = net.mean(net.elementwise_mul(out, out))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([1.0])}, "loss": loss,
            "wrt": ["x", "w", "b"], "params": {"w": 0.5 * randn(3, 3), "b": randn(3)}}


def _penalty_of(case: dict) -> dict:
    """The same program with its backward, and loss = the mean of the squared grads of its parameters: the
    check differentiates the control-flow grad ops (second derivatives)."""
    program = case["program"]
    pairs = gradc.append_backward(program, case["loss"])
    net = Net()
    net.program, net.block = program, program.global_block
    squares = [net.mean(net.square(grad)) for _, grad in pairs]
    return {**case, "loss": net.op("sum", {"X": squares})}


CASES = [
    Case("select_input", {"X": [randn(2, 3), randn(2, 3)], "Mask": np.array([1], np.int32)}, wrt=["X1"]),
    Case("select_input", {"X": [randn(3), randn(3), randn(3)], "Mask": np.array([0], np.int32)}, wrt=["X0"]),
    Case("select_output", {"X": randn(2, 3), "Mask": np.array([0], np.int32)}, outputs={"Out": 1}),
    Case("conditional_block", {}, {"branch": "true"}, program=lambda: _cond(1.0)),
    Case("conditional_block", {}, {"branch": "false"}, program=lambda: _cond(-1.0)),
    Case("while", {}, {"iterations": 3}, program=lambda: _while(3)),
    Case("while", {}, {"iterations": 0}, program=lambda: _while(0)),
    Case("conditional_block_grad", {}, {"branch": "true"}, program=lambda: _penalty_of(_cond(1.0))),
    Case("conditional_block_grad", {}, {"branch": "false"}, program=lambda: _penalty_of(_cond(-1.0))),
    Case("conditional_block_grad", {}, {"branch": "true", "reads": "h twice"},
         program=lambda: _penalty_of(_square_in_branch())),
    Case("conditional_block_grad", {}, {"nested": "cond", "inner": "true"},
         program=lambda: _penalty_of(_nested_cond(1.0))),
    Case("conditional_block_grad", {}, {"nested": "cond", "inner": "false"},
         program=lambda: _penalty_of(_nested_cond(-1.0))),
    Case("while_grad", {}, {"iterations": 3}, program=lambda: _penalty_of(_while(3))),
    Case("while_grad", {}, {"nested": "cond", "branch": "true"}, program=lambda: _penalty_of(_cond_in_while(1.0))),
    Case("while_grad", {}, {"nested": "cond", "branch": "false"}, program=lambda: _penalty_of(_cond_in_while(-1.0))),
    Case("while_grad", {}, {"nested in": "cond"}, program=lambda: _penalty_of(_while_in_cond(1.0))),
    Case("conditional_block_grad", {}, {"nested": "while", "branch": "false"},
         program=lambda: _penalty_of(_while_in_cond(-1.0))),
    Case("while_grad", {}, {"nested": "while"}, program=lambda: _penalty_of(_while_in_while())),
    Case("conditional_block_grad", {}, {"nested": "cond in while"},
         program=lambda: _penalty_of(_cond_in_while_in_cond())),
    Case("while_grad", {}, {"iterations": 0}, program=lambda: _penalty_of(_while(0))),
]
