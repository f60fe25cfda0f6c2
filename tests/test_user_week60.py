"""A continual-learning researcher's week (docs/tools.md): one multi-head classifier (a shared trunk, a head a task)
trained on task 1 of a split-MNIST-like pair of tasks, then on task 2 four ways against forgetting: EWC (a diagonal
Fisher of task 1 from gradc's per-example gradients, its penalty built from persistable vars loaded beside the
weights), L2-SP (the anchors fed), a frozen trunk (trainable=False) and a replay buffer of task 1 mixed into each batch,
against Paddle 3.3.1's losses, weights and each task's test accuracy after each stage, legacy and PIR
(tools/paddle_user_week60.py); checked against central differences, exported with both heads. Each fault found, as the
behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from user_weeks import train_steps

WEEK = DATA / "user_week60"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("task1", "ewc", "l2sp", "frozen", "replay")
STAGES = ("ewc", "l2sp", "frozen", "replay")
COMPILE = {"frozen": ("--optimizer", "sgd", "--lr", 0.1)}
TRAIN = {"ewc": ("--params", "ewc_state.npz"), "l2sp": ("--feed", "anchors.npz"),
         "frozen": (), "replay": ("--data", "replay.npz", "--cycle")}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model; each task's train and test split (x, label), and what the user
    derives from task 1's weights: EWC's state (Paddle's Fisher, the anchors) and L2-SP's fed anchors."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week60"), MODELS)
    data = np.load(out / "data.npz")
    for task in (1, 2):
        for split in ("train", "test"):
            np.savez(out / f"task{task}_{split}.npz", x=data[f"task{task}_{split}_x"],
                     label=data[f"task{task}_{split}_label"])
    fisher, anchors = np.load(out / "fisher.npz"), np.load(out / "task1" / "trained.npz")
    np.savez(out / "ewc_state.npz", **{f"fisher.{name}": fisher[name] for name in fisher.files},
             **{f"anchor.{name}": anchors[name] for name in fisher.files})
    np.savez(out / "anchors.npz", anchor_trunk_w=anchors["trunk.w"], anchor_trunk_b=anchors["trunk.b"])
    return out


def _compiled(files, model: str):
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "t.pb",
                         *COMPILE.get(model, ("--optimizer", "adam")))
    assert compiled.returncode == 0, compiled.stderr
    return folder / "t.pb", folder / "t.startup.pb"


def _in(files, args) -> list:
    """Options whose .npz values are the week's files."""
    return [files / arg if str(arg).endswith(".npz") else arg for arg in args]


def _assert_weights(ours, paddle, atol: float) -> None:
    ours, paddle = np.load(ours), np.load(paddle)
    assert sorted(ours.files) == sorted(paddle.files)
    for name in paddle.files:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=atol, err_msg=name)


def test_task1_trains_to_paddles_losses_and_weights(files):
    """gradc compile --optimizer adam of the two-head forward (head 2 off task 1's loss: a warning, no update) and
    train from Paddle's initial weights: its 4 losses to 1e-6 and its weights to 1e-6, head 2 untouched."""
    program, startup = _compiled(files, "task1")
    run = train_steps(program, startup, files / "task1_train.npz", 16, "--params", files / "task1" / "init.npz",
                      "--save-params", files / "task1" / "mine.npz")
    np.testing.assert_allclose(step_losses(run), META["task1"]["losses"], rtol=1e-6)
    _assert_weights(files / "task1" / "mine.npz", files / "task1" / "trained.npz", 1e-6)


def test_ewcs_fisher_from_per_example_gradients_is_paddles(files):
    """EWC's diagonal Fisher, the mean over task 1's 64 training examples of each one's squared gradient of -log p(y|x)
    at the trained weights: gradc run --per-example of the compiled forward, fetching the @GRAD vars, gives Paddle's
    (64 runs of a batch of one) to 1e-6 of its largest (no fault)."""
    folder = files / "task1"
    assert gradc_cli("compile", folder / "forward.pb", "-o", folder / "grads.pb").returncode == 0
    run = gradc_cli("run", folder / "grads.pb", "--params", folder / "trained.npz", "--feed",
                    files / "task1_train.npz", "--per-example", "--fetch", "*.w@GRAD", "--fetch", "*.b@GRAD",
                    "--out", folder / "per_example.npz")
    assert run.returncode == 0, run.stderr
    grads, paddle = np.load(folder / "per_example.npz"), np.load(files / "fisher.npz")
    for name in paddle.files:
        assert grads[f"{name}@GRAD"].shape[0] == 64
        fisher = np.mean(np.square(grads[f"{name}@GRAD"]), axis=0)
        np.testing.assert_allclose(fisher, paddle[name], rtol=0, atol=1e-6 * np.abs(paddle[name]).max(), err_msg=name)


