"""An NLP engineer's and a performance-minded user's week (docs/tools.md): each fault found, as the behaviour it has
now. The models are Paddle 3.3.1's, saved by paddle.jit.save as PIR (tools/paddle_user_week3.py)."""

import gzip
import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA

WEEK = DATA / "user_week3"
META = json.loads((WEEK / "meta.json").read_text())
NO_DECAY = ("--no-decay", "*.b_*", "--no-decay", "layer_norm*")   # Paddle's script: no decay of biases and norms


def _labels_with_unit_axis(model: str, directory) -> str:
    """The training set with labels [N, T, 1], as the added loss declares them."""
    with np.load(WEEK / model / "train.npz") as data:
        arrays = {**data, "label": data["label"][..., None]}
    path = directory / f"{model}.npz"
    np.savez(path, **arrays)
    return str(path)


def _compile(model: str, directory, *options) -> gradc.Program:
    done = gradc_cli("compile", WEEK / model / "model.json", "-o", directory / "train.pb", "--add-loss",
                     "cross-entropy", "--optimizer", "adamw", "--weight-decay", str(META["weight_decay"]),
                     "--clip-global-norm", str(META["clip"]), "--lr", str(META["rate"]), "--lr-schedule", "cosine",
                     "--decay-steps", str(META["decay_steps"]), "--warmup-steps", str(META["warmup"]), *options)
    assert done.returncode == 0, done.stderr
    return done


def _losses(model: str, directory) -> list[float]:
    program = gradc.load(directory / "train.pb")
    trainer = gradc.Trainer(program, [directory / "train.startup.pb"], fetch=["mean_0.tmp_0"], seed=0)
    gradc.load_params(trainer.scope, WEEK / model / "model.pdiparams", program)
    history = trainer.fit(_labels_with_unit_axis(model, directory), epochs=META["epochs"], batch_size=META["batch"])
    return [step[0] for step in history.steps]


@pytest.mark.parametrize("model", ["gpt_tied", "gpt_untied", "tagger"])
def test_no_decay_leaves_biases_and_norms_out_of_adamw_decay_to_paddles_losses(model, tmp_path):
    """Before, the command line decayed every parameter (no apply_decay_param_fun): Paddle's losses from step 5 on
    were missed by 1e-4; --no-decay GLOB gives them to float32 rounding."""
    done = _compile(model, tmp_path, *NO_DECAY)
    decayed = set(META[model]["decayed"])
    excluded = sorted(set(META[model]["parameters"]) - decayed)
    listed = ", ".join(excluded[:12]) + (f", ... ({len(excluded) - 12} more)" if len(excluded) > 12 else "")
    assert done.stdout.splitlines()[-1] == (f"no weight decay on {len(excluded)} of {len(META[model]['parameters'])} "
                                            f"parameters (--no-decay): {listed}")
    program = gradc.load(tmp_path / "train.pb")
    with_decay = {op.input("Param")[0] for op in program.global_block.ops
                  if op.type == "adamw" and op.attrs["with_decay"]}
    assert with_decay == decayed
    np.testing.assert_allclose(_losses(model, tmp_path), META[model]["losses"], rtol=2e-6)


def test_without_no_decay_the_losses_part_from_paddles(tmp_path):
    """The check above can fail: decaying the biases and norms too moves step 5's loss by more than its tolerance."""
    _compile("gpt_tied", tmp_path)
    losses = _losses("gpt_tied", tmp_path)
    assert abs(losses[4] - META["gpt_tied"]["losses"][4]) > 2e-5


