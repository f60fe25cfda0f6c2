"""An anomaly-detection and continual-learning engineer's week (docs/tools.md): a dense and a convolutional autoencoder
(Conv2D, BatchNorm2D, Conv2DTranspose) scored by per-example reconstruction errors, Deep SVDD with its center fed or
held as a frozen parameter, an autoencoder with an input-gradient-norm penalty (a second-order training), and EWC on
a second task with the per-example Fisher and old weights loaded as frozen vars, trained by Adam and SGD with
momentum against Paddle 3.3.1's (tools/paddle_user_week51.py); the penalties checked against central differences;
the anomaly scores' AUC by gradc evaluate; Paddle's PIR training program. Each fault found, as the behaviour it has
now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses
from user_weeks import assert_weights_like_paddles, unpacked_with_firsts

WEEK = DATA / "user_week51"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("dense", "conv", "svdd_fed", "svdd_param", "gradpen", "ewc")
COMPILE = {"dense": ("--optimizer", "adam"), "conv": ("--optimizer", "momentum", "--lr", 0.05, "--momentum", 0.9),
           "svdd_fed": ("--optimizer", "adam"), "svdd_param": ("--optimizer", "adam"),
           "gradpen": ("--optimizer", "momentum", "--lr", 0.05, "--momentum", 0.9), "ewc": ("--optimizer", "adam")}
# Deep SVDD's center, the same for every batch: fed whole beside the batches (--feed FIXED beside --data)
FIXED = {"svdd_fed": "center.npz"}
# the dense autoencoder's first-layer weight [9, 2] has a gradient of 1.6e-8 (float64) at the first step, below
# float32's rounding of its sum over the batch (Paddle 3.4e-9 and gradc's differ there, the rest to 4e-8): Adam's
# m / (sqrt(v) + 1e-8) makes each rounding a step of the rate's size, and the losses part from step 2 (1.5e-4)
LOSS_RTOL, WEIGHTS_ATOL = {"dense": 3e-4}, {"dense": 5e-3}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model; each model's first batch."""
    return unpacked_with_firsts(WEEK, tmp_path_factory.mktemp("week51"), MODELS, 8)


def _fixed(folder, model):
    return ("--feed", folder / FIXED[model]) if model in FIXED else ()


@pytest.mark.parametrize("model", MODELS)
def test_each_model_trains_to_paddles_losses_and_weights(files, model):
    """gradc compile with the user's optimizer and train from Paddle's initial weights: 5 steps give Paddle's losses to
    1e-6 relative and its weights to 3e-7 (the dense model's: LOSS_RTOL): the batch-normed convolutional autoencoder,
    the frozen center (and EWC's frozen Fisher and old weights) left as loaded, the gradient penalty's second-order
    backward (no fault)."""
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "train_gradc.pb", "--lr", 0.01,
                         *COMPILE[model])
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", folder / "train_gradc.pb", "--startup", folder / "train_gradc.startup.pb", "--params",
                    folder / "init.npz", "--data", folder / "data.npz", "--batch-size", 8, "--json", "--log-every", 1,
                    "--save-params", folder / "trained_gradc.npz", *_fixed(folder, model))
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=LOSS_RTOL.get(model, 1e-6))
    assert_weights_like_paddles(folder, WEIGHTS_ATOL.get(model, 3e-7))


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_training_programs_train_in_gradc(files, model):
    """Paddle's own minimize() programs from its startup give its 5 losses (1e-6) (no fault)."""
    folder = files / model
    run = gradc_cli("train", folder / "train.pb", "--startup", folder / "startup.pb", "--params", folder / "init.npz",
                    "--data", folder / "data.npz", "--batch-size", 8, "--json", "--log-every", 1,
                    *_fixed(folder, model))
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=LOSS_RTOL.get(model, 1e-6))


@pytest.mark.parametrize("model", ("dense", "conv", "svdd_param", "gradpen", "ewc"))
def test_run_gives_paddles_anomaly_scores(files, model):
    """gradc run --test-mode on Paddle's trained weights gives each test example's score (the mean over features of
    F.mse_loss(reduction='none'), the batch-normed model's with its running statistics, Deep SVDD's distance) as
    Paddle's for_test clone gave it (no fault)."""
    folder = files / model
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / "trained.npz", "--feed", folder / "test.npz",
                    "--test-mode", "--fetch", f"{META[model]['score']}=score", "-o", folder / "scores_gradc.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(folder / "scores_gradc.npz")["score"], np.load(folder / "scores.npz")["score"],
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("model, loss", [("dense", None), ("conv", None), ("svdd_param", None), ("gradpen", None),
                                         ("gradpen", "penalty"), ("ewc", None), ("ewc", "penalty")])
