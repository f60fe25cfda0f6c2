"""A multi-task learning researcher's week (docs/tools.md): one shared trunk with a classification, a regression and
a multi-label head, each task's loss masked per sample (a batch without regression labels), trained by Adam against
Paddle 3.3.1's (tools/paddle_user_week48.py) with fixed weights, learned uncertainty weights, GradNorm (gradient norms
by paddle.static.gradients inside the forward: a double backward) and an MMoE; PCGrad's per-task gradients by
gradc.gradients; per-task metrics by gradc evaluate; a PIR export run by gradc. Each fault found, as the behaviour it
has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from gradc import optimizers
from gradc.training.history import default_fetch
from user_weeks import assert_weights_like_paddles, train_steps, trained_outputs

WEEK = DATA / "user_week48"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("fixed", "uncertainty", "gradnorm", "mmoe")
FOLDERS = (*MODELS, "gradnorm2")
TRUNK = ["linear_0.w_0", "linear_0.b_0", "linear_1.w_0", "linear_1.b_0"]
TASKS = ("cls_loss", "reg_loss", "ml_loss")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model; feeds of the first batch and of step 3's (no regression label)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week48"), FOLDERS)
    data = np.load(out / "data.npz")
    np.savez(out / "first.npz", **{name: data[name][:8] for name in data.files})
    np.savez(out / "step3.npz", **{name: data[name][24:32] for name in data.files})
    return out


def _train(program, startup, folder, *extra):
    return train_steps(program, startup, folder.parent / "data.npz", 8, *extra)


@pytest.mark.parametrize("model", MODELS)
def test_each_model_trains_to_paddles_losses_and_weights(files, model):
    """gradc compile --optimizer adam --lr 0.01 and train from Paddle's initial weights: 6 steps give Paddle's losses
    (1.6e-7 relative measured; GradNorm's through its double backward, step 3's empty regression mask included) and
    its weights to 6e-8 (no fault)."""
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "train_gradc.pb", "--optimizer", "adam",
                         "--lr", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    run = _train(folder / "train_gradc.pb", folder / "train_gradc.startup.pb", folder, "--params",
                 folder / "init.npz", "--save-params", folder / "trained_gradc.npz")
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    assert_weights_like_paddles(folder, 3e-7)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_adam_programs_train_in_gradc(files, model):
    """Paddle's own minimize() programs (GradNorm's with its matmul_v2_grad_grad, sigmoid_grad_grad, ... ops) from
    its initial weights (its startup drew them unseeded) give its 6 losses (1e-6) (no fault)."""
    folder = files / model
    run = _train(folder / "train.pb", folder / "startup.pb", folder, "--params", folder / "init.npz")
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model, loss", [("fixed", "cls_loss"), ("fixed", "reg_loss"), ("fixed", "ml_loss"),
                                         ("uncertainty", "loss"), ("gradnorm", "loss"), ("mmoe", "loss")])
def test_check_of_each_task_against_central_differences(files, model, loss):
    """gradc check --loss of each task (and each model's loss, GradNorm's second-order term included) on Paddle's
    trained weights, on step 3's batch (no regression label): float64 central differences agree (2.1e-10 measured)
    (no fault)."""
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / "step3.npz", "--loss", META[model][loss], "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    result = json.loads(run.stdout)
    assert result["problems"] == [] and result["vars"]


def test_run_gives_paddles_head_outputs(files):
    """gradc run on Paddle's trained weights: each head's outputs and task losses as Paddle's executor (no fault)."""
    for model in MODELS:
        ours, paddle, outputs = trained_outputs(files, model, META[model], files / "first.npz")
        for key in outputs:
            np.testing.assert_allclose(ours[key], paddle[key], rtol=1e-6, atol=3e-7, err_msg=f"{model} {key}")