def test_no_decay_matching_nothing_warns_and_an_optimizer_without_exclusion_refuses(tmp_path):
    done = _compile("tagger", tmp_path, *NO_DECAY, "--no-decay", "gru_cel*")
    assert done.stderr.splitlines() == [
        "gradc: note: 1 rnn train in test mode, as saved (dropout off, batch norm on its running statistics); "
        "--train-mode trains them as the model trains in Paddle (model.train())",
        "gradc: warning: --no-decay layer_norm*: no parameter's name matches it, so it leaves nothing out"]
    refused = gradc_cli("compile", WEEK / "tagger" / "model.json", "-o", tmp_path / "adam.pb", "--add-loss",
                        "cross-entropy", "--optimizer", "adam", "--no-decay", "*.b_*")
    assert refused.returncode == 1 and not (tmp_path / "adam.pb").exists()
    assert refused.stderr.splitlines()[-1] == (
        "gradc: error: --no-decay: adam has no per-parameter decay to leave out (adamw, lamb and lars_momentum have, "
        "as Paddle's apply_decay_param_fun, exclude_from_weight_decay_fn and exclude_from_weight_decay)")
    lamb = gradc_cli("compile", WEEK / "tagger" / "model.json", "-o", tmp_path / "lamb.pb", "--add-loss",
                     "cross-entropy", "--optimizer", "lamb", "--no-decay", "*.b_*")
    assert lamb.returncode == 0, lamb.stderr
    decay = {op.input("Param")[0]: op.attrs["weight_decay"] for op in gradc.load(tmp_path / "lamb.pb").global_block.ops
             if op.type == "lamb"}
    assert {name for name, value in decay.items() if value == 0.0} == {
        name for name in META["tagger"]["parameters"] if ".b_" in name}


def test_sequence_labels_without_the_unit_axis_are_told_how_to_add_it_at_any_rank(tmp_path):
    """Before, [N, T] labels for a [-1, 8, 1] var were told '.reshape(-1, 1)', which makes them [N * T, 1]."""
    _compile("gpt_tied", tmp_path)
    done = gradc_cli("train", tmp_path / "train.pb", "--startup", tmp_path / "train.startup.pb", "--params",
                     WEEK / "gpt_tied" / "model.pdiparams", "--data", WEEK / "gpt_tied" / "train.npz",
                     "--batch-size", "4")
    assert done.returncode == 1
    assert done.stderr.strip().endswith("has shape [4, 8], but block 0 declares [-1, 8, 1] (give it the trailing "
                                        "axis of 1, e.g. with np.expand_dims(array, -1))"), done.stderr


