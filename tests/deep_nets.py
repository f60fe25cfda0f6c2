"""Deep training programs for the memory passes (recompute, eager accumulation), shared by their tests and
benchmarks/memory.py: an MLP of fc + relu layers (with optional dropout), a ResNet-style net of residual
conv + batch_norm blocks, and a fan-out where one var is read by many ops."""

from __future__ import annotations

import numpy as np

import gradc
from gradc.layers import ProgramBuilder


def mlp(layers: int, width: int, batch: int, dropout_every: int = 0, dtype: str = "float32"):
    """fc + relu layers, dropout after every ``dropout_every``-th, and a softmax cross entropy loss."""
    net = ProgramBuilder(seed=1)
    hidden = net.data("x", [batch, width], dtype)
    label = net.data("label", [batch, 1], "int64")
    for layer in range(layers):
        w = net.parameter(f"fc_{layer}.w_0", [width, width], dtype)
        b = net.parameter(f"fc_{layer}.b_0", [width], dtype, init="zeros")
        hidden = net.op("relu", {"X": net.op("elementwise_add", {"X": net.op("mul", {"X": hidden, "Y": w})[0],
                                                                   "Y": b})[0]})[0]
        if dropout_every and layer % dropout_every == dropout_every - 1:
            hidden = net.op("dropout", {"X": hidden}, {"dropout_prob": 0.3,
                                                       "dropout_implementation": "upscale_in_train"})[0]
    loss = net.cross_entropy_loss(hidden, label)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((batch, width)).astype(dtype), "label": rng.integers(0, width, (batch, 1))}
    return net, loss, feed


def resnet(blocks: int, channels: int, size: int, batch: int, dtype: str = "float32"):
    """A stem conv, then residual blocks relu(x + bn(conv(relu(bn(conv(x)))))), average pooling, an fc."""
    net = ProgramBuilder(seed=2)
    image = net.data("image", [batch, 3, size, size], dtype)
    label = net.data("label", [batch, 1], "int64")

    def conv_bn(x: str, cin: int, name: str) -> str:
        w = net.parameter(f"{name}.w", [channels, cin, 3, 3], dtype, scale=(2 / (9 * cin)) ** 0.5)
        y = net.op("conv2d", {"Input": x, "Filter": w}, {"paddings": [1, 1]})[0]
        stats = {slot: net.parameter(f"{name}.{slot}", [channels], dtype) for slot in ("Scale", "Bias")}
        for slot, init in (("Mean", "zeros"), ("Variance", "uniform")):
            stats[slot] = net.parameter(f"{name}.{slot}", [channels], dtype, init=init)
            net.block.var(stats[slot]).is_parameter = False
            net.block.var(stats[slot]).stop_gradient = True
        return batch_norm(net, y, stats)

    hidden = net.op("relu", {"X": conv_bn(image, 3, "stem")})[0]
    for block in range(blocks):
        inner = net.op("relu", {"X": conv_bn(hidden, channels, f"block{block}.a")})[0]
        residual = conv_bn(inner, channels, f"block{block}.b")
        hidden = net.op("relu", {"X": net.op("elementwise_add", {"X": hidden, "Y": residual})[0]})[0]
    pooled = net.op("pool2d", {"X": hidden}, {"pooling_type": "avg", "global_pooling": True, "ksize": [1, 1]})[0]
    flat = net.op("flatten_contiguous_range", {"X": pooled}, {"start_axis": 1, "stop_axis": 3})[0]
    w = net.parameter("fc.w", [channels, 10], dtype)
    loss = net.cross_entropy_loss(net.op("mul", {"X": flat, "Y": w})[0], label)
    rng = np.random.default_rng(0)
    feed = {"image": rng.standard_normal((batch, 3, size, size)).astype(dtype),
            "label": rng.integers(0, 10, (batch, 1))}
    return net, loss, feed


def batch_norm(net: ProgramBuilder, x: str, stats: dict, attrs: dict | None = None) -> str:
    """batch_norm's Y, its running statistics updated in place (MeanOut is Mean, as Paddle requires)."""
    y = net.op("batch_norm", {"X": x, **stats}, attrs, outputs=["Y"])[0]
    op = net.block.ops[-1]
    op.outputs["MeanOut"], op.outputs["VarianceOut"] = [stats["Mean"]], [stats["Variance"]]
    return y


def fan_out(readers: int, width: int, batch: int, dtype: str = "float32"):
    """One var read by ``readers`` ops: h = tanh(x W); loss = mean of the sum over i of h v_i (v_i [width, 1]
    parameters). Each reader makes a column, so the forward holds little; the backward has one part of
    h@GRAD ([batch, width]) per reader."""
    net = ProgramBuilder(seed=3)
    x = net.data("x", [batch, width], dtype)
    w = net.parameter("w", [width, width], dtype)
    shared = net.op("tanh", {"X": net.op("mul", {"X": x, "Y": w})[0]})[0]
    columns = [net.op("mul", {"X": shared, "Y": net.parameter(f"v_{i}", [width, 1], dtype)})[0]
               for i in range(readers)]
    loss = net.mean(net.op("sum", {"X": columns})[0])
    feed = {"x": np.random.default_rng(0).standard_normal((batch, width)).astype(dtype)}
    return net, loss, feed


def initial_values(net: ProgramBuilder) -> dict[str, np.ndarray]:
    """The persistable values the startup program gives."""
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    return {name: scope[name] for name in scope}
