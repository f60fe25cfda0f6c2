"""Third derivatives through the second-derivative makers' run-time-size forms (max pooling's SAME pads computed in
the program, logcumsumexp's cumsum along a dim of unknown size, a reduce's dims counted from both ends of an X of
unknown rank placed by a run-time reshape): the ops those makers emit have makers of their own,
so a third backward matches central differences."""

from __future__ import annotations

import numpy as np
import pytest

import gradc
from gradc.gradcheck import check_program
from gradc.layers import ProgramBuilder


def _squared_mean(net: ProgramBuilder, x: str) -> str:
    return net.mean(net.op("square", {"X": x})[0])


def _third(net: ProgramBuilder, loss: str, feed: dict) -> None:
    gradc.gradients(net.program, loss, ["x"])
    gradc.gradients(net.program, _squared_mean(net, "x@GRAD"), ["x"])
    check_program(net.program, feed, ["x"], loss=_squared_mean(net, "x@GRAD@2"), rtol=1e-4, atol=1e-6)


def test_third_derivatives_through_max_pooling_with_same_paddings_over_sizes_known_at_run_time():
    net = ProgramBuilder()
    x = net.data("x", [1, 2, -1, -1], "float64", stop_gradient=False)
    pooled = net.op("pool2d", {"X": x}, {"pooling_type": "max", "ksize": [3, 3], "strides": [2, 2],
                                         "padding_algorithm": "SAME"})[0]
    feed = {"x": np.random.default_rng(0).permutation(50).reshape(1, 2, 5, 5) / 10.0}   # no ties
    _third(net, _squared_mean(net, net.op("tanh", {"X": pooled})[0]), feed)


@pytest.mark.parametrize("attrs", [{"axis": 1}, {"axis": -1, "exclusive": True, "reverse": True}])
def test_third_derivatives_through_logcumsumexp_along_a_dim_of_unknown_size(attrs):
    net = ProgramBuilder()
    x = net.data("x", [2, -1], "float64", stop_gradient=False)
    weights = net.data("w", [2, 4], "float64")
    out = net.op("logcumsumexp", {"X": x}, attrs)[0]
    rng = np.random.default_rng(1)
    w = rng.standard_normal((2, 4))
    if attrs.get("exclusive"):   # the empty sum's output (the dtype's lowest value) weighs nothing
        w[:, -1] = 0.0
    loss = net.mean(net.op("elementwise_mul", {"X": out, "Y": weights})[0])
    _third(net, loss, {"x": rng.standard_normal((2, 4)), "w": w})


@pytest.mark.parametrize("op_type, attrs", [("logsumexp", {"axis": [1, -1]}), ("frobenius_norm", {"dim": [0, -1]})])
def test_third_derivatives_through_a_reduce_over_dims_from_both_ends_of_an_unknown_rank(op_type, attrs):
    """X's rank is taken away after the first backward, as a program whose shapes gradc cannot infer has it."""
    net = ProgramBuilder()
    x = net.data("x", [2, 3, 4], "float64", stop_gradient=False)
    out = net.op(op_type, {"X": x}, attrs)[0]
    gradc.gradients(net.program, _squared_mean(net, net.op("tanh", {"X": out})[0]), ["x"])
    for name in (x, out, f"{out}@GRAD"):
        net.program.global_block.var(name).shape = None
    gradc.gradients(net.program, _squared_mean(net, "x@GRAD"), ["x"])
    assert "reshape2" in [op.type for op in net.program.global_block.ops]   # the dims placed at run time
    net.program.global_block.var("x@GRAD@2").shape = [2, 3, 4]   # declared like x: for the loss's reduce_mean only
    check_program(net.program, {"x": np.random.default_rng(2).standard_normal((2, 3, 4))}, ["x"],
                  loss=_squared_mean(net, "x@GRAD@2"), rtol=1e-4, atol=1e-6)
