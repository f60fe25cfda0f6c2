"""The recompute pass (gradc.passes.recompute): activations dropped after the forward and recomputed in the
backward give the same gradients bit for bit, with a lower peak; dropout keeps its mask."""

from __future__ import annotations

import json
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from click.testing import CliRunner

import gradc
from deep_nets import initial_values, mlp, resnet
from fixtures import DATA
from gradc.cli import cli
from gradc.executor import KERNELS
from gradc.passes import RecomputePass
from gradc.passes.base import PassConditionError


def _run(program, feed, fetch, values, measure=False):
    scope = gradc.Scope()
    for name, value in values.items():
        scope[name] = value.copy()
    executor = gradc.Executor()
    if not measure:
        return executor.run(program, feed, fetch, scope), scope
    executor.run(program, feed, fetch, scope)   # plans first: measure a steady-state step
    tracemalloc.start()
    results = executor.run(program, feed, fetch, scope)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return results, peak


def _trained(net, loss):
    pairs = gradc.append_backward(net.program, loss)
    return [loss] + [grad for _, grad in pairs]


def test_auto_recompute_of_a_deep_mlp_gives_the_same_gradients_bit_for_bit_with_a_lower_peak():
    net, loss, feed = mlp(layers=30, width=32, batch=256)
    fetch = _trained(net, loss)
    values = initial_values(net)
    plain, plain_peak = _run(net.program, feed, fetch, values, measure=True)
    program = net.program.clone()
    summary = gradc.recompute(program)
    assert "ops recomputed" in summary
    assert any(name.endswith("@RECOMPUTE") for op in program.global_block.ops for name in op.output_names())
    again, peak = _run(program, feed, fetch, values, measure=True)
    for name, a, b in zip(fetch, plain, again):
        assert np.array_equal(a, b), name
    assert peak < plain_peak / 2, (peak, plain_peak)


def test_explicit_checkpoints_cut_the_forward_where_asked():
    net, loss, feed = mlp(layers=6, width=8, batch=4)
    fetch = _trained(net, loss)
    values = initial_values(net)
    program = net.program.clone()
    relus = [op.output("Out")[0] for op in program.global_block.ops if op.type == "relu"]
    assert RecomputePass([relus[1], relus[3]])(program).startswith("3 segments")
    copies = [op for op in program.global_block.ops if any("@RECOMPUTE" in n for n in op.output_names())]
    assert {op.output("Out")[0].removesuffix("@RECOMPUTE") for op in copies if op.type == "relu"} == \
        {relus[0], relus[2]}   # the last segment (after relus[3]) runs its backward first: not recomputed
    for a, b in zip(_run(net.program, feed, fetch, values)[0], _run(program, feed, fetch, values)[0]):
        assert np.array_equal(a, b)


def test_dropout_in_a_recomputed_segment_reuses_its_mask(monkeypatch):
    """Dropout draws a new mask at every run (no fixed seed): it must run once per step, and the
    recomputation reads the Mask it drew."""
    net, loss, feed = mlp(layers=8, width=8, batch=16, dropout_every=2)
    fetch = _trained(net, loss)
    values = initial_values(net)
    program = net.program.clone()
    RecomputePass([op.output("Out")[0] for op in program.global_block.ops if op.type == "relu"][::3])(program)
    copies = [op.type for op in program.global_block.ops if any("@RECOMPUTE" in n for n in op.output_names())]
    assert "dropout_grad" in copies and "dropout" not in copies
    draws = []
    dropout = KERNELS["dropout"]

    def counted(k):   # mask number n of every step is the same across programs, and changes per draw
        result = dropout(k)
        draws.append(1)
        rng = np.random.default_rng(len(draws) % 4)
        result["Mask"] = (rng.random(result["Mask"].shape) > 0.3).astype(np.uint8)
        result["Out"] = k.x("X") * result["Mask"] * (1 / 0.7)
        return result

    monkeypatch.setitem(KERNELS, "dropout", counted)
    plain = _run(net.program, feed, fetch, values)[0]
    draws.clear()
    again = _run(program, feed, fetch, values)[0]
    assert len(draws) == 4, "each dropout runs once per step"
    for name, a, b in zip(fetch, plain, again):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7, err_msg=name)