def test_evaluate_leaves_a_taggers_ignore_index_padding_out_of_accuracy(tmp_path):
    """Before, `gradc evaluate` refused the tagger's padding labels (-100, the loss's ignore_index) that train took."""
    _compile("tagger", tmp_path)
    data = _labels_with_unit_axis("tagger", tmp_path)
    done = gradc_cli("evaluate", tmp_path / "train.pb", "--params", WEEK / "tagger" / "model.pdiparams",
                     "--data", data, "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    with np.load(data) as arrays:
        feed = {name: arrays[name] for name in ("ids", "lengths", "label")}
    program, scope = gradc.load(tmp_path / "train.pb"), gradc.Scope()
    gradc.Executor().run(gradc.load(tmp_path / "train.startup.pb"), scope=scope)
    gradc.load_params(scope, WEEK / "tagger" / "model.pdiparams", program)
    scores, = gradc.Executor().run(program, feed, ["fetch_name_0"], scope)   # before the step's update
    labels = feed["label"][..., 0]
    kept = labels != -100
    assert result["acc"] == pytest.approx((scores.argmax(-1)[kept] == labels[kept]).mean())
    refused = gradc_cli("evaluate", tmp_path / "train.pb", "--params", WEEK / "tagger" / "model.pdiparams",
                        "--data", _bad_label(data, tmp_path))
    assert refused.returncode == 1
    assert refused.stderr.strip().endswith("holds the label -1 (example 1), but block 0, op 25 "
                                           "(softmax_with_cross_entropy) has 5 classes (the last dim of "
                                           "'fetch_name_0'): a label is 0 to 4, or -100 (its ignore_index) to leave "
                                           "an example out"), refused.stderr


def _bad_label(data: str, directory) -> str:
    with np.load(data) as arrays:
        changed = dict(arrays)
    changed["label"] = changed["label"].copy()
    changed["label"][0, 0, 0] = -1
    path = directory / "bad.npz"
    np.savez(path, **changed)
    return str(path)


def _compile_pir(directory, name: str = "train.json") -> None:
    """The GPT's training program written as PIR, as `gradc compile ... -o train.json` writes it for Paddle."""
    done = gradc_cli("compile", WEEK / "gpt_tied" / "model.json", "-o", directory / name, "--add-loss",
                     "cross-entropy", "--optimizer", "adamw", "--clip-global-norm", "1.0", "--lr-schedule", "cosine",
                     "--decay-steps", "6", "--warmup-steps", "2", *NO_DECAY)
    assert done.returncode == 0, done.stderr


def test_a_pir_training_program_trains_from_the_models_combined_parameters(tmp_path):
    """Before, PIR keeps no op_role, so the forward part of a training program read back from .json kept its clipping
    and schedule ops and their state: the model's .pdiparams 'belongs to another program' (36 values, 183 vars)."""
    _compile_pir(tmp_path)
    data = _labels_with_unit_axis("gpt_tied", tmp_path)
    done = gradc_cli("train", tmp_path / "train.json", "--startup", tmp_path / "train.startup.json", "--params",
                     WEEK / "gpt_tied" / "model.pdiparams", "--data", data, "--epochs", "2", "--batch-size", "4",
                     "--fetch", "mean_0.tmp_0", "--save-params", tmp_path / "tuned.npz")
    assert done.returncode == 0, done.stderr
    assert "last step mean_0.tmp_0=3.11797" in done.stdout   # Paddle's 3.1179702 (tools/paddle_user_week3.py)
    evaluated = gradc_cli("evaluate", tmp_path / "train.json", "--params", tmp_path / "tuned.npz", "--data", data)
    assert evaluated.returncode == 0 and "loss: " in evaluated.stdout, evaluated.stderr


def test_info_and_the_memory_estimate_of_a_pir_training_program_see_its_backward_and_optimizer(tmp_path):
    """Before, `gradc info` called any PIR training program (Paddle's own too) one 'with a backward (...), no
    optimizer', and `show --memory` counted the clipping's and schedule's values as kept for the backward."""
    _compile_pir(tmp_path)
    info = gradc_cli("info", tmp_path / "train.json")
    assert info.stdout.splitlines()[1] == "kind: training program (74 backward, 126 optimizer ops)", info.stdout
    _compile_pir(tmp_path, "train.pb")   # the same program with its op roles
    kept = [gradc_cli("show", path, "--memory", "--batch-size", "4").stdout.splitlines()[5]
            for path in (tmp_path / "train.json", tmp_path / "train.pb")]
    assert kept[0] == kept[1] == "  kept for the backward    95.2 KiB"


def test_info_of_paddles_own_pir_training_program_names_its_optimizer(tmp_path):
    with gzip.open(DATA / "pir" / "optim_adamw" / "train.json.gz") as packed:
        (tmp_path / "train.json").write_bytes(packed.read())
    info = gradc_cli("info", tmp_path / "train.json")
    assert info.stdout.splitlines()[1] == "kind: training program (9 backward, 4 optimizer ops)", info.stdout


LINEAR = (f"LinearWarmup(learning_rate=PolynomialDecay(learning_rate={META['rate']}, "
          f"decay_steps={META['decay_steps']}, end_lr=0.0), warmup_steps={META['warmup']}, start_lr=0.0, "
          f"end_lr={META['rate']})")


def test_a_host_written_schedule_is_recorded_at_compile_and_followed_by_train(tmp_path):
    """Before, a warm-up into a linear decay (a Paddle scheduler, written by the host) compiled without a word, and
    `gradc train` without the same --lr-schedule ran every step at the startup's rate, 0: the same 4 losses each
    epoch, silently. Then compile said to give train the schedule again; now the program records it (an attribute of
    the learning-rate var, which Paddle keeps) and train follows it, saying so: Paddle's losses of
    LinearWarmup(PolynomialDecay). A program that records none (Paddle's own) still has its rate stuck at 0 warned
    of."""
    done = gradc_cli("compile", WEEK / "gpt_tied" / "model.json", "-o", tmp_path / "train.pb", "--add-loss",
                     "cross-entropy", "--optimizer", "adamw", "--clip-global-norm", "1.0", "--lr-schedule", LINEAR,
                     *NO_DECAY)
    assert done.returncode == 0, done.stderr
    said = done.stdout.splitlines()
    assert (f"the learning rate follows {LINEAR} where the host steps it: gradc train does (the program records "
            f"it); Paddle's executor runs the step-0 value 0 unless its loop writes the rate") in said
    data = _labels_with_unit_axis("gpt_tied", tmp_path)
    train = ("--startup", tmp_path / "train.startup.pb", "--params", WEEK / "gpt_tied" / "model.pdiparams", "--data",
             data, "--epochs", "2", "--batch-size", "4", "--json")
    followed = gradc_cli("train", tmp_path / "train.pb", *train, "--log-every", "1")
    assert followed.returncode == 0 and followed.stderr == (
        f"gradc: note: the learning rate follows {LINEAR}, the schedule gradc compile recorded in "
        f"'{tmp_path / 'train.pb'}' (--lr-schedule or --lr for another)\n"), followed.stderr
    losses = [line["values"]["mean_0.tmp_0"] for line in map(json.loads, followed.stdout.splitlines())
              if line["event"] == "step"]
    np.testing.assert_allclose(losses, META["gpt_tied"]["linear_losses"], rtol=2e-6)
    unrecorded = gradc.load(tmp_path / "train.pb")
    for var in unrecorded.global_block.vars.values():
        var.attrs = ()
    gradc.save(unrecorded, tmp_path / "paddles.pb")
    stuck = gradc_cli("train", tmp_path / "paddles.pb", *train)
    assert stuck.returncode == 0
    assert stuck.stderr.splitlines() == [
        "gradc: warning: the learning rate 'learning_rate_0' is 0 and no op of the program changes it, so no step "
        "will move the parameters: a Paddle scheduler (given to Paddle's optimizer, as a warm-up from 0, or to gradc "
        "compile --lr-schedule) is stepped by the host, so give gradc train the same one, --lr-schedule 'NAME(...)' "
        "(or --lr RATE)"]


def test_a_linear_decay_after_warm_up_is_a_schedule_of_the_program_with_paddles_losses(tmp_path):
    """Before, `--lr-schedule linear` was unknown: only cosine and step were written as ops (a linear decay needed a
    Paddle scheduler given to compile and train alike)."""
    done = gradc_cli("compile", WEEK / "tagger" / "model.json", "-o", tmp_path / "train.pb", "--add-loss",
                     "cross-entropy", "--optimizer", "adamw", "--clip-global-norm", str(META["clip"]), "--lr",
                     str(META["rate"]), "--lr-schedule", "linear", "--decay-steps", str(META["decay_steps"]),
                     "--warmup-steps", str(META["warmup"]), "--no-decay", "*.b_*")
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(_losses("tagger", tmp_path), META["tagger"]["linear_losses"], rtol=2e-6)
    schedule = gradc.optimizers.ProgramSchedule("linear", 0.01, decay_steps=6, warmup_steps=2)
    np.testing.assert_allclose([schedule(k) for k in range(10)],
                               [0, 0.005, 0.01, 0.01 * 5 / 6, 0.01 * 4 / 6, 0.005, 0.01 * 2 / 6, 0.01 / 6, 0, 0])
