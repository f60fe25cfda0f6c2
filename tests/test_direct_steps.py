"""The executor's direct steps (gradc.executor.direct): the same values as the kernels, bit for bit, in the cases
they take and in those they leave to the kernel; the kernel's errors; stores where each var lives."""

import numpy as np
import pytest

import gradc
from gradc.executor import KERNELS
from gradc.ir import FLOAT_DTYPES, to_var_type
from gradc.layers import ProgramBuilder


def _mlp(dtype="float32", batch=5):
    net = ProgramBuilder(seed=2)
    x = net.data("x", [-1, 6], dtype)
    label = net.data("label", [-1, 1], "int64")
    hidden = net.fc(net.fc(x, 6, act="relu"), 4, act="relu")
    net.loss = net.cross_entropy_loss(hidden, label)
    for var in net.program.global_block.vars.values():   # parameters and temporaries in the data's dtype
        if var.dtype in FLOAT_DTYPES:
            var.dtype = to_var_type(dtype)
    gradc.append_backward(net.program, net.loss)
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    for name, value in scope.vars.items():
        scope.vars[name] = value.astype(dtype)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((batch, 6)).astype(dtype), "label": rng.integers(0, 4, (batch, 1))}
    return net, scope, feed


def _run_both(monkeypatch, program, scope, feed, fetch):
    """The values with direct steps, then with every op through its kernel."""
    executor = gradc.Executor()
    direct = [executor.run(program, feed, fetch, scope) for _ in range(2)]
    plan = next(iter(executor.plans(program.global_block).values()))
    monkeypatch.setattr("gradc.executor.plan.direct_step", lambda kernel, ctx, writes: None)
    generic = gradc.Executor().run(program, feed, fetch, scope)
    return plan, direct, generic


@pytest.mark.parametrize("dtype, batch", [("float32", 5), ("float32", 1), ("float64", 3)])
def test_an_mlp_step_is_bit_identical_to_the_kernels(monkeypatch, dtype, batch):
    net, scope, feed = _mlp(dtype, batch)
    block = net.program.global_block
    fetch = sorted({name for op in block.ops for name in op.output_names()} - {"@EMPTY@"})
    plan, direct, generic = _run_both(monkeypatch, net.program, scope, feed, fetch)
    used = {step.ctx.op.type for step in plan.steps if step.direct}
    assert used == {"mul", "mul_grad", "elementwise_add", "elementwise_add_grad", "relu", "relu_grad", "fill_constant",
                    "softmax_with_cross_entropy", "softmax_with_cross_entropy_grad", "reduce_mean", "reduce_mean_grad"}
    for run in direct:
        for name, ours, theirs in zip(fetch, run, generic):
            assert ours.dtype == theirs.dtype and ours.tobytes() == theirs.tobytes(), name


def test_cases_left_to_the_kernel_give_its_values(monkeypatch):
    """mul of a 3-D X (x_num_col_dims 2), a bias added by axis 1 (numpy adds to the last), relu of a 0-d mean."""
    net = ProgramBuilder(seed=4)
    x = net.data("x", [-1, 3, 4])
    h = net.op("mul", {"X": x, "Y": net.parameter("w", [4, 3])}, {"x_num_col_dims": 2, "y_num_col_dims": 1})[0]
    h = net.op("relu", {"X": net.op("elementwise_add", {"X": h, "Y": net.parameter("b", [3])}, {"axis": 1})[0]})[0]
    m = net.op("relu", {"X": net.op("reduce_mean", {"X": h}, {"reduce_all": True, "dim": []})[0]})[0]
    net.loss = net.mean(net.op("elementwise_add", {"X": h, "Y": m}, {"axis": -1})[0])
    gradc.append_backward(net.program, net.loss)
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    feed = {"x": np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float32)}
    fetch = [net.loss, "w@GRAD", "b@GRAD", m]
    _, direct, generic = _run_both(monkeypatch, net.program, scope, feed, fetch)
    for ours, theirs in zip(direct[1], generic):
        assert ours.shape == theirs.shape and ours.tobytes() == theirs.tobytes()


def test_a_missing_value_is_reported_by_the_kernel():
    net, scope, feed = _mlp()
    scope.vars.pop("fc_1.w_0")
    with pytest.raises(gradc.ExecutionError, match=r"op 3 \(mul\) reads var 'fc_1.w_0' \(slot Y\), which has no value"):
        gradc.Executor().run(net.program, feed, [net.loss], scope)


def test_an_output_var_the_caller_holds_is_written_there():
    net, scope, feed = _mlp()
    scope.vars["fc_0.tmp_0"] = np.zeros((5, 6), np.float32)   # a mul's output, held by the caller's scope
    gradc.Executor().run(net.program, feed, [net.loss], scope)
    expected = feed["x"] @ scope.vars["fc_0.w_0"]
    assert scope.vars["fc_0.tmp_0"].tobytes() == expected.tobytes()


def test_a_replaced_kernel_runs_instead_of_the_direct_step(monkeypatch):
    net, scope, feed = _mlp()
    calls = []
    relu = KERNELS["relu"]
    monkeypatch.setitem(KERNELS, "relu", lambda k: calls.append(k.op) or relu(k))
    gradc.Executor().run(net.program, feed, [net.loss], scope)
    assert len(calls) == 2


@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_a_loss_with_ignored_labels_is_the_kernels(monkeypatch, ignore_index):
    net, scope, feed = _mlp(batch=6)
    for op in net.program.global_block.ops:
        if op.type.startswith("softmax_with_cross_entropy"):
            op.set_attr("ignore_index", ignore_index)
    feed["label"] = np.array([[0], [2], [1], [2], [3], [0]])
    fetch = [net.loss, "fc_0.w_0@GRAD", "fc_1.tmp_2@GRAD"]
    _, direct, generic = _run_both(monkeypatch, net.program, scope, feed, fetch)
    for ours, theirs in zip(direct[1], generic):
        assert ours.tobytes() == theirs.tobytes()


@pytest.mark.parametrize("label", [4, -1])
def test_a_label_out_of_range_is_reported_by_the_kernel(label):
    net, scope, feed = _mlp()
    feed["label"][2] = label
    message = rf"cross_entropy\).*Label holds {label}: a label must be in \[0, 4\)"
    with pytest.raises(gradc.ExecutionError, match=message):
        gradc.Executor().run(net.program, feed, [net.loss], scope)


def test_a_float16_mean_is_summed_in_float32_as_the_kernels():
    net = ProgramBuilder()
    x = net.data("x", [-1, 1000], "float16")
    loss = net.op("reduce_mean", {"X": x}, {"reduce_all": True, "dim": []})[0]
    net.program.global_block.var(loss).dtype = to_var_type("float16")
    feed = {"x": (np.random.default_rng(0).standard_normal((2, 1000)) * 3).astype(np.float16)}
    assert np.add.reduce(feed["x"], axis=(0, 1)) / 2000 != np.mean(feed["x"])   # a float16 sum rounds otherwise
    executor = gradc.Executor()
    for _ in range(3):
        (mean,) = executor.run(net.program, feed, [loss])
        assert mean.dtype == np.float16 and mean == np.mean(feed["x"])