def test_check_of_losses_and_penalties_against_central_differences(files, model, loss):
    """gradc check on Paddle's trained weights: every parameter checked agrees with float64 central differences, the
    input-gradient penalty alone (its second-order backward) and EWC's penalty alone too (no fault)."""
    folder = files / model
    chosen = ("--loss", META[model][loss]) if loss else ()
    run = gradc_cli("check", folder / "forward.pb", "--params", folder / "trained.npz", "--feed", folder / "first.npz",
                    "--json", *chosen)
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["problems"] == [] and result["vars"] and all(var["ok"] for var in result["vars"])


def test_check_of_an_input_on_no_path_to_the_loss_says_it_tested_no_gradient(files):
    """EWC's penalty alone reads the parameters only: compile --wrt x refuses x, but check --wrt x said a plain "ok" of
    its zeros (0 both ways) and counted it as a gradient checked. Its row and --json now say it has no path to the
    loss, and the summary counts only the weight, whose gradient was compared."""
    folder, penalty = files / "ewc", META["ewc"]["penalty"]
    refused = gradc_cli("compile", folder / "forward.pb", "-o", folder / "x_grad.pb", "--loss", penalty, "--wrt", "x")
    assert refused.returncode == 1 and "--wrt: no gradient of x: on no path to the loss" in refused.stderr
    args = ("check", folder / "forward.pb", "--params", folder / "trained.npz", "--feed", folder / "first.npz",
            "--loss", penalty, "--wrt", "x", "--wrt", "linear_0.w_0")
    run = gradc_cli(*args)
    assert run.returncode == 0, run.stderr
    x_row, weight_row, summary = run.stdout.splitlines()
    assert x_row.startswith("x ") and x_row.endswith("0.00e+00  ok (no path to the loss: 0 both ways)")
    assert weight_row.startswith("linear_0.w_0 ") and weight_row.endswith("  ok")
    assert summary == (f"1 var(s) checked: compiled gradients agree with central differences (loss {penalty}); x on "
                       f"no path to the loss (0 both ways: no gradient tested)")
    x, weight = json.loads(gradc_cli(*args, "--json").stdout)["vars"]
    assert (x["var"], x["ok"], x["no_path_to_loss"], x["max_abs_error"]) == ("x", True, True, 0.0)
    assert (weight["var"], weight["ok"], weight["no_path_to_loss"]) == ("linear_0.w_0", True, False)


def test_paddles_pir_training_program_trains_to_its_losses(files):
    """The dense autoencoder minimized in PIR static mode: gradc trains Paddle's serialized program from its initial
    values to its 5 PIR losses (the first to 1e-7, the rest as the legacy program's: LOSS_RTOL) (no fault)."""
    run = gradc_cli("train", files / "dense_pir_train.json", "--startup", files / "dense_pir_startup.json",
                    "--params", files / "dense_pir_init.npz", "--data", files / "dense" / "data.npz", "--batch-size",
                    8, "--fetch", "loss", "--json", "--log-every", 1)
    losses = json.loads((WEEK / "pir_losses.json").read_text())["dense"]
    np.testing.assert_allclose(step_losses(run), losses, rtol=LOSS_RTOL["dense"])
    np.testing.assert_allclose(step_losses(run)[0], losses[0], rtol=1e-7)


@pytest.mark.parametrize("command", ("check", "run"))
def test_check_and_run_take_a_batch_and_a_fixed_input_as_two_feeds(files, command):
    """Deep SVDD's center is fed beside the batch: train takes --data D --feed center.npz, but check and run took one
    --feed, a second silently replacing the first ('reads var 'x' (slot X), which is not fed'). --feed is
    repeatable now, the files' arrays fed together (run --fetch gives Paddle's distances of the test set)."""
    folder = files / "svdd_fed"
    feeds = ("--feed", folder / ("first.npz" if command == "check" else "test.npz"), "--feed", folder / "center.npz")
    if command == "check":
        run = gradc_cli("check", folder / "forward.pb", "--params", folder / "trained.npz", *feeds, "--json")
        assert run.returncode == 0, run.stdout + run.stderr
        assert [var["var"] for var in json.loads(run.stdout)["vars"]] == ["linear_0.w_0", "linear_1.w_0"]
        return
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / "trained.npz", *feeds, "--fetch",
                    f"{META['svdd_fed']['score']}=score", "-o", folder / "fed_scores.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(folder / "fed_scores.npz")["score"], np.load(folder / "scores.npz")["score"],
                               rtol=1e-5, atol=1e-6)


