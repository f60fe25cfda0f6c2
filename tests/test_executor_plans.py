"""The executor's plans: a value whose later readers need only its shape is kept as a zero-byte stub, results
and errors are those of reading every value; each output is stored where its var lives; convolution in batch
slices and max pooling on strided views give the general kernels' results in a whole training step; the collector is
paused through compiling and back on after."""

import gc

import numpy as np
import pytest

import gradc
from gradc.executor import KERNELS
from gradc.executor import plan as plan_module
from gradc.executor.kernels import SHAPE_ONLY, pool_windows
from gradc.executor.kernels import conv as conv_kernels
from gradc.executor.liveness import deaths
from gradc.layers import ProgramBuilder


def _trained_net():
    net = ProgramBuilder(seed=3)
    x = net.data("x", [-1, 4])
    label = net.data("label", [-1, 1], "int64")
    hidden = net.fc(net.fc(x, 5, act="relu"), 3)
    loss = net.cross_entropy_loss(hidden, label)
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    pairs = gradc.append_backward(net.program, loss)
    feed = {"x": np.linspace(-1, 1, 24, dtype=np.float32).reshape(6, 4), "label": np.arange(6).reshape(6, 1) % 3}
    return net.program, scope, feed, [loss] + [grad for _, grad in pairs]


def test_shape_only_readers_get_stubs_and_the_same_results(monkeypatch):
    program, scope, feed, fetch = _trained_net()
    seen = []
    add_grad = KERNELS["elementwise_add_grad"]
    monkeypatch.setitem(KERNELS, "elementwise_add_grad", lambda k: seen.append(k.x("X")) or add_grad(k))
    stubbed = gradc.Executor().run(program, feed, fetch, scope)
    assert seen and all(x.strides == (0,) * x.ndim and not x.flags.writeable for x in seen)   # no buffer held
    monkeypatch.setattr("gradc.executor.liveness.SHAPE_ONLY", {})
    seen.clear()
    whole = gradc.Executor().run(program, feed, fetch, scope)
    assert seen and all(x.strides != (0,) * x.ndim for x in seen)
    for ours, theirs in zip(stubbed, whole):
        assert ours.tobytes() == theirs.tobytes()


def test_fetched_and_value_read_vars_are_never_stubbed():
    program, _, _, _ = _trained_net()
    block = program.global_block
    mul_out = next(op.output("Out")[0] for op in block.ops if op.type == "mul")
    frees, shrinks = deaths(block, frozenset())
    assert any(mul_out in names for names in shrinks)   # read by elementwise_add, then only its shape
    frees, shrinks = deaths(block, frozenset({mul_out}))
    assert not any(mul_out in names for names in shrinks + frees)
    assert SHAPE_ONLY["elementwise_add_grad"] == {"X", "Y"}
    assert deaths(block, None) == ([[] for _ in block.ops], [[] for _ in block.ops])   # a sub-block keeps all


def test_the_collector_is_paused_while_compiling_and_back_after(monkeypatch):
    states = []
    emit = gradc.backward.emit_grad_ops
    monkeypatch.setattr("gradc.backward.emit_grad_ops", lambda job: states.append(gc.isenabled()) or emit(job))
    net = ProgramBuilder()
    x = net.data("x", [2])
    gradc.append_backward(net.program, net.mean(net.op("tanh", {"X": x})[0]))
    assert states == [False] and gc.isenabled()
    gc.disable()
    try:   # a caller that manages the collector itself keeps it as it was
        gradc.io.parse_program(gradc.io.serialize(net.program))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_stores_go_where_each_var_lives(monkeypatch):
    """The plan's inline store: a var the caller's scope holds is updated there, a new persistable var goes to
    the caller's scope, a temporary stays in the run's scope; a result in another dtype is cast as declared."""
    net = ProgramBuilder()
    x = net.data("x", [2])
    held = net.op("scale", {"X": x}, {"scale": 2.0}, names=["held"])[0]
    net.block.var(held).persistable = False
    kept = net.op("scale", {"X": held}, {"scale": 3.0}, names=["kept"])[0]
    net.block.var(kept).persistable = True
    temp = net.op("scale", {"X": kept}, {"scale": 0.5}, names=["temp"])[0]
    scope = gradc.Scope()
    scope.vars[held] = np.zeros(2, np.float32)
    executor = gradc.Executor()
    for step in (1, 2):   # the second run goes the checked, inline path
        feed = {"x": np.array([1, 2], np.float32) * step}
        out = executor.run(net.program, feed, [temp], scope)[0]
        assert scope.vars[held].tolist() == [2 * step, 4 * step] and scope.vars[kept].tolist() == [6 * step, 12 * step]
        assert temp not in scope.vars and out.tolist() == [3 * step, 6 * step] and out.dtype == np.float32
    scope.vars.pop(kept)
    monkeypatch.setitem(KERNELS, "scale", lambda k: {"Out": k.x("X").astype(np.float16) * np.float16(k.attr("scale"))})
    for _ in range(2):
        assert executor.run(net.program, feed, [temp], scope)[0].dtype == np.float32
    assert scope.vars[kept].dtype == np.float32 and scope.vars[kept].tolist() == [12, 24] and executor.plans_built == 1


