"""Float64 building blocks for derivative tests on gradc.ProgramBuilder programs (the builder's own fc makes
float32 parameters)."""

from __future__ import annotations

from gradc.layers import ProgramBuilder


def float64_fc(net: ProgramBuilder, x: str, size: int, act: str | None = None) -> str:
    """A float64 fully connected layer with Paddle's names."""
    layer = net.unique("fc")
    w = net.parameter(f"fc_{layer}.w_0", [net.block.var(x).shape[-1], size], "float64")
    b = net.parameter(f"fc_{layer}.b_0", [size], "float64")
    out = net.op("elementwise_add", {"X": net.op("mul", {"X": x, "Y": w})[0], "Y": b})[0]
    return net.op(act, {"X": out})[0] if act else out


def weighted_sum(net: ProgramBuilder, names: list[str], feed: dict, prefix: str, rng) -> str:
    """sum over ``names`` of sum(W * var), each W a constant drawn from ``rng`` into ``feed``: a scalar whose
    gradient is W."""
    terms = []
    for name in names:
        shape = net.block.var(name).shape
        weight = net.data(f"{prefix}.{name}", shape, "float64", stop_gradient=True)
        feed[weight] = rng.standard_normal(shape)
        product = net.op("elementwise_mul", {"X": name, "Y": weight})[0]
        terms.append(net.op("reduce_sum", {"X": product}, {"reduce_all": True, "dim": []})[0])
    return net.op("sum", {"X": terms})[0]