def test_gradnorm_over_fused_losses_gradc_differentiates_twice_and_names_no_gradient_as_a_loss(files):
    """GradNorm over F.cross_entropy, smooth_l1_loss and BCE with pos_weight: Paddle's minimize refuses it (no grad
    of softmax_with_cross_entropy_grad); gradc compiles it and its gradients agree with central differences. Fault:
    compile and info noted 'float scalars no op reads besides it: linear_32.b_0@GRAD, grad/grad/linear_32.b_0@GRAD,
    ...; if one of them is the loss, name it': the [1] bias gradients paddle.static.gradients leaves unread."""
    compiled = gradc_cli("compile", files / "gradnorm_fused.pb", "-o", files / "gradnorm_fused_train.pb")
    assert compiled.returncode == 0, compiled.stderr
    assert "@GRAD" not in compiled.stderr and "no op reads" not in compiled.stderr
    info = gradc_cli("info", files / "gradnorm" / "forward.pb")
    assert f"loss: {META['gradnorm']['loss']} (gradc compile picks it by itself)\n" in info.stdout
    run = gradc_cli("check", files / "gradnorm_fused.pb", "--startup", files / "gradnorm_fused_startup.pb",
                    "--feed", files / "first.npz", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["problems"] == [] and len(json.loads(run.stdout)["vars"]) == 11


def test_pcgrad_per_task_gradients_by_the_python_api_are_paddles(files):
    """gradc.gradients of each task's loss w.r.t. the trunk (three backwards in one program, named @GRAD, @GRAD@2,
    @GRAD@3): Paddle's per-task gradients to 6e-8, and the PCGrad projection of them Paddle's to 1e-6 (no fault)."""
    prog = gradc.load(files / "fixed" / "forward.pb")
    per_task = [gradc.gradients(prog, META["fixed"][task], TRUNK) for task in TASKS]
    scope = gradc.Scope()
    gradc.load_params(scope, files / "fixed" / "init.npz", prog)
    fetched = gradc.Executor().run(prog, feed=files / "first.npz", fetch_list=[g for grads in per_task for g in grads],
                                   scope=scope)
    paddle = np.load(files / "pcgrad.npz")
    for index, (task, name) in enumerate((task, name) for task in ("cls", "reg", "ml") for name in TRUNK):
        np.testing.assert_allclose(fetched[index], paddle[f"{task}_{name}"], rtol=0, atol=2e-7, err_msg=name)
    flat = [np.concatenate([g.ravel() for g in fetched[i * 4:(i + 1) * 4]]).astype(np.float64) for i in range(3)]
    projected = []
    for i, grad in enumerate(flat):
        grad = grad.copy()
        for j, other in enumerate(flat):
            if j != i and grad @ other < 0:
                grad -= (grad @ other) / (other @ other) * other
        projected.append(grad)
    np.testing.assert_allclose(np.sum(projected, axis=0), paddle["projected"], rtol=0, atol=1e-6)


def test_a_task_loss_differentiated_by_gradients_is_no_training_loss(files, tmp_path):
    """gradc.gradients of the classification loss (to watch its gradient), then gradc.minimize of the total: train
    reported tmp_1 first (so --early-stop watched it), and info said 'loss: tmp_1 (op_role marks the losses tmp_1,
    tmp_10; the backward differentiates their sum)', which it does not: gradients() marked its target a loss op,
    where Paddle's paddle.static.gradients leaves it a forward op. Now the total alone is the loss, and the training
    gives Paddle's losses."""
    prog = gradc.load(files / "fixed" / "forward.pb")
    gradc.gradients(prog, META["fixed"]["cls_loss"], TRUNK)
    startup = gradc.minimize(prog, META["fixed"]["loss"], "adam", lr=0.01)
    assert default_fetch(prog) == [META["fixed"]["loss"]]
    gradc.save(prog, tmp_path / "train.pb")
    gradc.save(startup, tmp_path / "train.startup.pb")
    info = gradc_cli("info", tmp_path / "train.pb")
    assert f"loss: {META['fixed']['loss']} (its op's op_role marks it the loss)" in info.stdout
    run = _train(tmp_path / "train.pb", tmp_path / "train.startup.pb", files / "fixed", "--params",
                 files / "fixed" / "init.npz")
    np.testing.assert_allclose(step_losses(run), META["fixed"]["losses"], rtol=1e-6)


def _unguarded_by_clip(program: gradc.Program) -> gradc.Program:
    """The masked means' guard maximum(count, 1) written as paddle.clip(count, min=1) instead."""
    block = program.global_block
    for index, op in enumerate(block.ops):
        if op.type == "elementwise_max":
            block.ops[index] = gradc.OpDesc("clip", {"X": op.input("X")}, {"Out": op.output("Out")},
                                            {"min": 1.0, "max": 3.4028234663852886e38})
    return program


@pytest.mark.parametrize("guard", ["maximum", "clip"])
def test_evaluate_gives_each_masked_task_its_set_value(files, guard):
    """Fault: evaluate's regression loss (its mean over the labelled samples, sum(l * m) / maximum(sum(m), 1)) was
    1.37364 in one batch of 48 and 1.3164 at 8 a batch: the empty-mask batch's guard added 1 to the set's count
    (23 labelled + 1). Now the guard (maximum with a constant, or clip(min=1)) is left out of the set's count: each
    task's value is the set's at any batch size (1e-6), as one batch of the set (Paddle's) gives it."""
    prog = gradc.load(files / "fixed" / "forward.pb")
    if guard == "clip":
        prog = _unguarded_by_clip(prog)
    tasks = [META["fixed"][task] for task in TASKS]
    whole = gradc.evaluate(prog, files / "data.npz", files / "fixed" / "trained.npz", batch_size=48, fetch=tasks)
    for size in (8, 5):
        batched = gradc.evaluate(prog, files / "data.npz", files / "fixed" / "trained.npz", batch_size=size,
                                 fetch=tasks)
        for name in tasks:
            assert batched[name] == pytest.approx(whole[name], rel=1e-6), (size, name)
    data = np.load(files / "data.npz")
    assert data["m_reg"].sum() == 23 and data["m_reg"][24:32].sum() == 0


def test_several_task_losses_compile_train_and_evaluate_as_their_sum(files):
    """compile --loss per task (the unweighted sum's gradients), info names them, evaluate's loss is the sum of the
    tasks' set values (no fault)."""
    compiled = gradc_cli("compile", files / "fixed" / "forward.pb", "-o", files / "tasks.pb", *[
        arg for task in TASKS for arg in ("--loss", META["fixed"][task])], "--optimizer", "adam", "--lr", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    names = [META["fixed"][task] for task in TASKS]
    info = gradc_cli("info", files / "tasks.pb")
    assert f"op_role marks the losses {', '.join(names)}; the backward differentiates their sum" in info.stdout
    result = gradc.evaluate(gradc.load(files / "tasks.pb"), files / "data.npz", files / "fixed" / "trained.npz",
                            batch_size=8)
    assert result["loss_vars"] == names
    assert result["loss"] == pytest.approx(sum(result[name] for name in names), rel=1e-6)


def test_mean_of_an_empty_masked_select_is_nan_with_zero_gradient_and_check_says_why(files):
    """mean(masked_select(x, mask)) with nothing selected: gradc gives Paddle's NaN loss and zero gradient. Fault:
    check said only 'gradients differ from central differences for x'; now it says the central differences are not
    finite, the loss being undefined there."""
    compiled = gradc_cli("compile", files / "empty_mean.pb", "-o", files / "empty_mean_train.pb", "--wrt", "x")
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("run", files / "empty_mean_train.pb", "--feed", files / "empty_mean.npz", "--fetch",
                    "mean_0.tmp_0=loss", "--fetch", "x@GRAD=grad", "-o", files / "empty_mean_out.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / "empty_mean_out.npz"), np.load(files / "empty_mean.npz")
    assert np.isnan(ours["loss"]) and np.isnan(paddle["loss"])
    np.testing.assert_array_equal(ours["grad"], paddle["grad"])
    run = gradc_cli("check", files / "empty_mean.pb", "--feed", files / "empty_mean.npz", "--wrt", "x")
    assert run.returncode == 1
    assert "central differences of x are not finite: the loss is not finite at these values" in run.stderr


def test_pir_export_of_the_mmoe_runs_to_paddles_predictor(files):
    """Paddle's PIR save_inference_model of the MMoE (trained weights) run by gradc: the Predictor's outputs to 6e-8
    (no fault)."""
    run = gradc_cli("run", files / "mmoe_pir.json", "--params", files / "mmoe_pir.pdiparams", "--feed",
                    files / "first.npz", "-o", files / "mmoe_pir_out.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / "mmoe_pir_out.npz"), np.load(files / "predictor_pir.npz")
    np.testing.assert_allclose(ours["fetch_name_0"], paddle["cls_logits"], rtol=0, atol=3e-7)
    np.testing.assert_allclose(ours["fetch_name_1"], paddle["reg_out"], rtol=0, atol=3e-7)


@pytest.mark.parametrize("program", ["forward.pb", "train.pb"])
def test_check_and_compile_of_a_gradnorm_task_loss(files, program):
    """Fault: check --loss (and compile --loss) of a GradNorm task's loss, written before the gradients of its
    weighted copy that the forward goes on from, was refused: "'forward.pb' is already a training program ... check
    the forward program it was compiled from", of the forward program itself and of Paddle's training program's
    forward part. Now a program that goes on after its backward ops and seeds none from the loss differentiates it:
    each task agrees with central differences; a compiled training program is refused as before."""
    folder = files / "gradnorm"
    for task in TASKS:
        run = gradc_cli("check", folder / program, "--params", folder / "trained.npz", "--feed", files / "first.npz",
                        "--loss", META["gradnorm"][task], "--json")
        assert run.returncode == 0, run.stdout + run.stderr
        assert json.loads(run.stdout)["problems"] == [] and json.loads(run.stdout)["vars"]
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", files / "gradnorm_task.pb", "--loss",
                         META["gradnorm"]["reg_loss"])
    assert compiled.returncode == 0, compiled.stderr
    again = gradc_cli("compile", files / "gradnorm_task.pb", "-o", files / "gradnorm_twice.pb", "--loss",
                      META["gradnorm"]["reg_loss"])
    assert again.returncode == 1 and "already has backward ops" in again.stderr


def test_info_calls_gradnorms_program_a_forward_program(files):
    """Fault: info said GradNorm's forward program (paddle.static.gradients inside, its loss computed from them) was
    a "program with a backward (99 backward ops, no optimizer)", as of a compiled program; now a forward program with
    gradients inside, which compile differentiates (a compiled one keeps its kind)."""
    info = gradc_cli("info", files / "gradnorm" / "forward.pb")
    assert ("kind: forward program with gradients inside (99 backward ops, paddle.static.gradients', that its loss is "
            "computed from): gradc compile appends its backward\n") in info.stdout
    compiled = gradc_cli("compile", files / "empty_mean.pb", "-o", files / "empty_mean_bw.pb", "--wrt", "x")
    assert compiled.returncode == 0, compiled.stderr
    assert "kind: program with a backward (3 backward ops, no optimizer)\n" in gradc_cli(
        "info", files / "empty_mean_bw.pb").stdout


def _first_step_gradient(prog, startups, files, name):
    scope, executor = gradc.Scope(), gradc.Executor()
    for startup in startups:
        executor.run(startup, scope=scope)
    gradc.load_params(scope, files / "gradnorm2" / "init.npz", prog)
    feed = {key: value[:8] for key, value in np.load(files / "data.npz").items()}
    return executor.run(prog, feed=feed, fetch_list=[name], scope=scope)[0]


def test_gradnorm_with_two_optimizers_paddles_program_and_gradcs(files):
    """GradNorm as its paper trains it, two minimize() calls (Adam of the weighted sum over the network, Adam of the
    GradNorm term over the task weights). Paddle's program trains in gradc to its 12 losses (2.1e-7) and weights
    (6e-8). gradc's two minimize() give the task weights' gradient of the GradNorm term at the step's point (that of
    gradients() on the forward, which check agrees with): Paddle's second backward reads the network's weights the
    first Adam has just updated in place ([-0.2859, 1.4941, -0.0533] for [-0.2802, 1.4768, -0.0542]), so the two
    trainings part (4e-5) from step 2 on, rightly (no fault of gradc)."""
    folder, meta = files / "gradnorm2", META["gradnorm2"]
    paddle = gradc.load(folder / "train.pb")
    trainer = gradc.Trainer(paddle, [folder / "startup.pb"], fetch=[meta["weighted_loss"], meta["gradnorm_loss"]])
    gradc.load_params(trainer.scope, folder / "init.npz", paddle)
    np.testing.assert_allclose(trainer.fit(files / "data.npz", epochs=1, batch_size=8).steps, meta["losses"],
                               rtol=1e-6)
    trained = np.load(folder / "trained.npz")
    for name in trained.files:
        np.testing.assert_allclose(trainer.scope[name], trained[name], rtol=0, atol=3e-7, err_msg=name)
    prog = gradc.load(folder / "forward.pb")
    network = [name for name, var in prog.global_block.vars.items() if var.is_parameter and name != "task_weights"]
    startups = [optimizers.Adam(learning_rate=0.01).minimize(prog, meta["weighted_loss"], parameter_list=network),
                optimizers.Adam(learning_rate=0.025).minimize(prog, meta["gradnorm_loss"],
                                                              parameter_list=["task_weights"])]
    update = next(op for op in prog.global_block.ops if op.type == "adam" and op.input("Param") == ["task_weights"])
    ours = _first_step_gradient(prog, startups, files, update.input("Grad")[0])
    clean = gradc.load(folder / "forward.pb")
    (grad,) = gradc.gradients(clean, meta["gradnorm_loss"], ["task_weights"])
    np.testing.assert_allclose(ours, _first_step_gradient(clean, [], files, grad), rtol=0, atol=1e-7)
    update = next(op for op in paddle.global_block.ops if op.type == "adam" and op.input("Param") == ["task_weights"])
    stale = _first_step_gradient(paddle, [gradc.load(folder / "startup.pb")], files, update.input("Grad")[0])
    assert np.abs(stale - ours).max() > 1e-2
    run = gradc_cli("check", folder / "forward.pb", "--params", folder / "init.npz", "--feed", files / "first.npz",
                    "--loss", meta["gradnorm_loss"], "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["problems"] == [], run.stdout + run.stderr


def test_info_of_two_minimize_calls_says_each_loss_has_its_backward(files):
    """Fault: info of Paddle's two-optimizer GradNorm program said "op_role marks the losses reduce_sum_10.tmp_0,
    reduce_sum_11.tmp_0; the backward differentiates their sum": each has its own backward and parameters. Several
    --loss of one compile keep "their sum"."""
    info = gradc_cli("info", files / "gradnorm2" / "train.pb")
    names = f"{META['gradnorm2']['gradnorm_loss']}, {META['gradnorm2']['weighted_loss']}"
    assert (f"op_role marks the losses {names}; each starts its own backward (a minimize() each, over its own "
            "parameters)") in info.stdout
    compiled = gradc_cli("compile", files / "fixed" / "forward.pb", "-o", files / "tasks_sum.pb", "--loss",
                         META["fixed"]["cls_loss"], "--loss", META["fixed"]["reg_loss"])
    assert compiled.returncode == 0, compiled.stderr
    assert "the backward differentiates their sum" in gradc_cli("info", files / "tasks_sum.pb").stdout
