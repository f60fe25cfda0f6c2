"""A meta-learning researcher's week (docs/tools.md): MAML on sinusoid regression built by Paddle 3.3.1 in legacy
static mode (tools/paddle_user_week21.py): a 1-40-40-1 MLP whose inner SGD step is written in the program
(`paddle.static.gradients` of the support loss, then w' = w - alpha g as ops), the query loss at w' minimized by Adam
through the inner gradient (second derivatives); first-order MAML (the inner gradients detached) and Meta-SGD (a
learned rate per parameter, two inner steps, a gradient-norm penalty). One task a step. Each fault found, as the
behaviour it has now."""

import gzip
import json
import shutil

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.gradcheck import compare_program

WEEK = DATA / "user_week21"
META = json.loads((WEEK / "meta.json").read_text())
TASKS = dict(np.load(WEEK / "tasks.npz"))
CLASSIFY = META.pop("classify")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them: the programs unpacked, each case's beside its arrays."""
    out = tmp_path_factory.mktemp("week21")
    shutil.copy(WEEK / "tasks.npz", out / "tasks.npz")
    for case in [*META, "classify"]:
        (out / case).mkdir()
        for path in (WEEK / case).iterdir():
            if path.suffix == ".gz":
                (out / case / path.stem).write_bytes(gzip.decompress(path.read_bytes()))
            else:
                shutil.copy(path, out / case / path.name)
    return out


def _task(step: int) -> dict:
    return {name: value[step] for name, value in TASKS.items()}


def _compiled(files, case: str):
    """outer.pb compiled with Paddle's Adam (lr 1e-3): the training program and its startup."""
    train = files / case / "gradc_train.pb"
    if not train.exists():
        done = gradc_cli("compile", files / case / "outer.pb", "-o", train, "--optimizer", "adam", "--lr", "0.001")
        assert done.returncode == 0, done.stderr
    return train, files / case / "gradc_train.startup.pb"


def test_one_task_a_step_trains_to_paddles_outer_losses_with_episodes(files):
    """Before, `gradc train --data tasks.npz --batch-size 1` (a task a row: 10 support and 10 query points) was
    refused, "has shape [1, 10, 1], but block 0 declares [10, 1] (... --batch-size 10 and --drop-last)", advice that
    feeds [10, 10, 1]; gradc had no way to feed a row as a step's whole feed. Now the error says --episodes, and with it
    the compiled MAML trains to Paddle's 8 outer losses, a step a task."""
    train, startup = _compiled(files, "maml")
    common = (train, "--startup", startup, "--params", files / "maml" / "params.npz", "--data", files / "tasks.npz")
    refused = gradc_cli("train", *common, "--batch-size", "1")
    assert refused.returncode == 1
    assert "each example of the data is a whole feed of [10, 1]" in refused.stderr and "--episodes" in refused.stderr
    done = gradc_cli("train", *common, "--episodes", "--json", "--log-every", "1")
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    losses = [line["values"]["mean_1.tmp_0"] for line in lines if line["event"] == "step"]
    np.testing.assert_allclose(losses, META["maml"]["losses"], rtol=1e-6)
    assert lines[-1]["examples"] == 8


