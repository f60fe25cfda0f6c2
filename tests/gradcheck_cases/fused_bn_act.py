"""Cases for the batch norm + relu fusions (gradc.ops.fused_bn_act): channel-last X of rank 2 to 4, Y = relu(...)
of which about half is cut, so both the passed and the masked gradients are checked, and one value a channel."""

from . import Case, rng
from .second_order import second_order

r = rng(131)


def randn(*shape):
    return r.standard_normal(shape)


def _inputs(shape, add: bool) -> dict:
    c = shape[-1]
    inputs = {"X": randn(*shape), "Scale": r.uniform(0.5, 1.5, c), "Bias": randn(c) * 0.3,
              "Mean": randn(c), "Variance": r.uniform(0.5, 1.5, c)}
    return inputs | ({"Z": randn(*shape)} if add else {})


CASES = [
    Case("fused_batch_norm_act", _inputs([2, 3, 3, 4], False)),
    Case("fused_batch_norm_act", _inputs([6, 3], False), {"momentum": 0.5, "epsilon": 1e-3}),
    Case("fused_bn_add_activation", _inputs([2, 3, 4, 3], True)),
    Case("fused_bn_add_activation", _inputs([3, 5, 2], True), {"epsilon": 1e-4}),
    # one value a channel: fused_batch_norm_act passes X through; fused_bn_add_activation normalises it to 0
    Case("fused_batch_norm_act", _inputs([1, 1, 3], False)),
    Case("fused_bn_add_activation", _inputs([1, 3], True)),
    second_order("fused_batch_norm_act", _inputs([2, 3, 2, 3], False)),
    second_order("fused_batch_norm_act", _inputs([1, 3], False)),
    second_order("fused_bn_add_activation", _inputs([3, 2, 4], True)),
]
