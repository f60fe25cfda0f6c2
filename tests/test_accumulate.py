"""The eager-accumulation pass (gradc.passes.accumulate): each part of a shared gradient is added to a running
sum as soon as it is written; same numbers bit for bit, fewer parts alive at once."""

from __future__ import annotations

import tracemalloc

import numpy as np
from click.testing import CliRunner

import gradc
from deep_nets import fan_out, initial_values, resnet
from gradc.cli import cli
from gradc.passes import EagerAccumulationPass
from programs import Net


def _peak_and_results(program, feed, fetch, values):
    executor, scope = gradc.Executor(), gradc.Scope()
    for name, value in values.items():
        scope[name] = value.copy()
    executor.run(program, feed, fetch, scope)
    tracemalloc.start()
    results = executor.run(program, feed, fetch, scope)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, results


def test_a_var_read_by_50_ops_sums_its_gradient_as_it_goes():
    net, loss, feed = fan_out(readers=50, width=64, batch=64)
    pairs = gradc.append_backward(net.program, loss)
    fetch = [loss] + [grad for _, grad in pairs]
    values = initial_values(net)
    eager = net.program.clone()
    assert EagerAccumulationPass()(eager) == "1 gradient sums made running sums"
    adds = [op for op in eager.global_block.ops if op.type == "sum" and op.output("Out")[0].endswith("@GRAD")]
    assert len(adds) == 49 and all(op.input("X")[0] == op.output("Out")[0] for op in adds)
    lazy_peak, lazy = _peak_and_results(net.program, feed, fetch, values)
    eager_peak, same = _peak_and_results(eager, feed, fetch, values)
    for name, a, b in zip(fetch, lazy, same):
        assert np.array_equal(a, b), name
    part = 64 * 64 * 4
    assert lazy_peak > 40 * part and eager_peak < 10 * part, (lazy_peak, eager_peak)


def test_eager_sums_in_a_resnet_and_a_loop_body_give_the_same_gradients():
    net, loss, feed = resnet(blocks=2, channels=3, size=4, batch=2)
    pairs = gradc.append_backward(net.program, loss)
    fetch = [grad for _, grad in pairs]
    eager = net.program.clone()
    assert EagerAccumulationPass()(eager).startswith("2 ")   # the input of each residual block
    values = initial_values(net)
    for a, b in zip(_peak_and_results(net.program, feed, fetch, values)[1],
                    _peak_and_results(eager, feed, fetch, values)[1]):
        assert np.array_equal(a, b)

    loop = Net()
    x, w = loop.data("x", [2, 3]), loop.param("w", [3, 3])
    i, n = loop.constant(0), loop.constant(3)
    h = loop.copy(x)
    loop.while_loop(lambda i, h: loop.less_than(i, n),
                    lambda i, h: [loop.increment(i), loop.elementwise_mul(loop.tanh(loop.matmul(h, w)), h)], [i, h])
    pairs = gradc.append_backward(loop.program, loop.mean(h))
    eager = loop.program.clone()
    assert EagerAccumulationPass()(eager) != "0 gradient sums made running sums"
    rng = np.random.default_rng(1)
    values, feed = {"w": rng.standard_normal((3, 3))}, {"x": rng.standard_normal((2, 3))}
    for a, b in zip(_peak_and_results(loop.program, feed, ["w@GRAD"], values)[1],
                    _peak_and_results(eager, feed, ["w@GRAD"], values)[1]):
        assert np.array_equal(a, b)


def test_compile_accumulate_eager_from_the_command_line(tmp_path):
    net, loss, feed = fan_out(readers=5, width=4, batch=3)
    gradc.save(net.program, str(tmp_path / "forward.pb"))
    result = CliRunner().invoke(cli, ["compile", str(tmp_path / "forward.pb"), "-o", str(tmp_path / "train.pb"),
                                      "--accumulate", "eager"])
    assert result.exit_code == 0, result.output
    assert "eager-accumulation: 1 gradient sums made running sums" in result.output
    program = gradc.load(str(tmp_path / "train.pb"))
    assert sum(op.type == "sum" and op.input("X")[0] == op.output("Out")[0] for op in program.global_block.ops) == 4