def test_a_feed_without_the_fixed_input_names_the_input_not_fed(files):
    """The test set alone (its labels beside x, no center) was refused for its labels only, 'feed var 'label' is not
    declared in block 0 (the program's inputs: center, x)', which is not what is wrong; the line now names the
    input the feed lacks."""
    folder = files / "svdd_fed"
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / "trained.npz", "--feed", folder / "test.npz",
                    "--fetch", META["svdd_fed"]["score"])
    assert run.returncode == 1 and run.stderr.count("\n") == 1
    assert "(the program's inputs: center, x; not fed: center)" in run.stderr, run.stderr


def _roc_host_side(scores, labels):
    """Host-side, by definition: the share of (anomaly, normal) pairs in order, ties half; the average precision as
    the sum over each distinct threshold, highest first, of the precision of the examples at or above it times the
    recall it adds."""
    odd, normal = scores[labels > 0], scores[labels <= 0]
    auc = np.mean((odd[:, None] > normal[None]) + 0.5 * (odd[:, None] == normal[None]))
    precision_recall = [(np.sum(labels[scores >= t] > 0) / np.sum(scores >= t), np.sum(labels[scores >= t] > 0) /
                         np.sum(labels > 0)) for t in sorted(set(scores.tolist()), reverse=True)]
    recalls = [0.0] + [recall for _, recall in precision_recall]
    return auc, sum(p * (r - before) for (p, r), before in zip(precision_recall, recalls))


@pytest.mark.parametrize("model", ("dense", "conv", "svdd_fed", "gradpen", "ewc"))
def test_evaluate_gives_the_anomaly_scores_auc(files, model):
    """gradc evaluate had no AUC of a score an example against the data's labels: the auc op's wants probabilities of
    two classes (a reconstruction error is neither), --topk found no class scores, and --fetch of the per-example
    score was refused ('training reports scalars'). --roc SCORE,LABEL gives the set's ROC AUC and average precision:
    on Paddle's trained weights, Paddle's scores' AUC (meta.json: 0.958 for the dense autoencoder, 0.839 for the
    convolutional one, 1.0 Deep SVDD's) and a host-side average precision, the same at batch sizes 5 and 32."""
    folder = files / model
    for batch in (5, 32):
        run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data", folder /
                        "test.npz", "--roc", f"{META[model]['score']},label", "--batch-size", batch, "--json",
                        *_fixed(folder, model))
        assert run.returncode == 0, run.stderr
        result = json.loads(run.stdout)
        auc, average_precision = _roc_host_side(np.load(folder / "scores.npz")["score"],
                                                np.load(folder / "test.npz")["label"])
        assert result["roc_auc"] == pytest.approx(META[model]["auc"], abs=1e-12) == pytest.approx(auc, abs=1e-12)
        assert result["average_precision"] == pytest.approx(average_precision, abs=1e-9)
        assert "acc" not in result and result["examples"] == 32


def test_train_evaluates_and_keeps_the_epoch_of_the_best_auc(files, tmp_path):
    """train --eval takes --roc too: each epoch reports roc_auc and average_precision, and --monitor roc_auc keeps the
    best epoch's weights, whose AUC gradc evaluate gives again."""
    folder = files / "dense"
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "t.pb", "--optimizer", "adam",
                     "--lr", 0.01).returncode == 0
    roc = ("--roc", f"{META['dense']['score']},label")
    run = gradc_cli("train", tmp_path / "t.pb", "--startup", tmp_path / "t.startup.pb", "--params", folder /
                    "init.npz", "--data", folder / "data.npz", "--batch-size", 8, "--epochs", 3, "--eval", folder /
                    "test.npz", *roc, "--early-stop", 2, "--monitor", "roc_auc", "--save-params",
                    tmp_path / "kept.npz", "--json")
    assert run.returncode == 0, run.stderr
    epochs = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert [sorted(epoch) for epoch in epochs] == [["average_precision", "mean_0.tmp_0", "roc_auc"]] * 3
    again = gradc_cli("evaluate", folder / "forward.pb", "--params", tmp_path / "kept.npz", "--data", folder /
                      "test.npz", *roc, "--json")
    assert json.loads(again.stdout)["roc_auc"] == pytest.approx(max(epoch["roc_auc"] for epoch in epochs), abs=1e-12)


