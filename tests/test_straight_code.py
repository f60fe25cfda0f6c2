"""A plan run as straight-line code (gradc.executor.straight): used once a plan is rerun, the same values as the
op-by-op loop bit for bit, the kernel's values and errors wherever an inline step's case does not hold, and
rebuilt when the program changes."""

import numpy as np
import pytest

import gradc
from gradc.executor import executor as executor_module
from gradc.executor import straight
from gradc.layers import ProgramBuilder
from test_direct_steps import _mlp


def _plan(executor, program):
    return next(iter(executor.plans(program.global_block).values()))


def _straight_and_loop(monkeypatch, program, feed, fetch, scope, runs=3):
    """The fetched values of ``runs`` runs through straight-line code (built at once), then of one run op by op."""
    monkeypatch.setattr(executor_module, "STRAIGHT_AFTER_RUNS", 0)
    executor = gradc.Executor()
    straight = [executor.run(program, feed, fetch, scope) for _ in range(runs)]
    assert _plan(executor, program).straight is not None
    monkeypatch.setattr(executor_module, "STRAIGHT_AFTER_RUNS", 10**9)
    looped = gradc.Executor().run(program, feed, fetch, scope)
    return straight, looped


def _assert_same(runs, expected, fetch):
    for run in runs:
        for name, ours, theirs in zip(fetch, run, expected):
            assert type(ours) is type(theirs) and ours.dtype == theirs.dtype and ours.shape == theirs.shape, name
            assert ours.tobytes() == theirs.tobytes(), name


def _scale_net(dtype="float32"):
    net = ProgramBuilder()
    h = net.data("x", [-1, 3], dtype)
    for attrs in ({"scale": 2.5, "bias": 0.5}, {"scale": 3.0, "bias": 1.0, "bias_after_scale": False},
                  {"scale": -0.1, "bias": 0.0}):
        h = net.op("scale", {"X": h}, attrs)[0]
    h = net.op("tanh", {"X": h})[0]   # no inline step: its kernel, called from the straight-line code
    return net, net.op("scale", {"X": h}, {"scale": 1e-3, "bias": 7.0})[0]


def test_a_rerun_plan_runs_as_straight_line_code_that_makes_the_numpy_calls_itself():
    net, scope, feed = _mlp()
    executor = gradc.Executor()
    calls = []
    loop = executor._loop
    executor._loop = lambda rows, *args: calls.extend(row[1].op.type for row in rows) or loop(rows, *args)
    for run in range(1, executor_module.STRAIGHT_AFTER_RUNS + 3):
        executor.run(net.program, feed, [net.loss], scope)
        assert (_plan(executor, net.program).straight is not None) == (run > executor_module.STRAIGHT_AFTER_RUNS)
    calls.clear()
    executor.run(net.program, feed, [net.loss], scope)
    assert calls == []   # every op of the step an inline or direct step
    source = straight.source_text(_plan(executor, net.program))
    assert "_X @ _Y" in source and "maximum(_X, ZERO" in source and "del V['fc_1.tmp_2']" in source
    assert "h0 = o0" in source and "_X = h0\n" in source   # the bias add's sum: a local from writer to reader


@pytest.mark.parametrize("dtype, batch", [("float32", 5), ("float32", 1), ("float64", 3)])
def test_an_mlp_step_is_bit_identical_to_the_loop(monkeypatch, dtype, batch):
    net, scope, feed = _mlp(dtype, batch)
    fetch = sorted({name for op in net.program.global_block.ops for name in op.output_names()} - {"@EMPTY@"})
    straight, looped = _straight_and_loop(monkeypatch, net.program, feed, fetch, scope)
    _assert_same(straight, looped, fetch)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_scale_chains_with_kernel_ops_between_are_bit_identical_to_the_loop(monkeypatch, dtype):
    net, out = _scale_net(dtype)
    feed = {"x": (np.random.default_rng(3).standard_normal((4, 3)) * 5).astype(dtype)}
    fetch = [out, *sorted({name for op in net.program.global_block.ops for name in op.output_names()})]
    straight, looped = _straight_and_loop(monkeypatch, net.program, feed, fetch, gradc.Scope())
    _assert_same(straight, looped, fetch)


def test_an_integer_scale_is_the_kernels_and_leaves_the_plan_to_the_loop(monkeypatch):
    monkeypatch.setattr(executor_module, "STRAIGHT_AFTER_RUNS", 0)
    net, out = _scale_net("int32")
    executor = gradc.Executor()
    ours = executor.run(net.program, {"x": np.arange(6, dtype=np.int32).reshape(2, 3)}, [out], gradc.Scope())[0]
    assert _plan(executor, net.program).straight is None and ours.dtype == np.int32   # no op with a fast case


