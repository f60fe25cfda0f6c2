"""Cases for the tensor-array ops. An array is no input check_op can feed, so each case builds a small
program (tests/programs.py) that writes, reads and joins arrays, and checks it end to end: slots read
twice (their grads add up), tensor_array_to_tensor in both modes and on several axes, and a while loop that
carries an array of states the way nn.RNN does, with a slot read both inside and after the loop."""


from gradc.ir import VarType
from programs import Net

from . import Case, rng

r = rng(12)


def randn(*shape):
    return r.standard_normal(shape)


def array(net: Net, like: str) -> str:
    """A DENSE_TENSOR_ARRAY var of ``like``'s element shape (created by its first write)."""
    name = net.tmp(net.shape(like), prefix="array")
    net.block.var(name).type = VarType.DENSE_TENSOR_ARRAY
    return name


def write(net: Net, x: str, i: str, out: str) -> str:
    net.block.append_op("write_to_array", {"X": [x], "I": [i]}, {"Out": [out]})
    return out


def read(net: Net, a: str, i: str) -> str:
    return net.op("read_from_array", {"X": a, "I": i})


def to_tensor(net: Net, a: str, **attrs) -> str:
    return net.op("tensor_array_to_tensor", {"X": a}, attrs)


def _join(axis: int, use_stack: bool):
    """A = [x0, tanh(x1)]; loss = mean(t2t(A)^2) + mean(A[1] * A[1]) (slot 1 read twice, plus the join)."""
    net = Net()
    x0, x1 = net.data("x0", [2, 3]), net.data("x1", [2, 3])
    a = array(net, x0)
    write(net, x0, net.constant(0), a)
    one = net.constant(1)
    write(net, net.tanh(x1), one, a)
    joined = to_tensor(net, a, axis=axis, use_stack=use_stack)
    loss = net.elementwise_add(net.mean(net.elementwise_mul(joined, joined)),
                               net.mean(net.elementwise_mul(read(net, a, one), read(net, a, one))))
    return {"program": net.program, "feed": {"x0": randn(2, 3), "x1": randn(2, 3)}, "loss": loss,
            "wrt": ["x0", "x1"]}


def _states_loop(steps: int):
    """S[0] = h0; while i < steps: S[i + 1] = tanh(S[i] @ w + b); loss = mean(stack(S) * c) + mean(S[steps]^2)."""
    net = Net()
    h0, w, b = net.data("h0", [2, 3]), net.param("w", [3, 3]), net.param("b", [3])
    c = net.data("c", [steps + 1, 2, 3])
    i, n = net.constant(0), net.constant(steps)
    states = array(net, h0)
    write(net, h0, i, states)

    def body(i):
        h = net.elementwise_add(net.tanh(net.matmul(read(net, states, i), w)), b)
        write(net, h, net.increment(i), states)
        return [i]

    net.while_loop(lambda i: net.less_than(i, n), body, [i])
    stacked = to_tensor(net, states, axis=0, use_stack=True)
    last = read(net, states, n)
    loss = net.elementwise_add(net.mean(net.elementwise_mul(stacked, c)), net.mean(net.elementwise_mul(last, last)))
    return {"program": net.program, "feed": {"h0": randn(2, 3), "c": randn(steps + 1, 2, 3)}, "loss": loss,
            "wrt": ["h0", "w", "b"], "params": {"w": 0.6 * randn(3, 3), "b": randn(3)}}


CASES = [
    Case("write_to_array", {}, {"join": "concat axis 0"}, program=lambda: _join(0, False)),
    Case("read_from_array", {}, {"join": "concat axis -1"}, program=lambda: _join(-1, False)),
    Case("tensor_array_to_tensor", {}, {"use_stack": True, "axis": 1}, program=lambda: _join(1, True)),
    Case("tensor_array_to_tensor", {}, {"use_stack": True, "axis": -1}, program=lambda: _join(-1, True)),
    Case("tensor_array_to_tensor", {}, {"use_stack": False, "axis": 1}, program=lambda: _join(1, False)),
    Case("while", {}, {"array": "states", "iterations": 3}, program=lambda: _states_loop(3)),
    Case("write_to_array", {}, {"array": "states", "iterations": 0}, program=lambda: _states_loop(0)),
]