def _lenet(batch: int, pool: dict):
    """conv 5x5 (pad 2) + relu + max pool + fc, its loss and grads; feed and fetch list."""
    net = ProgramBuilder(seed=5)
    image = net.data("image", [-1, 1, 12, 12])
    label = net.data("label", [-1, 1], "int64")
    w = net.parameter("conv.w", [6, 1, 5, 5], scale=0.3)
    conv = net.op("relu", {"X": net.op("conv2d", {"Input": image, "Filter": w}, {"paddings": [2, 2]})[0]})[0]
    pooled = net.op("pool2d", {"X": conv}, {"pooling_type": "max", **pool})[0]
    flat = net.op("flatten_contiguous_range", {"X": pooled}, {"start_axis": 1, "stop_axis": -1})[0]
    loss = net.cross_entropy_loss(net.fc(flat, 10), label)
    net.block.var("image").stop_gradient = False
    gradc.append_backward(net.program, loss)
    rng = np.random.default_rng(1)
    feed = {"image": rng.standard_normal((batch, 1, 12, 12), dtype=np.float32),
            "label": rng.integers(0, 10, (batch, 1))}
    grads = [name for name in net.block.vars if name.endswith("@GRAD") and net.block.find_var(name[:-5])
             and (net.block.var(name[:-5]).is_parameter or name == "image@GRAD")]
    return net, feed, [loss] + sorted(grads)


def _run(net, feed, fetch):
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    return dict(zip(fetch, gradc.Executor().run(net.program, feed, fetch, scope)))


@pytest.mark.parametrize("pool", [{"ksize": [2, 2], "strides": [2, 2]},                       # LeNet's: tiles
                                  {"ksize": [3, 3], "strides": [2, 2], "paddings": [1, 1]}])   # ResNet's: overlaps
def test_conv_slices_and_pool_taps_in_a_training_step(monkeypatch, pool):
    """A LeNet-like step whose convolution goes in batch slices and whose pools run on strided views: the same bits
    as the general kernels, except the filter grad (a sum over the slices) within float32 rounding."""
    net, feed, fetch = _lenet(batch=64, pool=pool)
    monkeypatch.setattr(conv_kernels, "COLS_BUDGET", 1 << 40)
    monkeypatch.setattr(pool_windows, "tap_geometry", lambda *args: None)
    general = _run(net, feed, fetch)
    monkeypatch.undo()
    calls = []
    for name in ("taps_max", "taps_max_grad"):
        real = getattr(pool_windows, name)
        monkeypatch.setattr(pool_windows, name, lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    slices = conv_kernels._batch_slices
    monkeypatch.setattr(conv_kernels, "_batch_slices", lambda *a: calls.append(len(slices(*a))) or slices(*a))
    monkeypatch.setattr(conv_kernels, "COLS_BUDGET", 1 << 19)   # 14,400 bytes of columns a sample: slices of 32
    fast = _run(net, feed, fetch)
    assert {"taps_max", "taps_max_grad"} <= set(calls) and min(c for c in calls if type(c) is int) > 1
    for name in fetch:
        if name == "conv.w@GRAD":
            np.testing.assert_allclose(fast[name], general[name], rtol=2e-6, atol=1e-6 * np.abs(general[name]).max())
        else:
            assert fast[name].tobytes() == general[name].tobytes(), name
    assert "conv.w@GRAD" in fetch and "image@GRAD" in fetch and len(fetch) == 5


def test_a_second_fetch_set_of_the_same_program_is_planned_without_checking_it_again(monkeypatch):
    """The checks depend on the program alone: a plan of other fetches (a training loop that fetches the gradients
    on its first step only) reuses those the first plan passed, until the program changes."""
    program, scope, feed, fetch = _trained_net()
    checked = []
    check = plan_module.check_block
    monkeypatch.setattr(plan_module, "check_block", lambda block: checked.append(block.idx) or check(block))
    executor = gradc.Executor()
    everything = executor.run(program, feed, fetch, scope)
    loss_only = executor.run(program, feed, fetch[:1], scope)
    assert checked == [0] and executor.plans_built == 2
    np.testing.assert_array_equal(loss_only[0], everything[0])
    program.global_block.ops[-1].attrs["op_role"] = 1   # an edit the program is told of
    program.mark_changed()
    executor.run(program, feed, fetch[:1], scope)
    assert checked == [0, 0] and executor.plans_built == 3