def test_attributes_are_read_live_and_a_case_the_row_does_not_take_runs_the_kernel(monkeypatch):
    net, out = _scale_net()
    feed = {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}
    ops = net.program.global_block.ops
    executor = gradc.Executor()
    monkeypatch.setattr(executor_module, "STRAIGHT_AFTER_RUNS", 0)
    executor.run(net.program, feed, [out], gradc.Scope())
    ops[0].set_attr("scale", 4.0)   # no new revision: the code reads the attribute as the kernel does
    del ops[1].attrs["bias_after_scale"]   # gone: the kernel runs, with the definition's default
    ops[2].set_attr("scale", 2)   # an int attribute: float() of it, as the kernel
    ours = executor.run(net.program, feed, [out], gradc.Scope())[0]
    assert _plan(executor, net.program).straight is not None and executor.plans_built == 1
    monkeypatch.setattr(executor_module, "STRAIGHT_AFTER_RUNS", 10**9)
    theirs = gradc.Executor().run(net.program, feed, [out], gradc.Scope())[0]
    assert ours.tobytes() == theirs.tobytes()
    h = (feed["x"] * 4.0 + 0.5) * 3.0 + 1.0   # bias_after_scale's default is True
    assert ours.tobytes() == (np.tanh(h * 2.0 + 0.0) * 1e-3 + 7.0).tobytes()


def test_mul_of_a_3d_x_is_the_kernels(monkeypatch):
    net = ProgramBuilder(seed=1)
    x = net.data("x", [-1, 2, 4])
    mul = net.op("mul", {"X": x, "Y": net.parameter("w", [8, 3])}, {"x_num_col_dims": 1, "y_num_col_dims": 1})
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    feed = {"x": np.random.default_rng(0).standard_normal((5, 2, 4)).astype(np.float32)}
    straight, looped = _straight_and_loop(monkeypatch, net.program, feed, mul, scope)
    _assert_same(straight, looped, mul)
    assert straight[0][0].tobytes() == (feed["x"].reshape(5, 8) @ scope["w"]).tobytes()


def test_errors_are_the_kernels_after_the_code_is_built(monkeypatch):
    monkeypatch.setattr(executor_module, "STRAIGHT_AFTER_RUNS", 0)
    net, scope, feed = _mlp()
    executor = gradc.Executor()
    executor.run(net.program, feed, [net.loss], scope)
    assert _plan(executor, net.program).straight is not None
    bad = dict(feed, label=feed["label"].copy())
    bad["label"][2] = 4
    with pytest.raises(gradc.ExecutionError, match=r"cross_entropy\).*Label holds 4: a label must be in \[0, 4\)"):
        executor.run(net.program, bad, [net.loss], scope)
    scope.vars.pop("fc_1.w_0")
    with pytest.raises(gradc.ExecutionError, match=r"op 3 \(mul\) reads var 'fc_1.w_0' \(slot Y\), which has no value"):
        executor.run(net.program, feed, [net.loss], scope)


def test_nan_checks_and_outer_scopes_holding_an_output_take_the_loop(monkeypatch):
    monkeypatch.setattr(executor_module, "STRAIGHT_AFTER_RUNS", 0)
    net, out = _scale_net()
    executor = gradc.Executor()
    executor.check_finite = True
    with pytest.raises(gradc.ExecutionError, match=r"op 0 \(scale\)"):
        executor.run(net.program, {"x": np.full((1, 3), np.inf, np.float32)}, [out], gradc.Scope())
    assert _plan(executor, net.program).straight is None
    first = net.program.global_block.ops[0].output("Out")[0]
    caller = gradc.Scope()
    caller.vars[first] = np.zeros((1, 3), np.float32)
    executor.check_finite = False
    executor.run(net.program, {"x": np.ones((1, 3), np.float32)}, [out], caller)
    assert _plan(executor, net.program).straight is None and caller.vars[first].tolist() == [[3.0, 3.0, 3.0]]


def test_an_edited_program_gets_new_code(monkeypatch):
    monkeypatch.setattr(executor_module, "STRAIGHT_AFTER_RUNS", 0)
    net, out = _scale_net()
    executor = gradc.Executor()
    feed = {"x": np.ones((1, 3), np.float32)}
    before = executor.run(net.program, feed, [out], gradc.Scope())[0]
    code = _plan(executor, net.program).straight
    net.program.global_block.append_op("scale", {"X": [out]}, {"Out": [out]}, {"scale": 2.0, "bias": 0.0,
                                                                            "bias_after_scale": True})
    after = executor.run(net.program, feed, [out], gradc.Scope())[0]
    assert executor.plans_built == 2 and _plan(executor, net.program).straight is not code
    assert after.tobytes() == (before * 2.0).tobytes()