def test_evaluation_runs_the_inner_step_and_reports_the_outer_loss(files):
    """Before, `gradc evaluate outer.pb` reported the support loss (mean_0.tmp_0, 8.566 at the startup's values), the
    one `static.gradients` seeds, not the query loss after the inner step; and `gradc train --eval` of the compiled
    MAML stopped: "the fetches need 'w0@GRAD', which is neither fed nor computed" (the forward part dropped the inner
    step's backward ops). Now both give the outer loss, its mean over the tasks Paddle's (6.6667)."""
    done = gradc_cli("evaluate", files / "maml" / "outer.pb", "--data", files / "tasks.npz", "--params",
                     files / "maml" / "params.npz", "--episodes", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["loss_var"] == "mean_1.tmp_0" and result["examples"] == 8
    np.testing.assert_allclose(result["loss"], np.mean(META["maml"]["untrained_losses"]), rtol=1e-6)
    train, startup = _compiled(files, "maml")
    done = gradc_cli("train", train, "--startup", startup, "--params", files / "maml" / "params.npz", "--data",
                     files / "tasks.npz", "--episodes", "--eval", files / "tasks.npz", "--json")
    assert done.returncode == 0, done.stderr
    assert list(json.loads(done.stdout.splitlines()[-1])["eval"]) == ["mean_1.tmp_0"]


@pytest.mark.parametrize("case", ["maml", "metasgd"])
def test_meta_gradients_are_central_differences_and_paddles(files, case):
    """The meta-gradient through the inner step(s) (no fault): float64 central differences of the outer loss as a
    function of every parameter (Meta-SGD's rates too) agree with gradc's compiled gradient, and Paddle's first step's
    gradients are gradc's (to 1e-6: float32)."""
    program, params = gradc.load(files / case / "outer.pb"), dict(np.load(files / case / "params.npz"))
    analytic, checks = compare_program(program, _task(0), META[case]["params"], META[case]["loss"], params,
                                       float64=True, directions=3)
    assert [check.var for check in checks if check.mismatch is not None] == []
    paddle = np.load(files / case / "paddle.npz")
    for name in META[case]["params"]:
        np.testing.assert_allclose(analytic[name], paddle[f"grad.{name}"], rtol=1e-5, atol=1e-6 * np.abs(
            paddle[f"grad.{name}"]).max())


@pytest.mark.parametrize("case", ["maml", "metasgd"])
def test_paddles_own_training_programs_run_to_its_losses_and_weights(files, case):
    """Paddle's minimize programs, their *_grad_grad ops and all (no fault), give its 8 losses and its weights."""
    program = gradc.load(files / case / "train.pb")
    assert set(META[case]["grad_ops"]) <= {op.type for op in program.global_block.ops}
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(gradc.load(files / case / "startup.pb"), scope=scope)
    gradc.load_params(scope, files / case / "params.npz", program)
    losses = [float(executor.run(program, _task(step), [META[case]["loss"]], scope)[0]) for step in range(8)]
    np.testing.assert_allclose(losses, META[case]["losses"], rtol=1e-6)
    paddle = np.load(files / case / "paddle.npz")
    for name in META[case]["params"]:
        np.testing.assert_allclose(scope[name], paddle[f"trained.{name}"], rtol=1e-5, atol=1e-6)


def test_first_order_maml_takes_the_query_gradient_where_paddle_trains_nothing(files):
    """Paddle's minimize of first-order MAML's loss (the inner gradients `w@GRAD` marked stop_gradient) returns no
    parameter gradient, so its program has no adam op and its 'training' gives the untrained losses (found; Paddle's,
    left as it is). gradc's compile of the same program takes the first-order gradient: d(query loss)/d(w') exactly
    (no second derivatives), not MAML's; it trains."""
    paddle_program = gradc.load(files / "fomaml" / "train.pb")
    assert "adam" not in {op.type for op in paddle_program.global_block.ops}
    np.testing.assert_allclose(META["fomaml"]["losses"], META["fomaml"]["untrained_losses"], rtol=1e-7)
    train, startup = _compiled(files, "fomaml")
    program = gradc.load(train)
    adapted = {op.inputs["X"][0]: op.outputs["Out"][0] for op in program.global_block.ops
               if op.type == "elementwise_sub" and op.inputs["X"][0] in META["fomaml"]["params"]}
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(gradc.load(startup), scope=scope)
    gradc.load_params(scope, files / "fomaml" / "params.npz", program)
    names = META["fomaml"]["params"]
    fetched = executor.run(program, _task(0), [f"{w}@GRAD@2" for w in names] + [f"{adapted[w]}@GRAD" for w in names],
                           scope)
    for grad, query_grad in zip(fetched[:6], fetched[6:]):
        np.testing.assert_array_equal(grad, query_grad)
    maml = np.load(files / "maml" / "paddle.npz")["grad.w2"]
    assert np.abs(fetched[2] - maml).max() > 0.1 * np.abs(maml).max()
    losses = [float(executor.run(program, _task(step % 8), [META["fomaml"]["loss"]], scope)[0]) for step in range(40)]
    assert np.mean(losses[-8:]) < 0.8 * np.mean(losses[:8])


def test_the_inner_step_written_the_gradc_way_trains_to_paddles_maml(files):
    """The support loss alone (inner.pb), its gradient by gradc.gradients, w' = w - 0.01 g and the query loss at w'
    appended by a ProgramBuilder, minimized by gradc's Adam (no fault): Paddle's 8 MAML losses."""
    program = gradc.load(files / "maml" / "inner.pb")
    weights = META["maml"]["params"]
    grads = gradc.gradients(program, META["maml"]["inner_loss"], weights)
    builder = gradc.ProgramBuilder(program=program)

    def op(type, inputs, attrs=None):
        return builder.op(type, inputs, attrs)[0]

    fast = [op("elementwise_sub", {"X": w, "Y": op("scale", {"X": g}, {"scale": 0.01})})
            for w, g in zip(weights, grads)]
    hidden = "x_query"
    for layer in range(3):
        hidden = op("elementwise_add", {"X": op("matmul_v2", {"X": hidden, "Y": fast[2 * layer]}),
                                        "Y": fast[2 * layer + 1]})
        hidden = op("relu", {"X": hidden}) if layer < 2 else hidden
    loss = op("reduce_mean", {"X": op("square", {"X": op("elementwise_sub", {"X": hidden, "Y": "y_query"})})},
              {"reduce_all": True})
    startup = gradc.optimizers.Adam(learning_rate=1e-3).minimize(program, loss=loss)
    assert "relu_grad_grad" in {o.type for o in program.global_block.ops}
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(startup, scope=scope)
    gradc.load_params(scope, files / "maml" / "params.npz", program)
    losses = [float(executor.run(program, _task(step), [loss], scope)[0]) for step in range(8)]
    np.testing.assert_allclose(losses, META["maml"]["losses"], rtol=1e-6)


def test_logged_gradient_norms_of_paddles_maml_program_are_the_meta_gradients(files):
    """Before, `gradc train --log-grad-norms` of Paddle's MAML training program logged the inner step's gradients
    `w@GRAD` (total 15.37, w2 8.959), which the forward reads, where Adam steps with Paddle's `grad/grad/w@GRAD`, the
    meta-gradients (total 8.657, w2 5.599, the norms of Paddle's fetched gradients)."""
    done = gradc_cli("train", files / "maml" / "train.pb", "--startup", files / "maml" / "startup.pb", "--params",
                     files / "maml" / "params.npz", "--data", files / "tasks.npz", "--episodes", "--steps", "1",
                     "--log-grad-norms", "--log-every", "1", "--json")
    assert done.returncode == 0, done.stderr
    step = next(line for line in map(json.loads, done.stdout.splitlines()) if line["event"] == "step")
    paddle = np.load(files / "maml" / "paddle.npz")
    want = {name: float(np.linalg.norm(paddle[f"grad.{name}"])) for name in META["maml"]["params"]}
    logged = step["grad_norms"]["parameters"]
    np.testing.assert_allclose([logged[name] for name in want], list(want.values()), rtol=1e-5)


def test_check_of_paddles_maml_training_program_keeps_its_inner_step(files):
    """Before, `gradc check train.pb` of Paddle's MAML training program (a user who saved only what minimize made)
    was refused: "already a training program ... check the forward program it was compiled from", its forward part
    reading the inner step's gradients. Now the forward part keeps the backward ops the loss needs, and the
    meta-gradients of Meta-SGD's 12 parameters agree with central differences."""
    feed = files / "task0.npz"
    np.savez(feed, **_task(0))
    done = gradc_cli("check", files / "metasgd" / "train.pb", "--feed", feed, "--params",
                     files / "metasgd" / "params.npz", "--startup", files / "metasgd" / "startup.pb",
                     "--directions", "2", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["loss"] == META["metasgd"]["loss"] and len(result["vars"]) == 12


def test_episodes_in_python_and_where_they_do_not_apply(files):
    """The Python side of --episodes: gradc.Dataset(arrays, episodes=True) trains a task a step (Paddle's losses);
    --episodes without --data is a usage error, as the other options of data are."""
    train, startup = _compiled(files, "maml")
    trainer = gradc.Trainer(gradc.load(train), [gradc.load(startup)])
    gradc.load_params(trainer.scope, files / "maml" / "params.npz", trainer.program)
    history = trainer.fit(gradc.Dataset(TASKS, "tasks", episodes=True))
    np.testing.assert_allclose([values[0] for values in history.steps], META["maml"]["losses"], rtol=1e-6)
    feed = files / "task0.npz"
    np.savez(feed, **_task(0))
    refused = gradc_cli("train", train, "--startup", startup, "--feed", feed, "--episodes")
    assert refused.returncode == 2 and "--episodes: only with --data" in refused.stderr


def test_an_adapt_and_predict_model_exports_with_its_inner_step(files, tmp_path):
    """Feeds the support set and the query x, fetches the prediction at w' (no fault): exported as .pb and as PIR it
    keeps the inner step's backward ops and predicts as the program does."""
    program, params = gradc.load(files / "maml" / "outer.pb"), dict(np.load(files / "maml" / "params.npz"))
    prediction = [op for op in program.global_block.ops if op.type == "elementwise_sub"][-1].input("X")[0]
    scope = gradc.Scope()
    gradc.load_params(scope, files / "maml" / "params.npz", program)
    want, = gradc.Executor().run(program, _task(3), [prediction], scope)
    feeds = ["x_support", "y_support", "x_query"]
    for fmt in ("pb", "pir"):
        model_path, params_path = gradc.export(program, tmp_path / fmt, feeds=feeds, fetches=[prediction],
                                               values=params, format=fmt)
        model = gradc.load(model_path)
        assert "matmul_v2_grad" in {op.type for op in model.global_block.ops}
        loaded = gradc.Scope()
        gradc.load_params(loaded, params_path, model)
        got, = gradc.Executor().run(model, {name: _task(3)[name] for name in feeds}, None, loaded)
        np.testing.assert_array_equal(got, want)


def test_five_way_classification_maml_picks_its_outer_loss_and_scores_the_query(files):
    """5-way MAML of random vectors (softmax cross-entropy inside the inner step; `paddle.static.accuracy` of the
    query after the loss). Paddle's minimize fails: no maker of softmax_with_cross_entropy_grad's gradient. Before,
    gradc picked no loss (the accuracy op, last, writes three scalars): `gradc compile` and `gradc check` said "the
    program already has backward ops", `gradc evaluate` "computes no loss", and its top-1 accuracy scored the
    support's logits before the inner step (0.19, chance). Now the loss is the query's (a notice names it), its
    gradient that of central differences, the evaluated loss and accuracy Paddle's means over the 8 tasks (1.2279,
    0.54), and compiled it trains: 10 epochs raise the query accuracy past 0.7."""
    assert "softmax_with_cross_entropy_grad" in CLASSIFY["paddle_minimize"]
    outer, params, tasks = (files / "classify" / name for name in ("outer.pb", "params.npz", "tasks.npz"))
    feed = files / "classify_task0.npz"
    np.savez(feed, **{name: value[0] for name, value in np.load(tasks).items()})
    checked = gradc_cli("check", outer, "--feed", feed, "--params", params, "--directions", "3", "--json")
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout)["loss"] == CLASSIFY["loss"]
    done = gradc_cli("evaluate", outer, "--data", tasks, "--params", params, "--episodes", "--fetch",
                     CLASSIFY["accuracy"], "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    np.testing.assert_allclose(result["loss"], np.mean(CLASSIFY["untrained_losses"]), rtol=1e-6)
    np.testing.assert_allclose([result["acc"], result[CLASSIFY["accuracy"]]],
                               [np.mean(CLASSIFY["untrained_accuracy"])] * 2, rtol=1e-6)
    train = files / "classify" / "train.pb"
    assert gradc_cli("compile", outer, "-o", train, "--optimizer", "adam", "--lr", "0.001").returncode == 0
    trained = gradc_cli("train", train, "--startup", files / "classify" / "train.startup.pb", "--params", params,
                        "--data", tasks, "--episodes", "--epochs", "10", "--eval", tasks, "--fetch", CLASSIFY["loss"],
                        "--fetch", CLASSIFY["accuracy"], "--json")
    assert trained.returncode == 0, trained.stderr
    final = json.loads(trained.stdout.splitlines()[-1])["eval"]
    assert final[CLASSIFY["loss"]] < 0.9 * np.mean(CLASSIFY["untrained_losses"]) and final[CLASSIFY["accuracy"]] > 0.7
