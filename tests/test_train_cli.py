"""gradc train over data sets and gradc export, as a user runs them: logs, evaluation, Ctrl-C, checkpoints,
parameters, and an export Paddle 3.3.1 loads (tests/data/paddle/export, checked by tools/run_export_in_paddle.py)."""

import io
import os
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

import gradc
from fixtures import DATA
from gradc.cli import cli
from gradc.training.report import ConsoleReporter
from test_cli import assert_clean_failure
from test_cli import gradc as run_gradc
from test_training_loop import ACC, EXAMPLE, LOSS, digits, trainer

EXPORT = DATA / "export"


class Done:
    def __init__(self, result):
        self.returncode, self.stdout, self.stderr = result.exit_code, result.output, ""
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise result.exception


def invoke(*args):
    """A command run in this process (as the CLI parses it; run_gradc tests the one-line errors of main())."""
    return Done(CliRunner().invoke(cli, [str(a) for a in args]))


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    directory = tmp_path_factory.mktemp("digits")
    done = invoke("compile", EXAMPLE / "forward.pb", "-o", directory / "train.pb", "--optimizer", "adam",
                     "--lr", "0.01", "--lr-schedule", "cosine", "--decay-steps", "40", "--warmup-steps", "2")
    assert done.returncode == 0, done.stderr
    np.savez(directory / "train.npz", **digits(96))
    np.savez(directory / "test.npz", **digits(40, "test"))
    return directory


def train_args(directory, *extra):
    return ["train", directory / "train.pb", "--startup", EXAMPLE / "startup.pb", "--startup",
            directory / "train.startup.pb", "--data", directory / "train.npz", "--batch-size", "32", *extra]