@pytest.mark.parametrize("model", STAGES)
def test_each_way_against_forgetting_trains_to_paddles_losses(files, model):
    """Task 2 from task 1's trained weights: EWC's penalty lambda/2 * sum F (w - w*)^2 (F and w* persistable vars of
    ewc_state.npz), L2-SP's (the anchors fed with --feed, the same every step), the frozen trunk (SGD on head 2
    alone) and the replay buffer of 24 task-1 examples cycled through 4 batches of 16 (--data twice, --cycle): Paddle's
    4 losses to 1e-6 and its weights to 1e-6."""
    program, startup = _compiled(files, model)
    run = train_steps(program, startup, files / "task2_train.npz", 16, "--params", files / "task1" / "trained.npz",
                      *_in(files, TRAIN[model]), "--save-params", files / model / "mine.npz")
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    mine = dict(np.load(files / model / "mine.npz"))
    np.savez(files / model / "mine_kept.npz", **{name: mine[name] for name in np.load(files / model / "trained.npz")})
    _assert_weights(files / model / "mine_kept.npz", files / model / "trained.npz", 1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_programs_train_from_its_warm_start(files, model):
    """Paddle's minimize() programs (its trainable=False trunk left out of the SGD updates) from its startup and the
    values it started from (init.npz: task 1's weights, EWC's Fisher and anchors): its 4 losses (no fault)."""
    folder = files / model
    data = [files / ("task1_train.npz" if model == "task1" else "task2_train.npz")]
    extra = [*(["--data", files / "replay.npz", "--cycle"] if model == "replay" else []),
             *(["--feed", files / "anchors.npz"] if model == "l2sp" else [])]
    run = train_steps(folder / "train.pb", folder / "startup.pb", data[0], 16, "--params", folder / "init.npz", *extra)
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model", ("ewc", "replay"))
def test_paddles_pir_programs_train_alike(files, model):
    """EWC and replay built and minimized in PIR mode (the Fisher and anchors parameters with trainable=False there),
    from the legacy run's starting values: Paddle's PIR losses, the legacy ones (no fault)."""
    data = ["--data", files / "replay.npz", "--cycle"] if model == "replay" else []
    run = train_steps(files / f"{model}_pir_train.json", files / f"{model}_pir_startup.json", files / "task2_train.npz",
                      16, "--params", files / model / "init.npz", *data)
    expected = json.loads((WEEK / "pir_losses.json").read_text())[model]
    np.testing.assert_allclose(step_losses(run), expected, rtol=1e-6)
    np.testing.assert_allclose(expected, META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model", ("ewc", "l2sp"))
def test_check_agrees_with_central_differences_through_the_penalties(files, model):
    """gradc check of the penalised forward at Paddle's trained weights on task 2's first batch: every gradient agrees
    with float64 central differences (EWC's head 1 sits at its anchor: a gradient of 0, both ways)."""
    first = dict(np.load(files / "task2_train.npz"))
    np.savez(files / "task2_first.npz", **{name: value[:16] for name, value in first.items()})
    extra = ["--params", files / "ewc_state.npz"] if model == "ewc" else ["--feed", files / "anchors.npz"]
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / "task2_first.npz", *extra, "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["problems"] == []


def _state(model: str) -> list:
    return {"ewc": ["--params", "ewc_state.npz"], "l2sp": ["--feed", "anchors.npz"]}.get(model, [])


@pytest.mark.parametrize("model", MODELS)
def test_each_tasks_accuracy_after_each_stage_is_paddles(files, model):
    """Fault: gradc evaluate scored the classifier of the program's loss only, so after task 2 the accuracy on task 1's
    test set was head 2's (EWC: 0.521 for head 1's 0.667), and no option named head 1. Now --scores NAME
    picks the head, scored against the labels of the program's cross entropy: each task's test accuracy after each
    stage is Paddle's (task 1 0.833 after its training; EWC 0.667, L2-SP 0.583, the frozen trunk 0.833, replay
    0.75)."""
    for task in (1, 2):
        run = gradc_cli("evaluate", files / model / "forward.pb", "--params", files / model / "trained.npz",
                        *_in(files, _state(model)), "--data", files / f"task{task}_test.npz", "--scores",
                        META[model][f"head{task}"], "--json")
        assert run.returncode == 0, run.stderr
        results = json.loads(run.stdout)
        assert results["acc"] == pytest.approx(META[model]["accuracy"][task - 1], abs=1e-12), task
        assert ("loss" not in results) == (model == "replay")


def test_a_test_set_without_the_replay_batch_is_scored_without_the_loss(files):
    """Fault: the replay program's loss reads the replay batch (replay_x, replay_label), which a task's test set lacks:
    evaluate --scores was refused, 'the fetches need replay_label and replay_x'. Now the loss is left out with a note
    (as --roc leaves it) and head 1's accuracy on task 1 is Paddle's, 0.75."""
    run = gradc_cli("evaluate", files / "replay" / "forward.pb", "--params", files / "replay" / "trained.npz",
                    "--data", files / "task1_test.npz", "--scores", META["replay"]["head1"])
    assert run.returncode == 0, run.stderr
    assert "the loss 'tmp_0' needs 'replay_" in run.stderr and "--scores is evaluated without the loss" in run.stderr
    assert f"acc: {META['replay']['accuracy'][0]:.6g}" in run.stdout


def test_accuracy_before_training_and_in_python(files):
    """gradc.evaluate(..., scores=) in Python: head 1 and head 2 at the initial weights, Paddle's 0.479 and 0.583."""
    for task, expected in zip((1, 2), META["task1"]["accuracy_before"]):
        results = gradc.evaluate(files / "task1" / "forward.pb", files / f"task{task}_test.npz",
                                 files / "task1" / "init.npz", scores=META["task1"][f"head{task}"])
        assert results["acc"] == pytest.approx(expected, abs=1e-12)


def test_train_eval_reports_the_earlier_tasks_accuracy_each_epoch(files):
    """gradc train --eval TASK1_TEST --scores HEAD1 while task 2 trains: each epoch's accuracy on task 1 (forgetting
    watched as it happens), Paddle's after the stage; --scores alone asks for the accuracy (no --topk needed)."""
    program, startup = _compiled(files, "ewc")
    run = train_steps(program, startup, files / "task2_train.npz", 16, "--params", files / "task1" / "trained.npz",
                      "--params", files / "ewc_state.npz", "--eval", files / "task1_test.npz", "--scores",
                      META["ewc"]["head1"])
    assert run.returncode == 0, run.stderr
    epoch = [line for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"][0]
    assert epoch["eval"]["acc"] == pytest.approx(META["ewc"]["accuracy"][0], abs=1e-12)


def test_an_exported_two_head_model_is_scored_head_by_head(files):
    """gradc export of the EWC model with both heads (task1, task2) and gradc evaluate of the export: it said only "no
    class scores to score against labels; name the loss, the scalars or the labels", of a model with two; now it names
    the two outputs and --scores, and --scores task1 / task2 gives each task's accuracy, Paddle's."""
    folder = files / "ewc"
    exported = gradc_cli("export", folder / "forward.pb", "-o", folder / "exp", "--input", "x", "--fetch",
                         f"{META['ewc']['head1']}=task1", "--fetch", f"{META['ewc']['head2']}=task2", "--params",
                         folder / "trained.npz", "--params", files / "ewc_state.npz")
    assert exported.returncode == 0, exported.stderr
    model, params = folder / "exp.pdmodel", folder / "exp.pdiparams"
    said = gradc_cli("evaluate", model, "--params", params, "--data", files / "task1_test.npz")
    assert said.returncode == 1
    assert "several outputs that could be class scores (task1, task2): name the one to score against 'label' with " \
           "--scores NAME" in said.stderr
    for task in (1, 2):
        run = gradc_cli("evaluate", model, "--params", params, "--data", files / f"task{task}_test.npz", "--scores",
                        f"task{task}", "--json")
        assert json.loads(run.stdout)["acc"] == pytest.approx(META["ewc"]["accuracy"][task - 1], abs=1e-12)
    wrong = gradc_cli("evaluate", model, "--params", params, "--data", files / "task1_test.npz", "--scores", "head1")
    assert wrong.returncode == 1
    assert "--scores head1: no op of the forward part of the program writes it" in wrong.stderr


def test_a_replay_buffer_smaller_than_the_task_is_cycled(files, tmp_path):
    """Fault: --data task2 (64 examples) --data replay (24) was refused, "they must hold as many examples each (cut the
    larger to the smaller)": a replay buffer is smaller than the task by design. Now --cycle repeats it, example i of
    the epoch its i mod 24 (the losses above are Paddle's); without --cycle the error names it; a buffer of sequences
    (LoD) is one error line; in Python, Dataset.joined(..., cycle=True)."""
    program, startup = _compiled(files, "replay")
    args = ["--params", files / "task1" / "trained.npz", "--data", files / "replay.npz"]
    refused = train_steps(program, startup, files / "task2_train.npz", 16, *args)
    assert refused.returncode == 1 and "repeat the smaller with --cycle: a replay buffer" in refused.stderr
    joined = gradc.Dataset.joined([files / "task2_train.npz", files / "replay.npz"], cycle=True)
    batch = list(joined.batches(0, 16))[1]
    np.testing.assert_array_equal(batch["replay_x"], np.load(files / "replay.npz")["replay_x"][np.arange(16, 32) % 24])
    replay = dict(np.load(files / "replay.npz"))
    np.savez(tmp_path / "lod.npz", **replay, **{"replay_x@LOD0": np.arange(25)})
    lod = train_steps(program, startup, files / "task2_train.npz", 16, *args[:2], "--data", tmp_path / "lod.npz",
                      "--cycle")
    assert lod.returncode == 1 and "holds sequences (LoD), which --cycle does not repeat" in lod.stderr


def test_check_calls_a_penalty_at_its_anchor_stationary_not_flat(files):
    """Fault: at EWC's trained weights head 1 sits at its anchor (task 2's loss does not read it), a gradient of 0,
    and check said "the loss is flat in them here ... (a step such as round, sign or a one-hot of argmax on the way)",
    sending the user after a step that is not there. Now a var whose gradient is 0 is moved both ways along a random
    direction: the EWC penalty rises on both sides, a stationary point, said as such; a flat loss (a hard
    gumbel_softmax's, week 53) is said as before."""
    first = dict(np.load(files / "task2_train.npz"))
    np.savez(files / "task2_head.npz", **{name: value[:16] for name, value in first.items()})
    run = gradc_cli("check", files / "ewc" / "forward.pb", "--params", files / "ewc" / "trained.npz", "--params",
                    files / "ewc_state.npz", "--feed", files / "task2_head.npz")
    assert run.returncode == 0, run.stderr
    assert ("head1.b, head1.w: a gradient of 0 at every element, central differences too, but the loss rises or "
            "falls on both sides: a stationary point in them (a penalty at its anchor, w = w*)") in run.stdout
    assert "round, sign" not in run.stdout


def test_a_trunk_frozen_by_trainable_false_is_said_frozen(files):
    """Fault: a legacy program keeps no trainable=False on the parameter's VarDesc, only its readers' outputs marked
    stop_gradient, and gradc compile warned "parameters that get no gradient and will not train: trunk.w: its path
    to the loss goes through 'linear_0.tmp_0', which is stop_gradient (a detach, or stop_gradient = True left on a
    layer's output)", as of a mistake; info listed no frozen parameter. Since week 59 (backward/frozen.py) a parameter
    whose readers beside stop_gradient inputs write stop_gradient outputs is frozen: a note, and info counts it; head
    1, off the loss, is still a warning, and so is a trunk detached after its layer (a trainable trunk's inner output
    unmarked)."""
    compiled = gradc_cli("compile", files / "frozen" / "forward.pb", "-o", files / "frozen" / "f.pb")
    assert ("note: parameters frozen, without a gradient: 2 (trunk.b, trunk.w): not trainable in Paddle "
            "(ParamAttr(trainable=False)") in compiled.stderr
    assert "will not train: 2 (head1.b, head1.w): the loss does not depend on it" in compiled.stderr
    assert "trunk" not in compiled.stderr.split("will not train")[1]
    info = json.loads(gradc_cli("info", files / "frozen" / "forward.pb", "--json").stdout)
    assert info["frozen_parameters"] == ["trunk.b", "trunk.w"]
    program = gradc.load(files / "task1" / "forward.pb")
    program.global_block.var("linear_0.tmp_1").stop_gradient = True   # h.stop_gradient = True after the trunk
    gradc.save(program, files / "detached.pb")
    detached = gradc_cli("compile", files / "detached.pb", "-o", files / "d.pb")
    assert "(trunk.b, trunk.w): its path to the loss goes through 'linear_0.tmp_1'" in detached.stderr
    assert "frozen" not in detached.stderr
