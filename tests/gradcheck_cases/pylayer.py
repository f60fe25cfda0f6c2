"""Cases for pylayer (tests/programs.py's Net.pylayer lays it out as static_pylayer does): its user-written
backward block is the true derivative here, so the gradient it gives is checked against central differences,
and so is pylayer_grad's (the second derivative of the penalty on the first-order grads)."""

import numpy as np

import gradc
from gradc.ir import VarType
from programs import Net

from . import Case, rng

r = rng(23)


def randn(*shape):
    return r.standard_normal(shape)


def _tanh_layer(net: Net, x: str, w: str) -> list[str]:
    """y = tanh(x @ w) and z = exp(x); the backward block reads y from the forward scope:
    dh = dy * (1 - y * y), dx = dh @ w^T + dz * z, dw = x^T @ dh."""
    saved = {}

    def forward(x, w):
        saved["y"], saved["z"] = net.tanh(net.matmul(x, w)), net.exp(x)
        return [saved["y"], saved["z"]]

    def backward(dy, dz):
        y, z = saved["y"], saved["z"]
        dh = net.elementwise_mul(dy, net.scale(net.elementwise_mul(y, y), scale=-1.0, bias=1.0))
        dx = net.elementwise_add(net.op("matmul_v2", {"X": dh, "Y": w}, {"trans_y": True}), net.elementwise_mul(dz, z))
        return [dx, net.op("matmul_v2", {"X": x, "Y": dh}, {"trans_x": True})]

    return net.pylayer(forward, [x, w], backward)


def _pylayer(use_z: bool) -> dict:
    """loss = mean(y * y) (+ mean(z) when ``use_z``; else z's grad is zeros); w is a parameter."""
    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", [3, 4])
    y, z = _tanh_layer(net, x, w)
    loss = net.mean(net.elementwise_mul(y, y))
    if use_z:
        loss = net.elementwise_add(loss, net.mean(z))
    return {"program": net.program, "feed": {"x": randn(2, 3)}, "loss": loss, "wrt": ["x", "w"],
            "params": {"w": 0.5 * randn(3, 4)}}


def _tanh_of(net: Net, x: str) -> str:
    """tanh(x) with its backward dx = dy * (1 - t * t), t read from the forward scope."""
    saved = {}

    def forward(x):
        saved["t"] = net.tanh(x)
        return saved["t"]

    def backward(dy):
        t = saved["t"]
        return [net.elementwise_mul(dy, net.scale(net.elementwise_mul(t, t), scale=-1.0, bias=1.0))]

    return net.pylayer(forward, [x], backward)[0]


def _in_cond(flag: float) -> dict:
    """out = cond(flag > 0, pylayer tanh(x), 2 * x); loss = mean(out * out): the grad op runs in a branch's backward."""
    net = Net()
    x, f = net.data("x", [2, 3]), net.data("flag", [1])
    pred = net.greater_than(f, net.constant(0.0, dtype=VarType.FP64))
    out = net.cond(pred, lambda: _tanh_of(net, x), lambda: net.scale(x, scale=2.0))
    loss = net.mean(net.elementwise_mul(out, out))
    return {"program": net.program, "feed": {"x": randn(2, 3), "flag": np.array([flag])}, "loss": loss, "wrt": ["x"]}


def _in_while(n_iter: int) -> dict:
    """h = x; n_iter times: h = pylayer tanh(h @ w); loss = mean(h * h): one forward scope per iteration."""
    net = Net()
    x, w = net.data("x", [2, 3]), net.param("w", [3, 3])
    i, n = net.constant(0), net.constant(n_iter)
    h = net.copy(x)
    net.while_loop(lambda i, h: net.less_than(i, n), lambda i, h: [net.increment(i), _tanh_of(net, net.matmul(h, w))],
                   [i, h])
    loss = net.mean(net.elementwise_mul(h, h))
    return {"program": net.program, "feed": {"x": randn(2, 3)}, "loss": loss, "wrt": ["x", "w"],
            "params": {"w": 0.5 * randn(3, 3)}}


def unnamed_forward_blocks(case: dict) -> dict:
    """Each pylayer's backward block not naming its forward block (forward_block_idx unset), declaring the forward
    values it reads itself instead (else it would not verify): the pylayer op's blocks attribute pairs them."""
    program = case["program"]
    for op in [op for block in program.blocks for op in block.ops if op.type == "pylayer"]:
        forward, backward = (program.blocks[idx] for idx in op.attrs["blocks"])
        for name, var in forward.vars.items():
            backward.vars.setdefault(name, var.copy(name))
        backward.forward_block_idx = None
    return case


def _penalty_of(case: dict) -> dict:
    """The same program with its backward, and loss = the sum of the mean squares of the grads of x and w: the
    check differentiates pylayer_grad (the replayed backward block)."""
    program = case["program"]
    grads = gradc.gradients(program, case["loss"], ["x", "w"])
    net = Net()
    net.program, net.block = program, program.global_block
    return {**case, "loss": net.op("sum", {"X": [net.mean(net.square(grad)) for grad in grads]})}


CASES = [
    Case("pylayer", {}, {"outputs": "both used"}, program=lambda: _pylayer(True)),
    Case("pylayer", {}, {"outputs": "one used"}, program=lambda: _pylayer(False)),
    Case("pylayer", {}, {"inside": "cond, taken"}, program=lambda: _in_cond(1.0)),
    Case("pylayer", {}, {"inside": "cond, not taken"}, program=lambda: _in_cond(-1.0)),
    Case("pylayer", {}, {"inside": "while"}, program=lambda: _in_while(3)),
    Case("pylayer_grad", {}, {"outputs": "both used"}, program=lambda: _penalty_of(_pylayer(True))),
    Case("pylayer_grad", {}, {"outputs": "one used"}, program=lambda: _penalty_of(_pylayer(False))),
    Case("pylayer_grad", {}, {"backward block": "names no forward block"},
         program=lambda: _penalty_of(unnamed_forward_blocks(_pylayer(True)))),
]