def test_train_evaluate_save_and_plot(compiled, tmp_path):
    done = invoke(*train_args(compiled, "--epochs", "2", "--shuffle", "--eval", compiled / "test.npz", "--fetch",
                                 LOSS, "--fetch", ACC, "--log-every", "2", "--save-params", tmp_path / "m.pdiparams",
                                 "--plot", tmp_path / "loss.png"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("epoch 1/2 step")] == \
        ["epoch 1/2 step 2/3", "epoch 1/2 step 3/3"]
    epoch_lines = [line for line in lines if line.startswith("epoch 2/2: train")]
    assert len(epoch_lines) == 1 and f"| eval {LOSS}=" in epoch_lines[0] and f"{ACC}=" in epoch_lines[0]
    assert any(line.startswith("done: 2 epochs, 6 steps, 192 examples in") for line in lines)
    assert (tmp_path / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    model = gradc.training.forward_part(gradc.load(compiled / "train.pb"))
    values = gradc.read_params(tmp_path / "m.pdiparams", model)   # the model's parameters, in Paddle's format
    assert sorted(values) == gradc.training.model_parameters(gradc.load(compiled / "train.pb"))
    assert not any("moment" in name or "learning_rate" in name for name in values)


def test_one_fed_batch_still_trains_for_some_steps(compiled):
    np.savez(compiled / "feed.npz", **digits(16))
    done = invoke("train", compiled / "train.pb", "--startup", EXAMPLE / "startup.pb", "--startup",
                  compiled / "train.startup.pb", "--feed", compiled / "feed.npz", "--steps", "3")
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()[:3]] == ["step 1", "step 2", "step 3"]


@pytest.mark.parametrize("args, message", [
    ([], "give --data (a data set) or --feed (one batch)"),
    (["--feed", "x.npz", "--shuffle"], "--shuffle: only with --data"),
])
def test_usage_errors(compiled, args, message):
    done = run_gradc("train", compiled / "train.pb", *args)
    assert done.returncode == 2 and message in done.stderr and len(done.stderr.splitlines()) == 1


def test_ctrl_c_saves_a_checkpoint_and_a_resume_ends_where_an_uninterrupted_run_ends(compiled, tmp_path):
    args = train_args(compiled, "--epochs", "3", "--shuffle", "--log-every", "1")
    process = subprocess.Popen([sys.executable, "-m", "gradc", *map(str, args), "--checkpoint-dir", tmp_path / "ck"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while not process.stdout.readline().startswith("epoch 1/3 step 2/3"):
        assert process.poll() is None, process.stderr.read()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130
    said, stopped = stderr.splitlines()   # at once, then once the step under way is done
    assert said == "gradc: stopping after the step under way (Ctrl-C again stops at once, without it)"
    assert stopped.startswith("gradc: interrupted after step ")
    assert f"checkpoint saved in {tmp_path / 'ck'} (continue with --resume {tmp_path / 'ck'})" in stderr
    resumed = invoke(*args, "--resume", tmp_path / "ck", "--save-params", tmp_path / "resumed.npz")
    straight = invoke(*args, "--save-params", tmp_path / "straight.npz")
    assert resumed.returncode == 0 and straight.returncode == 0, resumed.stderr + straight.stderr
    with np.load(tmp_path / "resumed.npz") as a, np.load(tmp_path / "straight.npz") as b:
        assert a.files == b.files and all(np.array_equal(a[name], b[name]) for name in a.files)


def test_progress_bar_on_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    trainer().fit(digits(64), epochs=1, batch_size=32, reporter=ConsoleReporter(progress_stream=stream))
    shown = stream.getvalue()
    assert "epoch 1/1" in shown and "2/2" in shown and "ex/s" in shown and f"{LOSS}=" in shown


def test_export_is_what_paddle_loaded_and_gives_paddles_outputs(compiled, tmp_path):
    """Exporting the fixture's values again writes the very files Paddle's load_inference_model ran."""
    prog = compiled / "train.pb"
    for fmt, prefix in (("pb", "model"), ("pir", "pir")):
        done = invoke("export", prog, "--params", EXPORT / "model.pdiparams", "--input", "img", "--fetch",
                      "softmax_0.tmp_0", "-o", tmp_path / prefix, "--format", fmt)
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "model.pdmodel").read_bytes() == (EXPORT / "model.pdmodel").read_bytes()
    assert (tmp_path / "pir.json").read_bytes() == (EXPORT / "pir.json").read_bytes()
    assert (tmp_path / "model.pdiparams").read_bytes() == (EXPORT / "model.pdiparams").read_bytes()
    model = gradc.load(EXPORT / "model.pdmodel")
    ops = [op.type for op in model.global_block.ops]
    assert ops[0] == "feed" and ops[-1] == "fetch" and "adam" not in ops and not any("grad" in t for t in ops)
    with np.load(EXPORT / "paddle_outputs.npz") as paddle, np.load(EXPORT / "feed.npz") as feed:
        for fmt, path in (("pb", EXPORT / "model.pdmodel"), ("pir", EXPORT / "pir.json")):
            program, scope = gradc.load(path), gradc.Scope()
            gradc.load_params(scope, EXPORT / "model.pdiparams", program)
            (out,) = gradc.Executor().run(program, dict(feed), scope=scope)
            np.testing.assert_allclose(out, paddle[fmt], rtol=1e-5, atol=1e-6, err_msg=fmt)


def test_export_needs_what_the_fetches_read(compiled, tmp_path):
    assert_clean_failure(run_gradc("export", compiled / "train.pb", "--startup", EXAMPLE / "startup.pb", "--input",
                                   "img", "--fetch", ACC, "-o", tmp_path / "m"),
                         "the fetches need 'label', which is neither fed nor computed from the feeds (feed it: --input "
                         "label on the command line")
    assert not (tmp_path / "m.pdmodel").exists()


@pytest.mark.parametrize("name", ["layer", "static"])
def test_paddles_pickled_parameters_and_optimizer_state(name):
    pickled = DATA / "pickled"
    values = gradc.training.read_values(pickled / f"{name}.pdparams")
    with np.load(pickled / f"{name}.npz") as expected:
        assert sorted(values) == sorted(n for n in expected.files if n != "learning_rate_0")
        for key, value in values.items():
            assert np.array_equal(value, expected[key])
    state = gradc.training.read_values(pickled / f"{name}.pdopt")
    assert any("moment1" in key for key in state) if name == "layer" else "learning_rate_0" in state


def test_a_pickle_naming_anything_but_numpy_is_refused(tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.system, ("touch " + str(tmp_path / "pwned"),))

    (tmp_path / "evil.pdparams").write_bytes(pickle.dumps({"w": Payload()}))
    with pytest.raises(gradc.FormatError, match=r"evil.pdparams': it names (posix|os)\.system, which is not"):
        gradc.training.read_values(tmp_path / "evil.pdparams")
    time.sleep(0.01)
    assert not (tmp_path / "pwned").exists()


def test_save_trained_of_a_gradient_merge_program_writes_its_parameters(tmp_path):
    """--gradient-merge puts the optimizer ops in a conditional sub-block; --save-trained looked at block 0 only and
    wrote "0 trained parameters". Now it writes the 4 the sub-block's adam ops update, as --save-params has them."""
    mlp = DATA / "user_week2" / "mlp"
    merged = tmp_path / "gm.pb"
    assert invoke("compile", mlp / "forward.pb", "-o", merged, "--optimizer", "adam", "--gradient-merge",
                  2).returncode == 0
    run = invoke("train", merged, "--startup", tmp_path / "gm.startup.pb", "--params", mlp / "params.npz", "--data",
                 mlp / "feed.npz", "--batch-size", 4, "--steps", 2, "--save-params", tmp_path / "all.npz",
                 "--save-trained", tmp_path / "trained.npz")
    assert run.returncode == 0 and "(4 trained parameters)" in run.stdout
    trained, saved = np.load(tmp_path / "trained.npz"), np.load(tmp_path / "all.npz")
    assert sorted(trained.files) == ["linear_0.b_0", "linear_0.w_0", "linear_1.b_0", "linear_1.w_0"]
    for name in trained.files:
        np.testing.assert_array_equal(trained[name], saved[name])