def test_train_with_an_eval_set_of_one_class_trains_and_saves(files, tmp_path):
    """An eval set of normal examples alone: train --eval --roc stopped after epoch 1 ('the AUC ... are undefined'),
    the weights unsaved; now each epoch's AUC is nan, said once, --monitor roc_auc keeps no NaN epoch and it saves."""
    folder = files / "dense"
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "t.pb", "--optimizer", "adam",
                     "--lr", 0.01).returncode == 0
    np.savez(tmp_path / "normal.npz", x=np.load(folder / "test.npz")["x"], label=np.zeros(32, np.int64))
    run = gradc_cli("train", tmp_path / "t.pb", "--startup", tmp_path / "t.startup.pb", "--params", folder /
                    "init.npz", "--data", folder / "data.npz", "--batch-size", 8, "--epochs", 3, "--eval",
                    tmp_path / "normal.npz", "--roc", f"{META['dense']['score']},label", "--early-stop", 1,
                    "--monitor", "roc_auc", "--save-params", tmp_path / "kept.npz", "--json")
    assert run.returncode == 0 and (tmp_path / "kept.npz").exists(), run.stderr
    assert run.stderr.count("every label 'label' is negative (0 or less)") == 1, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    assert [line["eval"]["roc_auc"] for line in lines if line["event"] == "epoch"] == ["nan"] * 3


@pytest.mark.parametrize("roc, code, message", [
    ("x", 2, "give SCORE,LABEL (the program's score of each example, [N] or [N, 1]"),
    ("{recon},label", 1, "'linear_3.tmp_1' [-1, 16] is not one score an example: give [N] or [N, 1]"),
    ("{score},labels", 1, "the data has no array 'labels' (it holds label, x)"),
    ("nope,label", 1, "'nope' is not computed by the forward part of the program")])
def test_evaluate_roc_refuses_what_it_cannot_score(files, roc, code, message):
    """One line naming what is wrong: a malformed option (a usage error), a reconstruction rather than its error,
    an array the data lacks, a var the program does not compute."""
    folder = files / "dense"
    named = roc.format(score=META["dense"]["score"], recon=META["dense"]["recon"])
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    folder / "test.npz", "--roc", named)
    assert run.returncode == code and message in run.stderr and "Traceback" not in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1


def test_evaluate_roc_of_a_set_of_one_class_is_undefined(files, tmp_path):
    """Labels all normal: the AUC and average precision "nan" in --json (not the literal NaN), a note saying why (it
    was refused, which stopped train --eval unsaved)."""
    folder = files / "dense"
    np.savez(tmp_path / "normal.npz", x=np.load(folder / "test.npz")["x"], label=np.zeros(32, np.int64))
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    tmp_path / "normal.npz", "--roc", f"{META['dense']['score']},label", "--json")
    assert run.returncode == 0, run.stderr
    assert ("every label 'label' is negative (0 or less): the AUC and the average precision are undefined (nan)"
            in run.stderr)
    result = json.loads(run.stdout, parse_constant=lambda literal: pytest.fail(f"{literal} in --json"))
    assert result["roc_auc"] == result["average_precision"] == "nan"


def test_per_example_gradients_give_paddles_fisher_and_ewc_trains_on_it(files, tmp_path):
    """EWC's Fisher diagonal is the mean of each example's squared gradient of its log-likelihood; gradc run gave the
    gradient of the batch's sum only, so 32 examples took 32 runs. run --per-example runs each example as a batch of
    one and stacks each fetch: the mean of the squares is Paddle's Fisher to 1e-6 relative (2.7e-7 measured), and
    the EWC program loading it (with the old weights, as frozen vars) trains to Paddle's losses."""
    run = gradc_cli("run", files / "loglik.pb", "--params", files / "dense" / "trained.npz", "--feed",
                    files / "fisher_data.npz", "--fetch", "linear_*.?_0@GRAD", "--per-example", "-o",
                    tmp_path / "grads.npz")
    assert run.returncode == 0, run.stderr
    grads, paddle = np.load(tmp_path / "grads.npz"), np.load(files / "fisher.npz")
    fisher = {name: np.mean(np.square(grads[f"{name}@GRAD"]), axis=0) for name in paddle.files}
    for name in paddle.files:
        assert grads[f"{name}@GRAD"].shape == (32, *paddle[name].shape)
        np.testing.assert_allclose(fisher[name], paddle[name], rtol=0, atol=1e-6 * np.abs(paddle[name]).max())
    trained = dict(np.load(files / "dense" / "trained.npz"))
    np.savez(tmp_path / "ewc.npz", **trained, **{f"old_{k}": v for k, v in trained.items()},
             **{f"fisher_{k}": v for k, v in fisher.items()})
    folder = files / "ewc"
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "ewc.pb", "--optimizer", "adam",
                     "--lr", 0.01).returncode == 0
    run = gradc_cli("train", tmp_path / "ewc.pb", "--startup", tmp_path / "ewc.startup.pb", "--params",
                    tmp_path / "ewc.npz", "--data", folder / "data.npz", "--batch-size", 8, "--json", "--log-every", 1)
    np.testing.assert_allclose(step_losses(run), META["ewc"]["losses"], rtol=1e-6)


