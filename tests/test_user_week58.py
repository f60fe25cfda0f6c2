"""A question-answering and distillation engineer's week (docs/tools.md): a BERT-style extractive QA teacher (word,
position and token-type embeddings, nn.TransformerEncoder under the padding's attention mask, start and end logits,
the mean of two cross-entropies) and a student distilled from it in one program (the teacher under stop_gradient,
KL at T = 2, the hard loss and an MSE hint through a projection), both under AdamW with a linear warmup and decay,
against Paddle 3.3.1's (tools/paddle_user_week58.py); checked against central differences, the student exported and
its best spans decoded, both evaluated by each position's accuracy and the spans' exact match. Each fault found, as
the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses
from gradc import optimizers, schedules
from user_weeks import train_steps, unpacked_with_firsts

WEEK = DATA / "user_week58"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("teacher", "distill")
PADDLE_SCHEDULE = "LinearWarmup(PolynomialDecay(0.01, 4, 0.0), 2, 0.0, 0.01)"
ADAMW = ("--optimizer", "adamw", "--weight-decay", 0.01, "--no-decay", "*.b_*", "--no-decay", "layer_norm*",
         "--lr", 0.01)
SCHEDULES = {"ops": (("--lr-schedule", "linear", "--warmup-steps", 2, "--decay-steps", 4), ()),
             "host": (("--lr-schedule", PADDLE_SCHEDULE), ("--lr-schedule", PADDLE_SCHEDULE))}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model, with its first batch (first.npz)."""
    return unpacked_with_firsts(WEEK, tmp_path_factory.mktemp("week58"), MODELS, 8)


def _compiled(folder, tmp_path, schedule="ops"):
    run = gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "t.pb", *ADAMW, *SCHEDULES[schedule][0])
    assert run.returncode == 0, run.stderr
    return tmp_path / "t.pb", tmp_path / "t.startup.pb"


def _rounding_only(folder) -> set[str]:
    """The parameters whose gradient on the first batch is rounding's alone (below 1e-6; a softmax's shift: the
    attention keys' biases, the span head's bias and the norm before it), which Adam's normalised step makes 1e-2
    apart in any two float32 runs."""
    program = gradc.load(folder / "forward.pb")
    pairs = gradc.append_backward(program)
    scope = gradc.Scope()
    gradc.load_params(scope, folder / "init.npz", program)
    grads = gradc.Executor().run(program, feed=dict(np.load(folder / "first.npz")), fetch_list=[g for _, g in pairs],
                                 scope=scope)
    return {param for (param, _), grad in zip(pairs, grads) if np.abs(grad).max() < 1e-6}


