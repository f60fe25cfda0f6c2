"""The programs and the hand-written numpy of benchmarks/perf.py, built with gradc's public API only, so that
the same code runs against an older gradc tree (the --baseline worker).

    deep_mlp(layers)   N fc+relu layers, width 64, softmax cross entropy: Paddle's static.nn.fc program
    lenet()            conv5x5(6)-relu-maxpool-conv5x5(16)-relu-maxpool-fc120-fc84-fc10, on 28x28 images
    scale_chain(n)     n scale ops on a 1-element tensor: the executor's cost per op
"""

from __future__ import annotations

import numpy as np

import gradc
from gradc.layers import ProgramBuilder

WIDTH = 64


def deep_mlp(layers: int, width: int = WIDTH) -> ProgramBuilder:
    net = ProgramBuilder()
    hidden = net.data("x", [-1, width], stop_gradient=True)   # as paddle.static.data: no grad of the input
    label = net.data("label", [-1, 1], "int64")
    for _ in range(layers):
        hidden = net.fc(hidden, width, act="relu")
    net.loss = net.cross_entropy_loss(hidden, label)
    for op in net.startup.global_block.ops:   # Xavier's bound, as Paddle's fc: 100 layers of U(-0.1, 0.1)
        if op.type == "uniform_random":         # shrink the activations into float32's slow denormals
            bound = (6 / sum(op.attrs["shape"])) ** 0.5
            op.set_attr("min", -bound)
            op.set_attr("max", bound)
    return net


def lenet() -> ProgramBuilder:
    """The CNN of the table for gradc alone (no Paddle): the ops paddle.nn's LeNet layers emit."""
    net = ProgramBuilder()
    hidden = net.data("x", [-1, 1, 28, 28])
    label = net.data("label", [-1, 1], "int64")
    for index, (channels, pad) in enumerate(((6, 2), (16, 0))):
        in_channels = net.block.var(hidden).shape[1]
        w = net.parameter(f"conv2d_{index}.w_0", [channels, in_channels, 5, 5], scale=0.2)
        b = net.parameter(f"conv2d_{index}.b_0", [channels], init="zeros")
        hidden = net.op("conv2d", {"Input": hidden, "Filter": w}, {"paddings": [pad, pad]}, outputs=["Output"])[0]
        hidden = net.op("elementwise_add", {"X": hidden, "Y": b}, {"axis": 1})[0]
        hidden = net.op("relu", {"X": hidden})[0]
        hidden = net.op("pool2d", {"X": hidden}, {"pooling_type": "max", "ksize": [2, 2], "strides": [2, 2]})[0]
    hidden = net.op("flatten_contiguous_range", {"X": hidden}, {"start_axis": 1, "stop_axis": -1})[0]
    hidden = net.fc(net.fc(hidden, 120, act="relu"), 84, act="relu")
    net.loss = net.cross_entropy_loss(net.fc(hidden, 10), label)
    return net


def scale_chain(count: int) -> gradc.Program:
    program = gradc.Program()
    block = program.global_block
    block.create_var("v0", [1])
    for i in range(count):
        block.create_var(f"v{i + 1}", [1])
        block.append_op("scale", {"X": [f"v{i}"]}, {"Out": [f"v{i + 1}"]},
                        {"scale": 1.0001, "bias": 0.0, "bias_after_scale": True})
    return program


def scale_chain_numpy(x: np.ndarray, count: int) -> np.ndarray:
    """The numpy calls the scale kernel makes, without the executor."""
    for _ in range(count):
        x = (x * 1.0001 + 0.0).astype(x.dtype, copy=False)
    return x


def mlp_layers(program: gradc.Program) -> list[tuple[str, str]]:
    """(weight, bias) of each fc layer, in order: the Y of each mul and of the elementwise_add after it."""
    ops = program.global_block.ops
    return [(op.input("Y")[0], ops[i + 1].input("Y")[0]) for i, op in enumerate(ops)
            if op.type in ("mul", "matmul_v2") and ops[i + 1].type == "elementwise_add"]


def mlp_numpy(x: np.ndarray, label: np.ndarray, params: list[tuple[np.ndarray, np.ndarray]]):
    """Loss and every weight and bias grad of the deep MLP, written plainly."""
    hidden = [x]
    for w, b in params:
        hidden.append(np.maximum(hidden[-1] @ w + b, 0))
    logits = hidden[-1]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_prob = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    rows = np.arange(len(label))
    loss = -log_prob[rows, label[:, 0]].mean()
    d = np.exp(log_prob)
    d[rows, label[:, 0]] -= 1
    d /= len(label)
    grads = []
    for layer in range(len(params) - 1, -1, -1):
        w, _ = params[layer]
        d = d * (hidden[layer + 1] > 0)
        grads.append((hidden[layer].T @ d, d.sum(axis=0)))
        if layer:
            d = d @ w.T
    return loss, grads[::-1]
