"""benchmarks/models.py's gradc side, run in-process on the smallest model rows (no Paddle: its column says why), and
its turns with Paddle's steps against a stand-in worker."""

import argparse
import importlib.util
import math
from pathlib import Path

import pytest

import gradc

SCRIPT = Path(__file__).parent.parent / "benchmarks" / "models.py"


@pytest.fixture(autouse=True)
def _threads(monkeypatch):
    """The script sets these when absent: set here, they are restored after the test, as before it."""
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        monkeypatch.setenv(name, "1")


def load_script():
    spec = importlib.util.spec_from_file_location("benchmark_models", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_table_has_the_row_timed_with_a_finite_loss_and_paddle_skipped(tmp_path):
    out = tmp_path / "models.txt"
    lines = load_script().run(["--models", "vgg_tiny", "--repeats", "1", "--out", str(out)])
    assert out.read_text().splitlines() == lines
    rows = [line for line in lines if line.startswith("vgg_tiny")]
    assert len(rows) == 1
    cells = rows[0].split(maxsplit=9)   # the Paddle cell, last, may hold spaces
    fields = dict(zip(["model", "batch", "fwd", "ops+bwd", "loss", "gradc", "cpu", "ratio", "grad diff", "paddle"],
                      cells))
    assert int(fields["ops+bwd"]) > int(fields["fwd"]) > 0
    assert math.isfinite(float(fields["loss"]))
    assert float(fields["gradc"]) > 0 and float(fields["cpu"]) > 0
    assert fields["ratio"] == fields["grad diff"] == "-"
    assert fields["paddle"] == "skipped: no --paddle-python given"
    assert any("paddle: skipped: no --paddle-python given" in line for line in lines if line.startswith("#"))


def test_parameters_follow_their_roles():
    """batch_norm's scale and variance are ones, its bias and mean zeros (layer_norm's scale one too, below);
    weights scaled by 1/sqrt(fan-in)."""
    script = load_script()
    program = gradc.load(script.LAYERS / "vgg_tiny_bn" / "forward.pb")
    values = script.initial_values(program, seed=0)
    norm = next(op for op in program.global_block.ops if op.type == "batch_norm")
    for slot, expected in (("Scale", 1), ("Bias", 0), ("Mean", 0), ("Variance", 1)):
        assert (values[norm.inputs[slot][0]] == expected).all(), slot
    conv = next(op for op in program.global_block.ops if op.type == "conv2d")
    weight = values[conv.inputs["Filter"][0]]
    fan_in = math.prod(weight.shape[1:])
    assert 0.5 < weight.std() * math.sqrt(fan_in) < 1.5
    again = script.initial_values(program, seed=0)
    assert all((again[name] == value).all() for name, value in values.items())


class _FakePaddle:
    """A Paddle worker's answers: ready to a model's job, then each step's time, or an error from the step named."""

    def __init__(self, seconds: float, failing_step: int | None = None):
        self.seconds, self.failing_step, self.requests = seconds, failing_step, []

    def request(self, message: dict, what: str) -> dict:
        self.requests.append(message)
        if "forward" in message:
            return {"ready": True}
        if message["step"] == self.failing_step:
            return {"error": "RuntimeError: out of memory"}
        return {"seconds": self.seconds, "cpu": 1.5 * self.seconds, "loss": 1.0}


def test_paddle_takes_a_step_after_each_of_gradcs_and_the_ratio_is_the_median_of_the_pairs(tmp_path):
    script = load_script()
    args = argparse.Namespace(seed=0, batch=2, repeats=3)
    paddle = _FakePaddle(seconds=0.5)
    facts = script.timed("vgg_tiny", args, tmp_path, paddle)
    assert [("forward" in r, r.get("step"), r.get("last")) for r in paddle.requests] == [
        (True, None, None), (False, 0, False), (False, 1, False), (False, 2, True)]
    assert paddle.requests[0]["warmup"] == script.WARMUP
    assert facts["paddle"]["seconds"] == 0.5 and facts["paddle"]["loss"] == 1.0 and facts["paddle"]["cpu"] == 0.75
    assert facts["paddle"]["ratio"] == pytest.approx(facts["seconds"] / 0.5)
    assert 0 < facts["cpu"]
    assert math.isfinite(facts["loss"]) and facts["grad"].size > 0


def test_a_paddle_step_that_fails_ends_paddles_side_of_the_row(tmp_path):
    script = load_script()
    paddle = _FakePaddle(seconds=0.5, failing_step=1)
    facts = script.timed("vgg_tiny", argparse.Namespace(seed=0, batch=2, repeats=4), tmp_path, paddle)
    assert [r.get("step") for r in paddle.requests] == [None, 0, 1]
    assert facts["paddle"] == {"error": "RuntimeError: out of memory"}
    assert script.compare(facts, facts["paddle"], tmp_path) == ("failed: RuntimeError: out of memory", "-", "-")


@pytest.mark.parametrize("threads, serial", [("1", True), ("2", False)])
def test_paddle_runs_its_ops_one_at_a_time_where_blas_has_one_thread(monkeypatch, threads, serial):
    """With one BLAS thread, Paddle's executor must not run independent ops on threads of its own (its default):
    both sides then use one core."""
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", threads)
    flags = load_script().paddle_threads()
    assert (flags == {"FLAGS_new_executor_serial_run": "1"}) is serial
    assert serial or flags == {}


@pytest.mark.parametrize("row", ["bert_mini", "lstm_lm", "unet_small"])
def test_the_working_size_programs_take_a_step(row, tmp_path):
    """benchmarks/programs' rows (Paddle's, from tools/paddle_bench_programs.py): found by their folder, compiled,
    and a step's loss finite at batch 1."""
    script = load_script()
    assert script.row_folder(row) == script.PROGRAMS / row and row in script.DEFAULT_MODELS
    facts, step = script.gradc_model(row, argparse.Namespace(seed=0, batch=1, repeats=1), tmp_path)
    seconds, _ = step()
    assert facts["batch"] == 1 and facts["ops"] > facts["forward_ops"] > 0 and seconds > 0
    assert math.isfinite(facts["loss"]) and abs(facts["grad"]).max() > 0   # norms' scales one: grads reach the input