@pytest.mark.parametrize("schedule", SCHEDULES)
@pytest.mark.parametrize("model", MODELS)
def test_each_model_trains_to_paddles_losses(files, tmp_path, model, schedule):
    """gradc compile --optimizer adamw (decay off for biases and norms) with the warmup and linear decay written as
    ops of the program, or as Paddle's LinearWarmup(PolynomialDecay) stepped by the host, trained from Paddle's
    initial weights: its 6 losses (teacher 2.506 ... 1.505, student 3.232 ... 1.701) to 1e-6 and its weights to
    5e-7 (measured 2.4e-7) but the biases of rounding-only gradient; the teacher inside the distillation program,
    under stop_gradient, is not trained (no fault)."""
    folder = files / model
    program, startup = _compiled(folder, tmp_path, schedule)
    run = train_steps(program, startup, folder / "data.npz", 8, "--params", folder / "init.npz", "--save-params",
                      tmp_path / "mine.npz", *SCHEDULES[schedule][1])
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    ours, paddle, before = np.load(tmp_path / "mine.npz"), np.load(folder / "trained.npz"), np.load(folder / "init.npz")
    rounding = _rounding_only(folder)
    assert len(rounding) <= 4 and all(name.endswith(".b_0") for name in rounding)
    for name in set(paddle.files) - rounding:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=5e-7, err_msg=name)
    if model == "distill":
        for name in np.load(files / "teacher" / "trained.npz").files:
            np.testing.assert_array_equal(ours[name], before[name], err_msg=name)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_programs_train_to_its_losses(files, model):
    """Paddle's minimize() programs from its startup and initial weights, the rate set by the host each step: its 6
    losses (no fault)."""
    folder = files / model
    run = train_steps(folder / "train.pb", folder / "startup.pb", folder / "data.npz", 8, "--params",
                      folder / "init.npz", *SCHEDULES["host"][1])
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_pir_programs_train_to_its_pir_losses(files, model):
    """Paddle's PIR minimize() programs from the same initial values: its 6 PIR losses, the teacher's those of
    legacy mode; the distillation's negative, as Paddle's: PIR's F.kl_div(reduction='batchmean') divides by the
    batch's static size, -1 (no fault of gradc's)."""
    pir = json.loads((WEEK / "pir_losses.json").read_text())[model]
    run = train_steps(files / f"{model}_pir_train.json", files / f"{model}_pir_startup.json",
                      files / model / "data.npz", 8, "--params", files / model / "init.npz", "--fetch", "loss",
                      *SCHEDULES["host"][1])
    np.testing.assert_allclose(step_losses(run), pir, rtol=1e-6)
    assert (model == "teacher") == np.allclose(pir, META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_check_agrees_with_central_differences(files, model):
    """gradc check on Paddle's trained weights and the first batch: every trained parameter's gradient agrees with
    float64 central differences, through the attention mask, the KL at T = 2 and the hint (no fault)."""
    folder = files / model
    run = gradc_cli("check", folder / "forward.pb", "--params", folder / "trained.npz", "--feed",
                    folder / "first.npz", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["problems"] == []


def _best_spans(start, end, types):
    """Each row's (start, end) of the highest start + end logit, start <= end, both in the context."""
    width = start.shape[1]
    scores = start[:, :, None] + end[:, None, :]
    allowed = np.triu(np.ones((width, width), bool))[None] & (types[:, :, None] == 1) & (types[:, None, :] == 1)
    flat = np.where(allowed, scores, -np.inf).reshape(len(scores), -1).argmax(axis=1)
    return np.stack([flat // width, flat % width], axis=1)


def _exported_student(files, tmp_path):
    folder = files / "distill"
    run = gradc_cli("export", folder / "forward.pb", "-o", tmp_path / "student", "--fetch",
                    f"{META['distill']['start_logits']}=start_logits", "--fetch",
                    f"{META['distill']['end_logits']}=end_logits", "--params", folder / "trained.npz", "--input", "ids",
                    "--input", "types")
    assert run.returncode == 0, run.stderr
    return tmp_path / "student.pdmodel", tmp_path / "student.pdiparams"


def test_exported_student_decodes_paddles_spans(files, tmp_path):
    """gradc export of the student's logits from the distillation program keeps the student alone (no teacher
    weight); gradc run of it on the first batch gives Paddle's logits (2e-6) and the best spans Paddle's give."""
    model, params = _exported_student(files, tmp_path)
    info = gradc_cli("info", model)
    assert "embedding_3.w_0" in info.stdout and "embedding_0.w_0" not in info.stdout
    run = gradc_cli("run", model, "--params", params, "--feed", files / "distill" / "first.npz", "-o",
                    tmp_path / "out.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(tmp_path / "out.npz"), np.load(files / "distill" / "outputs.npz")
    for key in ("start_logits", "end_logits"):
        np.testing.assert_allclose(ours[key], paddle[key], rtol=0, atol=2e-6, err_msg=key)
    types = np.load(files / "distill" / "first.npz")["types"]
    np.testing.assert_array_equal(_best_spans(ours["start_logits"], ours["end_logits"], types), paddle["spans"])


def _host_accuracy(model, files) -> dict:
    """Each position's accuracy and the exact match of both, of Paddle's logits of the 48 examples."""
    paddle, data = np.load(files / model / "outputs.npz"), np.load(files / model / "data.npz")
    start = paddle["all_start"].argmax(1) == data["start"][:, 0]
    end = paddle["all_end"].argmax(1) == data["end"][:, 0]
    return {"acc_start": start.mean(), "acc_end": end.mean(), "acc_all": (start & end).mean()}


@pytest.mark.parametrize("batch", (5, 48))
@pytest.mark.parametrize("model", MODELS)
def test_evaluate_gives_each_positions_accuracy_and_the_exact_match(files, model, batch):
    """gradc evaluate of a loss of two cross-entropies (start and end) gave one accuracy, "acc", the start's alone
    and unnamed. Now each head's by its labels (acc_start, acc_end) and acc_all, the examples both are right of
    (a span's exact match): numpy's numbers of Paddle's logits (teacher 0.375, 0.208, 0.104), at any batch size."""
    folder = files / model
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    folder / "data.npz", "--batch-size", batch, "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    for key, value in _host_accuracy(model, files).items():
        assert result[key] == pytest.approx(value, abs=1e-12), key
    assert result["acc"] == result["acc_start"]


def test_evaluate_pairs_an_exported_models_outputs_with_their_labels(files, tmp_path):
    """The exported student (two outputs of class scores, no loss) was refused: "no class scores to score against
    labels; ... name the labels (--label NAME)", and --label start: "no class scores of the program are scored
    against it". Now each says to pair them, and --label start_logits=start,end_logits=end gives the training
    program's numbers."""
    model, params = _exported_student(files, tmp_path)
    data = files / "distill" / "data.npz"
    for label in ((), ("--label", "start")):
        refused = gradc_cli("evaluate", model, "--params", params, "--data", data, *label)
        assert refused.returncode == 1
        assert "--label start_logits=LABEL,end_logits=LABEL" in refused.stderr, refused.stderr
    run = gradc_cli("evaluate", model, "--params", params, "--data", data, "--label",
                    "start_logits=start,end_logits=end", "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    for key, value in _host_accuracy("distill", files).items():
        assert result[key] == pytest.approx(value, abs=1e-12), key
    unknown = gradc_cli("evaluate", model, "--params", params, "--data", data, "--label", "start_logits=begin")
    assert unknown.returncode == 1 and "the data has no array 'begin'" in unknown.stderr


def test_train_stops_early_by_the_exact_match(files, tmp_path):
    """train --eval --early-stop --monitor acc_all was refused ("watches 'acc_all', which is not fetched"): now each
    epoch's evaluation reports the heads' accuracies and the best epoch's exact match is kept."""
    folder = files / "distill"
    program, startup = _compiled(folder, tmp_path)
    run = gradc_cli("train", program, "--startup", startup, "--params", folder / "init.npz", "--data",
                    folder / "data.npz", "--batch-size", 8, "--epochs", 2, "--eval", folder / "data.npz", "--topk", 1,
                    "--early-stop", 2, "--monitor", "acc_all", "--save-params", tmp_path / "kept.npz", "--json")
    assert run.returncode == 0, run.stderr
    epochs = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert {"acc_start", "acc_end", "acc_all"} <= set(epochs[0])
    again = gradc_cli("evaluate", folder / "forward.pb", "--params", tmp_path / "kept.npz", "--data",
                      folder / "data.npz", "--json")
    assert json.loads(again.stdout)["acc_all"] == pytest.approx(max(e["acc_all"] for e in epochs), abs=1e-12)


def test_python_trainer_steps_the_optimizers_schedule(files):
    """optimizers.AdamW(learning_rate=LinearWarmup(PolynomialDecay(...))) minimized in Python and trained by
    gradc.Trainer ran every step at the schedule's step-0 rate, 0 (losses 2.506, 2.484, 2.638, 3.096 against
    Paddle's 2.506, 2.484, 2.222, 2.013): the Trainer now steps the schedule the optimizer holds, as Paddle's loop
    steps its LRScheduler: Paddle's 6 losses."""
    folder = files / "teacher"
    program = gradc.load(folder / "forward.pb")
    decay = schedules.make("PolynomialDecay", learning_rate=0.01, decay_steps=4, end_lr=0.0)
    warmup = schedules.make("LinearWarmup", learning_rate=decay, warmup_steps=2, start_lr=0.0, end_lr=0.01)
    optimizer = optimizers.AdamW(learning_rate=warmup, weight_decay=0.01,
                                 apply_decay_param_fun=lambda name: ".b_" not in name and "layer_norm" not in name)
    trainer = gradc.Trainer(program, [optimizer.minimize(program)])
    gradc.load_params(trainer.scope, folder / "init.npz", program)
    history = trainer.fit(folder / "data.npz", batch_size=8)
    np.testing.assert_allclose([values[0] for values in history.steps], META["teacher"]["losses"], rtol=1e-6)