def test_a_resnet_with_batch_norm_recomputes_without_updating_the_statistics_twice():
    net, loss, feed = resnet(blocks=3, channels=4, size=6, batch=2)
    fetch = _trained(net, loss)
    values = initial_values(net)
    program = net.program.clone()
    gradc.recompute(program)
    assert any(op.type == "batch_norm" and "@RECOMPUTE" in op.output("Y")[0] for op in program.global_block.ops)
    (plain, plain_scope), (again, scope) = _run(net.program, feed, fetch, values), _run(program, feed, fetch, values)
    for name, a, b in zip(fetch, plain, again):
        assert np.array_equal(a, b), name
    for name in values:
        assert np.array_equal(plain_scope[name], scope[name]), f"{name} was updated differently"


@pytest.mark.parametrize("trans_y", [True, False])
def test_a_matmul_by_a_vector_recomputes_with_the_same_gradients(trans_y):
    """Paddle's weighted soft-label cross entropy multiplies by a weight vector (matmul_v2 with a 1-D Y, whose
    transpose flag changes nothing), whose contraction is its only dim: the cost estimate read the
    second-to-last and failed."""
    case = DATA / "layers" / "cross_entropy_soft_label_weight"
    program = gradc.load(case / "forward.pb")
    for op in program.global_block.ops:
        if op.type == "matmul_v2":
            op.set_attr("trans_y", trans_y)
    loss = json.loads((case / "meta.json").read_text())["loss"]
    fetch = [loss, *(grad for _, grad in gradc.append_backward(program, loss, parameter_list=["x"]))]
    recomputed = program.clone()
    assert "ops recomputed" in gradc.recompute(recomputed) and recomputed.num_ops() > program.num_ops()
    with np.load(case / "feed.npz") as feed:
        feed = dict(feed)
    (plain, _), (again, _) = _run(program, feed, fetch, {}), _run(recomputed, feed, fetch, {})
    for name, a, b in zip(fetch, plain, again):
        assert np.array_equal(a, b), name


def test_a_budget_of_zero_recomputes_nothing():
    net, loss, _ = mlp(layers=10, width=8, batch=4)
    _trained(net, loss)
    program = net.program.clone()
    assert "0 ops recomputed" in RecomputePass("auto", budget=0.0)(program)


def test_bad_checkpoints_and_programs_are_errors():
    net, loss, _ = mlp(layers=3, width=4, batch=2)
    with pytest.raises(PassConditionError, match="no backward ops"):
        RecomputePass()(net.program.clone())
    _trained(net, loss)
    with pytest.raises(PassConditionError, match="checkpoint 'fc_0.w_0' is not written by a forward op"):
        RecomputePass(["fc_0.w_0"])(net.program.clone())
    with pytest.raises(gradc.GradcError, match="budget must be >= 0"):
        RecomputePass("auto", budget=-1)


def test_compile_recompute_from_the_command_line(tmp_path):
    net, loss, feed = mlp(layers=6, width=8, batch=4)
    gradc.save(net.program, str(tmp_path / "forward.pb"))
    runner = CliRunner()
    plain = runner.invoke(cli, ["compile", str(tmp_path / "forward.pb"), "-o", str(tmp_path / "plain.pb")])
    assert plain.exit_code == 0, plain.output
    result = runner.invoke(cli, ["compile", str(tmp_path / "forward.pb"), "-o", str(tmp_path / "train.pb"),
                                 "--recompute", "auto", "--recompute-budget", "0.8"])
    assert result.exit_code == 0, result.output
    assert "recompute: " in result.output and "ops recomputed" in result.output
    fetch = [loss, "fc_0.w_0@GRAD"]
    values = initial_values(net)
    for a, b in zip(_run(gradc.load(str(tmp_path / "plain.pb")), feed, fetch, values)[0],
                    _run(gradc.load(str(tmp_path / "train.pb")), feed, fetch, values)[0]):
        assert np.array_equal(a, b)
    for args, message in ((["--recompute", "relu_0.tmp_0,,x"], "--recompute takes 'auto' or var names"),
                          (["--recompute-budget", "2"], "--recompute-budget: only with --recompute auto"),
                          (["--recompute", "nothing"], "checkpoint 'nothing' is not written by a forward op")):
        bad = subprocess.run([sys.executable, "-m", "gradc", "compile", str(tmp_path / "forward.pb"), "-o",
                              str(tmp_path / "x.pb"), *args], capture_output=True, text=True)
        assert bad.returncode == 1 and bad.stderr.startswith("gradc: error: ") and message in bad.stderr, bad.stderr
        assert len(bad.stderr.splitlines()) == 1 and not (tmp_path / "x.pb").exists()
