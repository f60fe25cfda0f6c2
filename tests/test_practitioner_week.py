"""A practitioner's week with Paddle 3 models and gradc's training workflow: each rough edge found, as the
behaviour it has now."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.training.history import Reporter

MLP = DATA / "mlp"
SRC = Path(__file__).parents[1] / "src"


def test_a_params_value_that_does_not_fit_names_the_op_that_reads_it_first_and_how_to_convert_it(tmp_path):
    params = dict(np.load(MLP / "params.npz"))
    params["fc_1.w_0"] = params["fc_1.w_0"][:5]
    params["fc_0.b_0"] = params["fc_0.b_0"].astype("float64")
    for name in ("fc_1.w_0", "fc_0.b_0"):
        np.savez(tmp_path / f"{name}.npz", **{**dict(np.load(MLP / "params.npz")), name: params[name]})
    shape = gradc_cli("run", MLP / "forward.pb", "--params", tmp_path / "fc_1.w_0.npz", "--feed", MLP / "feed.npz")
    assert shape.returncode == 1
    assert shape.stderr == (f"gradc: error: params '{tmp_path / 'fc_1.w_0.npz'}': 'fc_1.w_0', read first by block 0, "
                            f"op 3 (mul), has shape [5, 10], but the program declares [32, 10]\n")
    dtype = gradc_cli("run", MLP / "forward.pb", "--params", tmp_path / "fc_0.b_0.npz", "--feed", MLP / "feed.npz")
    assert dtype.returncode == 1
    assert dtype.stderr == (f"gradc: error: params '{tmp_path / 'fc_0.b_0.npz'}': 'fc_0.b_0', read first by block 0, "
                            f"op 1 (elementwise_add), is float64, but the program declares float32 (convert it, e.g. "
                            f"with .astype('float32'))\n")


def _interrupted_run(args, cwd):
    """`gradc train ARGS` in ``cwd``, Ctrl-C once its second step is logged: (exit code, stderr)."""
    process = subprocess.Popen([sys.executable, "-m", "gradc", *map(str, args)], cwd=cwd, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(SRC)})
    while not process.stdout.readline().startswith("epoch 1/1 step 2/"):
        assert process.poll() is None, process.stderr.read()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=60)
    return process.returncode, stderr


def test_ctrl_c_without_a_checkpoint_dir_keeps_a_checkpoint_and_the_params_so_far(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    compiled = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "adam")
    assert compiled.returncode == 0, compiled.stderr
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "data.npz", x=rng.standard_normal((32 * 300, 16)).astype("float32"),
             label=rng.integers(0, 10, (32 * 300, 1)))
    args = ["train", "train.pb", "--startup", MLP / "startup.pb", "--startup", "train.startup.pb", "--data",
            "data.npz", "--shuffle", "--log-every", "1"]
    code, stderr = _interrupted_run([*args, "--save-params", "kept.npz"], tmp_path)
    assert code == 130 and len(stderr.splitlines()) == 2, stderr
    said, stderr = stderr.splitlines()
    assert said == "gradc: stopping after the step under way (Ctrl-C again stops at once, without it)"
    step = int(stderr.split("interrupted after step ")[1].split()[0])
    assert stderr.startswith(f"gradc: interrupted after step {step} (epoch 1, batch {step}); checkpoint saved in "
                             f"train.interrupted (continue with the same command and --resume train.interrupted); "
                             f"wrote kept.npz (the model parameters after step {step})")
    with np.load(tmp_path / "train.interrupted" / f"checkpoint-{step:08d}.npz") as checkpoint, \
            np.load(tmp_path / "kept.npz") as kept:
        assert sorted(kept.files) == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
        assert all(np.array_equal(kept[name], checkpoint[name]) for name in kept.files)
    # a resume from it ends where an uninterrupted run ends, bit for bit
    resumed = gradc_cli(*args, "--steps", step + 3, "--resume", "train.interrupted", "--save-params", "resumed.npz")
    straight = gradc_cli(*args, "--steps", step + 3, "--save-params", "straight.npz")
    assert resumed.returncode == 0 and straight.returncode == 0, resumed.stderr + straight.stderr
    with np.load(tmp_path / "resumed.npz") as a, np.load(tmp_path / "straight.npz") as b:
        assert a.files == b.files and all(np.array_equal(a[name], b[name]) for name in a.files)
    # a second interrupted run does not mix its checkpoints with the first one's
    code, stderr = _interrupted_run(args, tmp_path)
    assert code == 130 and "checkpoint saved in train.interrupted-2 (" in stderr, stderr


def test_a_python_fit_stopped_by_ctrl_c_keeps_its_scope_whole_and_saves_a_checkpoint_a_resume_continues(tmp_path):
    class CtrlCAtStep2(Reporter):
        def step(self, step, epoch, batch, values):
            if step == 2:
                signal.raise_signal(signal.SIGINT)

    program = gradc.load(MLP / "forward.pb")
    startup = gradc.minimize(program, optimizer="adam", lr=0.01)
    rng = np.random.default_rng(1)
    data = {"x": rng.standard_normal((32 * 5, 16)).astype("float32"), "label": rng.integers(0, 10, (32 * 5, 1))}
    interrupted = gradc.Trainer(program, [MLP / "startup.pb", startup])
    with pytest.raises(gradc.errors.Interrupted, match=r"^interrupted after step 2 \(epoch 1, batch 2\); no "
                                                       r"checkpoint_dir, so nothing saved: the trainer's scope"):
        interrupted.fit(data, epochs=1, reporter=CtrlCAtStep2())
    interrupted.save_checkpoint(tmp_path / "ck")
    resumed = gradc.Trainer(program, [MLP / "startup.pb", startup])
    resumed.fit(data, epochs=1, resume=tmp_path / "ck")
    straight = gradc.Trainer(program, [MLP / "startup.pb", startup])
    straight.fit(data, epochs=1)
    assert resumed.step == straight.step == 5
    assert all(np.array_equal(resumed.scope[name], straight.scope[name]) for name in ("fc_0.w_0", "fc_1.b_0"))
    with pytest.raises(gradc.GradcError, match="no checkpoint before fit"):
        gradc.Trainer(program, [MLP / "startup.pb", startup]).save_checkpoint(tmp_path / "early")


@pytest.mark.parametrize("spec, message", [
    ("StepDecay(learning_rate=0.1, step_sise=2)", "schedule StepDecay has no argument 'step_sise' (did you mean "
                                                  "step_size?); its arguments: learning_rate, step_size, gamma"),
    ("StepDecay(learning_rate=0.1)", "schedule StepDecay needs step_size; its arguments: learning_rate, step_size, "
                                     "gamma"),
    ("StepDekay(learning_rate=0.1, step_size=2)", "unknown learning-rate schedule 'StepDekay' (did you mean "
                                                  "StepDecay?)"),
    ("StepDecay", "the learning-rate schedule StepDecay needs its arguments: StepDecay(learning_rate, step_size, "
                  "gamma)"),
    ("lr.StepDecay", "the learning-rate schedule lr.StepDecay needs its arguments: StepDecay(learning_rate, "
                     "step_size, gamma)"),
    ("cosin", "cannot read the learning-rate schedule 'cosin' (did you mean cosine?)"),
])
def test_a_misspelt_lr_schedule_says_what_was_meant_in_the_words_of_the_option(tmp_path, spec, message):
    compiled = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "sgd")
    assert compiled.returncode == 0, compiled.stderr
    done = gradc_cli("train", tmp_path / "train.pb", "--startup", MLP / "startup.pb", "--startup",
                     tmp_path / "train.startup.pb", "--feed", MLP / "feed.npz", "--steps", "1", "--lr-schedule", spec)
    assert done.returncode == 1 and done.stderr.startswith(f"gradc: error: {message}"), done.stderr
    assert "__init__" not in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_host_schedule_for_a_program_whose_schedule_is_ops_is_refused_as_that(tmp_path):
    compiled = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "sgd",
                         "--lr-schedule", "cosine", "--decay-steps", "10")
    assert compiled.returncode == 0, compiled.stderr
    done = gradc_cli("train", tmp_path / "train.pb", "--startup", MLP / "startup.pb", "--startup",
                     tmp_path / "train.startup.pb", "--feed", MLP / "feed.npz", "--steps", "1", "--lr-schedule",
                     "StepDecay(learning_rate=0.1, step_size=2)")
    assert done.returncode == 1
    assert done.stderr == ("gradc: error: the program computes its learning rate with ops of its own (a schedule "
                           "given to gradc compile --lr-schedule): a schedule written by the host would fight it; give "
                           "none\n")


def test_evaluating_an_exported_classifier_on_data_without_labels_says_the_labels_are_missing(tmp_path):
    export = DATA / "export"
    with np.load(export / "feed.npz") as feed:
        images = feed["img"]
    np.savez(tmp_path / "images.npz", img=images)
    labels = np.zeros((len(images), 1), "int64")
    np.savez(tmp_path / "two.npz", img=images, digit=labels, other=labels)
    model = ["evaluate", export / "model.pdmodel", "--params", export / "model.pdiparams", "--data"]
    unlabelled = gradc_cli(*model, tmp_path / "images.npz")
    assert unlabelled.returncode == 1
    assert unlabelled.stderr == (f"gradc: error: data '{tmp_path / 'images.npz'}': evaluation: the model's class "
                                 f"scores (softmax_0.tmp_0) need labels to score; it holds only what the model reads "
                                 f"(img): add an array of class labels (any name the model does not read, or --label "
                                 f"NAME)\n")
    ambiguous = gradc_cli(*model, tmp_path / "two.npz")
    assert ambiguous.returncode == 1 and "several arrays it does not read could be them (digit, other): pick one " \
        "with --label NAME" in ambiguous.stderr
    picked = gradc_cli(*model, tmp_path / "two.npz", "--label", "other")
    assert picked.returncode == 0 and "acc: " in picked.stdout, picked.stderr


@pytest.mark.parametrize("model", ["json", "legacy"])
@pytest.mark.parametrize("case, kind", [("logits", "cross-entropy"), ("softmax", "cross-entropy"), ("mse", "mse")])
def test_a_model_saved_by_jit_save_fine_tunes_with_an_added_loss_to_paddles_loss_and_gradients(tmp_path, case, kind,
                                                                                                model):
    """tools/paddle_add_loss_fixture.py: Paddle's F.cross_entropy / F.mse_loss of the model's output, and its grads;
    the legacy .pdmodel marks no parameter, so --add-loss marks the weights and biases."""
    saved = DATA / "add_loss"
    meta = json.loads((saved / "meta.json").read_text())[case]
    stem = f"{case}_legacy" if model == "legacy" else case
    program = saved / (f"{stem}.pdmodel" if model == "legacy" else f"{stem}.json")
    compiled = gradc_cli("compile", program, "-o", tmp_path / "train.pb", "--add-loss", kind)
    assert compiled.returncode == 0, compiled.stderr
    marked = (f"marked 4 persistable vars parameters (the file marks none): {', '.join(meta['params'])}\n"
              if model == "legacy" else "")
    assert compiled.stdout.startswith(f"{marked}added the loss mean_0.tmp_0: {kind} of the output against the input "
                                      f"label\n")
    grads = [f"{name}@GRAD" for name in meta["params"]]
    done = gradc_cli("run", tmp_path / "train.pb", "--params", saved / f"{stem}.pdiparams", "--feed",
                     saved / f"{case}.npz", "--fetch", "mean_0.tmp_0", *[arg for g in grads for arg in ("--fetch", g)],
                     "--out", tmp_path / "out.npz")
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "out.npz") as out, np.load(saved / f"{case}_grads.npz") as paddle_grads:
        np.testing.assert_allclose(out["mean_0.tmp_0"], meta["loss"], rtol=1e-5, atol=1e-6)
        for name in meta["params"]:
            np.testing.assert_allclose(out[f"{name}@GRAD"], paddle_grads[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_add_loss_refuses_what_it_cannot_add_in_one_line(tmp_path):
    model = DATA / "add_loss" / "logits.json"
    taken = gradc_cli("compile", model, "-o", tmp_path / "t.pb", "--add-loss", "cross-entropy", "--label", "x")
    assert taken.returncode == 1 and taken.stderr == ("gradc: error: the label var 'x' is already a var of the "
                                                      "program; name the labels otherwise (--label NAME)\n")
    both = gradc_cli("compile", model, "-o", tmp_path / "t.pb", "--add-loss", "mse", "--loss", "x")
    assert both.returncode == 2 and "give --loss (the program's own loss) or --add-loss (a new one)" in both.stderr
    own = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "t.pb", "--add-loss", "cross-entropy")
    assert own.returncode == 1 and own.stderr == ("gradc: error: the program has a loss of its own (mean_0.tmp_0): "
                                                  "compile it without --add-loss (add_loss is for a model without "
                                                  "one; --loss-of NAME adds one all the same)\n")
    alone = gradc_cli("compile", model, "-o", tmp_path / "t.pb", "--label", "y")
    assert alone.returncode == 2 and "--label: only with --add-loss" in alone.stderr
    assert not (tmp_path / "t.pb").exists()


def test_exporting_before_training_says_which_option_gives_the_trained_values(tmp_path):
    digits = DATA.parents[2] / "examples" / "digits"
    export = ["export", digits / "forward.pb", "--input", "img", "--fetch", "softmax_0.tmp_0", "-o"]
    nothing = gradc_cli(*export, tmp_path / "none")
    assert nothing.returncode == 1
    assert nothing.stderr == ("gradc: error: export: no value for batch_norm2d_0.b_0, batch_norm2d_0.w_0, "
                              "batch_norm2d_0.w_1, batch_norm2d_0.w_2, conv2d_0.b_0, conv2d_0.w_0, ... (10 in all) "
                              "(give the trained parameters: --params FILE, which gradc train --save-params writes; "
                              "scope= or values= in Python)\n")
    untrained = gradc_cli(*export, tmp_path / "untrained", "--startup", digits / "startup.pb")
    assert untrained.returncode == 0 and (tmp_path / "untrained.pdiparams").exists()
    assert untrained.stderr == ("gradc: warning: no --params: the export holds the values the startup programs "
                                "initialise, an untrained model (gradc train --save-params writes the trained ones)\n")


def test_a_paddle_path_prefix_or_a_parameter_file_given_as_the_program_says_which_file_to_give(tmp_path):
    saved = DATA / "add_loss"
    prefix = gradc_cli("info", saved / "logits")
    assert prefix.returncode == 1
    assert prefix.stderr == (f"gradc: error: cannot read '{saved / 'logits'}': No such file or directory (a program is "
                             f"named by its file, not by Paddle's path prefix or its directory: "
                             f"{saved / 'logits.json'}?)\n")
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "inference.pdmodel").write_bytes((DATA / "mlp" / "forward.pb").read_bytes())
    directory = gradc_cli("run", tmp_path / "model", "--feed", MLP / "feed.npz")
    assert directory.returncode == 1 and directory.stderr.endswith(
        f"its directory: {tmp_path / 'model' / 'inference.pdmodel'}?)\n"), directory.stderr
    params = gradc_cli("info", saved / "logits.pdiparams")
    assert params.returncode == 1
    assert params.stderr == (f"gradc: error: '{saved / 'logits.pdiparams'}' is a parameter file, not a program: give "
                             f"the program (.json, .pdmodel, .pb) and this file with --params (gradc.load_params in "
                             f"Python)\n")


def test_a_csv_without_a_header_or_with_its_own_column_names_is_shown_the_header_the_program_takes(tmp_path):
    saved = DATA / "add_loss"
    compiled = gradc_cli("compile", saved / "logits.json", "-o", tmp_path / "train.pb", "--add-loss", "cross-entropy",
                         "--optimizer", "sgd")
    assert compiled.returncode == 0, compiled.stderr
    rows = "0.5,1,-2,0.25,1\n1,2,3,4,0\n"
    (tmp_path / "bare.csv").write_text(rows)
    (tmp_path / "named.csv").write_text("f0,f1,f2,f3,label\n" + rows)
    train = ["train", tmp_path / "train.pb", "--startup", tmp_path / "train.startup.pb", "--params",
             saved / "logits.pdiparams", "--steps", "1", "--data"]
    bare = gradc_cli(*train, tmp_path / "bare.csv")
    assert bare.returncode == 1 and bare.stderr == (f"gradc: error: data '{tmp_path / 'bare.csv'}': give a header line "
                                                    f"naming each column's feed var (x,x,x,x,label), then one example "
                                                    f"a line\n")
    named = gradc_cli(*train, tmp_path / "named.csv")
    assert named.returncode == 1 and named.stderr == (f"gradc: error: data '{tmp_path / 'named.csv'}': column 'f0' "
                                                      f"names no var of the program (its inputs: x, label; a header it "
                                                      f"takes: x,x,x,x,label)\n")
    (tmp_path / "good.csv").write_text("x,x,x,x,label\n" + rows)
    assert gradc_cli(*train, tmp_path / "good.csv").returncode == 0


def test_flat_labels_as_paddles_dygraph_losses_take_them_are_told_how_to_fit_the_declared_shape(tmp_path):
    saved = DATA / "add_loss"
    compiled = gradc_cli("compile", saved / "logits.json", "-o", tmp_path / "train.pb", "--add-loss", "cross-entropy",
                         "--optimizer", "sgd")
    assert compiled.returncode == 0, compiled.stderr
    with np.load(saved / "logits.npz") as batch:
        np.savez(tmp_path / "flat.npz", x=batch["x"], label=batch["label"].ravel())
    done = gradc_cli("train", tmp_path / "train.pb", "--startup", tmp_path / "train.startup.pb", "--params",
                     saved / "logits.pdiparams", "--data", tmp_path / "flat.npz", "--batch-size", "3")
    assert done.returncode == 1
    assert done.stderr == (f"gradc: error: data '{tmp_path / 'flat.npz'}': feed var 'label', read first by block 0, op "
                           f"6 (softmax_with_cross_entropy), has shape [3], but block 0 declares [-1, 1] (give it the "
                           f"trailing axis of 1, e.g. with np.expand_dims(array, -1))\n")


def test_a_program_schedule_without_its_decay_steps_says_what_they_are_not_none(tmp_path):
    done = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "t.pb", "--optimizer", "adam", "--lr-schedule",
                     "cosine")
    assert done.returncode == 1 and not (tmp_path / "t.pb").exists()
    assert done.stderr == ("gradc: error: the cosine schedule needs decay steps >= 1 (--decay-steps N, decay_steps= in "
                           "Python; none given): the steps from the full rate to 0\n")


@pytest.mark.parametrize("option, value, needs", [("--checkpoint-every", "3", "--checkpoint-dir (or --resume)"),
                                                  ("--lr-var", "learning_rate_0", "--lr-schedule"),
                                                  ("--monitor", "mean_0.tmp_0", "--early-stop")])
def test_a_train_option_that_would_go_unused_is_refused_naming_what_it_needs(tmp_path, option, value, needs):
    done = gradc_cli("train", MLP / "forward.pb", "--feed", MLP / "feed.npz", option, value)
    assert done.returncode == 2 and done.stderr.startswith(f"gradc: error: {option}: only with {needs}"), done.stderr


def test_diff_reads_an_op_without_a_role_as_a_forward_op_as_paddle_does(tmp_path):
    program = gradc.load(MLP / "forward.pb")
    for op in program.global_block.ops:
        assert op.attrs.get("op_role", 0) == 0
        op.attrs.pop("op_role", None)
        op.attr_types.pop("op_role", None)
        op.attrs.pop("op_role_var", None)
        op.attr_types.pop("op_role_var", None)
    gradc.save(program, tmp_path / "roleless.pb")
    same = gradc_cli("diff", MLP / "forward.pb", tmp_path / "roleless.pb")
    assert same.returncode == 0, same.stdout
    program.global_block.ops[0].attrs["op_role"] = 1   # a backward op is another thing
    program.global_block.ops[0].attr_types["op_role"] = gradc.ir.AttrType.INT
    gradc.save(program, tmp_path / "backward_role.pb")
    other = gradc_cli("diff", MLP / "forward.pb", tmp_path / "backward_role.pb")
    assert other.returncode == 1 and "attr op_role: 0 -> 1" in other.stdout


@pytest.mark.parametrize("command", [["run", MLP / "forward.pb", "--feed", MLP / "feed.npz"],
                                     ["export", MLP / "forward.pb", "--input", "x", "--fetch", "fc_1.tmp_1", "-o", "m"],
                                     ["evaluate", MLP / "forward.pb", "--data", MLP / "feed.npz"]])
def test_strict_params_without_params_is_refused_as_it_would_check_nothing(command):
    done = gradc_cli(*command, "--strict-params")
    assert done.returncode == 2 and done.stderr.startswith("gradc: error: --strict-params: only with --params")