@pytest.mark.parametrize("case, message", [
    ("trained", "--per-example: the program updates its parameters (optimizer ops), so each example's run would "
                "move them for the next: run the program compiled without --optimizer"),
    ("repeat", "--per-example and --repeat: give one"),
    ("empty", "--per-example: the feed holds no example (x: 0 rows)")])
def test_per_example_refuses_what_it_cannot_split(files, tmp_path, case, message):
    """A training program (each run would update the weights the next example's gradient is taken at), --repeat
    beside it, a feed of no example (was 'internal error: ValueError: need at least one array to stack'): one line."""
    folder = files / "dense"
    program = folder / "train.pb" if case == "trained" else files / "loglik.pb"
    extra = ("--repeat", 2) if case == "repeat" else ()
    np.savez(tmp_path / "empty.npz", x=np.load(folder / "first.npz")["x"][:0])
    feed = tmp_path / "empty.npz" if case == "empty" else folder / "first.npz"
    run = gradc_cli("run", program, "--params", folder / "init.npz", "--feed", feed, "--per-example", *extra)
    assert run.returncode in (1, 2) and message in run.stderr and run.stderr.count("\n") == 1, run.stderr


def test_gradcs_own_gradient_penalty_trains_to_paddles_and_fetch_lists_nest_as_paddles(files):
    """The penalty written with gradc's Python API on the autoencoder's program before Paddle's gradients (plain.pb):
    gradc.gradients of the error with respect to x, the squared norm's mean by ProgramBuilder.op, gradc.minimize with
    Momentum: 5 steps give Paddle's losses of its own penalty program (1e-6). Executor.run(fetch_list=[error,
    grads]), the list gradients() returns inside it, and Trainer(fetch=[total]) with the list ProgramBuilder.op
    returns, were refused ('fetch_list holds a list: give var names') and crashed ('TypeError: unhashable type:
    'list''); Paddle's executor flattens such lists, and gradc's now does too."""
    import gradc
    prog = gradc.load(files / "gradpen" / "plain.pb")
    error = META["gradpen"]["error"]
    (slope,) = gradc.gradients(prog, error, ["x"])
    builder = gradc.ProgramBuilder(program=prog)
    norms = builder.op("reduce_sum", {"X": builder.op("square", {"X": slope})}, {"dim": [1]})
    penalty = builder.op("reduce_mean", {"X": norms}, {"reduce_all": True})
    total = builder.op("elementwise_add", {"X": error, "Y": builder.op("scale", {"X": penalty}, {"scale": 0.1})})
    scope, first = gradc.Scope(), dict(np.load(files / "gradpen" / "first.npz"))
    gradc.load_params(scope, files / "gradpen" / "init.npz", prog)
    value, slopes = gradc.Executor().run(prog, feed=first, fetch_list=[error, [slope]], scope=scope)
    # the error and its input gradient at Paddle's initial weights make Paddle's first loss
    assert slopes.shape == (8, 16)
    assert float(value) + 0.1 * np.mean(np.sum(np.square(slopes), axis=1)) == pytest.approx(
        META["gradpen"]["losses"][0], rel=1e-6)
    startup = gradc.minimize(prog, optimizer="momentum", lr=0.05, momentum=0.9, loss=total)
    trainer = gradc.Trainer(prog, [startup], fetch=[total])
    gradc.load_params(trainer.scope, files / "gradpen" / "init.npz", prog)
    history = trainer.fit(str(files / "gradpen" / "data.npz"), batch_size=8, epochs=1)
    np.testing.assert_allclose([step[0] for step in history.steps], META["gradpen"]["losses"], rtol=1e-6)
