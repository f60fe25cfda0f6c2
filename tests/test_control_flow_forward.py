"""Comparison, logical and increment ops, a conditional block on a tensor condition, and a loop's memory, run
forward."""

import gc
import tracemalloc

import numpy as np
import pytest

import gradc
from gradc.ir import VarType
from programs import Net


def run_forward(net, feed, fetch):
    return gradc.Executor().run(net.program, feed, fetch, gradc.Scope())


@pytest.mark.parametrize("type, fn", [("less_than", np.less), ("less_equal", np.less_equal),
                                      ("greater_than", np.greater), ("greater_equal", np.greater_equal),
                                      ("equal", np.equal), ("not_equal", np.not_equal)])
def test_comparisons_broadcast_with_paddles_axis(type, fn):
    x, y = np.array([[[0, 1], [2, 2], [3, 0]]] * 2, np.float64), np.array([1.0, 2.0, 0.0])
    net = Net()
    out = net.op(type, {"X": net.data("x", [2, 3, 2]), "Y": net.data("y", [3])}, {"axis": 1})
    assert net.block.var(out).dtype == VarType.BOOL and net.block.var(out).shape == [2, 3, 2]
    (got,) = run_forward(net, {"x": x, "y": y}, [out])
    np.testing.assert_array_equal(got, fn(x, y[:, None]))


@pytest.mark.parametrize("type, fn", [("logical_and", np.logical_and), ("logical_or", np.logical_or),
                                      ("logical_xor", np.logical_xor)])
def test_logical_ops(type, fn):
    x, y = np.array([True, True, False, False]), np.array([True, False, True, False])
    net = Net()
    out = net.op(type, {"X": net.data("x", [4], VarType.BOOL), "Y": net.data("y", [4], VarType.BOOL)})
    (got,) = run_forward(net, {"x": x, "y": y}, [out])
    np.testing.assert_array_equal(got, fn(x, y))
    net = Net()
    (got,) = run_forward(net, {"x": x}, [net.logical_not(net.data("x", [4], VarType.BOOL))])
    np.testing.assert_array_equal(got, ~x)


def test_increment_keeps_the_dtype_and_comparisons_have_no_gradient():
    """(increment's gradient is the identity: tests/test_activation_math_family.py)"""
    net = Net()
    i = net.constant(3)
    net.increment(i, step=2.0)
    (got,) = run_forward(net, {}, [i])
    assert got.dtype == np.int64 and got.tolist() == [5]
    for type in ("less_than", "equal", "logical_and", "logical_not"):
        assert not gradc.registry.get(type).differentiable


@pytest.mark.parametrize("cond, runs", [(np.zeros((0,)), False), (np.ones((2,)), True)])
def test_a_non_scalar_condition_runs_the_block_when_it_is_not_empty(cond, runs):
    net = Net()
    c, x = net.data("c", [-1]), net.data("x", [2])
    out = net.data("out", [2])
    with net.sub_block() as body:
        net.assign(net.scale(x, scale=3.0), out)
    op = net.block.append_op("conditional_block", {"Cond": [c], "Input": [x]}, {"Out": [out], "Scope": [net.scopes()]},
                             {"is_scalar_condition": False})
    op.set_attr("sub_block", body.idx, gradc.ir.AttrType.BLOCK)
    (got,) = run_forward(net, {"c": cond, "x": np.array([1.0, 2.0]), "out": np.zeros(2)}, [out])
    np.testing.assert_array_equal(got, [3.0, 6.0] if runs else [0.0, 0.0])


def loop_with_a_branch(net, x, iterations):
    """A while loop whose body holds a conditional block, each iteration making a temporary of x's size."""
    i = net.constant(0, dtype=VarType.INT64)
    acc = net.constant(0.0, shape=(), dtype=VarType.FP32)

    def body(i, acc):
        big = net.cond(net.op("less_than", {"X": i, "Y": net.constant(iterations, dtype=VarType.INT64)}),
                       lambda: net.op("scale", {"X": x}, {"scale": 2.0}), lambda: net.op("scale", {"X": x}))
        total = net.op("reduce_sum", {"X": big}, {"reduce_all": True, "dim": [], "keep_dim": False})
        return [net.increment(i), net.op("elementwise_add", {"X": acc, "Y": total})]

    limit = net.constant(iterations, dtype=VarType.INT64)
    return net.while_loop(lambda i, acc: net.op("less_than", {"X": i, "Y": limit}), body, [i, acc])


def test_a_forward_run_keeps_no_iteration_scopes():
    """Without a grad op to replay them, a loop's iterations and its body's branches are not kept: their values go
    as the loop moves on (a conditional block's scope inside the body had made each iteration a reference cycle,
    held until a full collection: a table recognizer's 500-step decoder reached 20 GB)."""
    net = Net("float32")
    x = net.data("x", [256, 1024])   # 1 MiB
    steps, total = loop_with_a_branch(net, x, 40)
    feed = {"x": np.ones((256, 1024), np.float32)}
    gc.collect()
    gc.disable()   # only what references hold counts, not when the collector happens to run
    try:
        tracemalloc.start()
        scope = gradc.Scope()
        (value,) = gradc.Executor().run(net.program, feed, [total], scope)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    finally:
        gc.enable()
    assert value == 40 * 2 * 256 * 1024
    assert peak < 12 * 2**20, f"{peak / 2**20:.1f} MiB at the peak: iterations were kept"
