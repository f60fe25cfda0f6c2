"""A computer-vision researcher's week with the Python API (docs/tools.md): a small CNN and Paddle 3.3.1's own
optimizer programs (tools/paddle_user_week4.py), trained by a hand-written loop of gradc.Executor runs; each fault
found, as the behaviour it has now."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.io.pickled import read_pickled

WEEK = DATA / "user_week4"
BATCHES = dict(np.load(WEEK / "batches.npz"))
EVAL_FEED = {"x": BATCHES["eval_x"], "label": BATCHES["eval_label"]}
STEPS = 4   # the last batch has 5 images, the others 8


def _case(case: str):
    meta = json.loads((WEEK / case / "meta.json").read_text())
    main, startup, evaluate = (gradc.load(WEEK / case / f"{name}.pb") for name in ("main", "startup", "eval"))
    return meta, main, startup, evaluate


def _started(case: str, main, startup) -> tuple[gradc.Scope, gradc.Executor]:
    """The startup program run, then Paddle's initial state as paddle.static.save wrote it."""
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(startup, scope=scope)
    gradc.load_params(scope, WEEK / case / "init.pdparams", main)
    gradc.load_params(scope, WEEK / case / "init.pdopt", main)
    return scope, executor


def _step(executor, main, scope, step: int, loss: str) -> float:
    feed = {"x": BATCHES[f"x{step}"], "label": BATCHES[f"label{step}"]}
    return float(executor.run(main, feed=feed, fetch_list=[loss], scope=scope)[0])


@pytest.mark.parametrize("case", ["momentum", "adam_ema", "merge", "amp_fp16"])
def test_train_and_for_test_clone_alternate_to_paddles_losses(case):
    """Paddle's own minimize programs (Momentum + L2 + global-norm clipping, Adam + EMA, gradient merge, fp16 loss
    scaling), each step followed by the eval clone (dropout and batch norm in test mode) in the same scope, and the
    EMA's apply / restore programs around an eval."""
    meta, main, startup, evaluate = _case(case)
    scope, executor = _started(case, main, startup)
    losses, eval_losses, ema_losses = [], [], []
    for step in range(STEPS):
        losses.append(_step(executor, main, scope, step, meta["loss"]))
        eval_losses.append(float(executor.run(evaluate, feed=EVAL_FEED, fetch_list=[meta["loss"]], scope=scope)[0]))
        if "ema_eval_losses" in meta:
            executor.run(gradc.load(WEEK / case / "apply.pb"), scope=scope)
            ema_losses.append(float(executor.run(evaluate, feed=EVAL_FEED, fetch_list=[meta["loss"]],
                                                 scope=scope)[0]))
            executor.run(gradc.load(WEEK / case / "restore.pb"), scope=scope)
    np.testing.assert_allclose(losses, meta["losses"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(eval_losses, meta["eval_losses"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ema_losses, meta.get("ema_eval_losses", []), rtol=1e-6, atol=1e-6)
    logits = executor.run(evaluate, feed=EVAL_FEED, fetch_list=[meta["logits"]], scope=scope)[0]
    np.testing.assert_allclose(logits, np.load(WEEK / case / "eval_logits.npy"), rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("case", ["momentum", "merge"])
def test_pdparams_and_pdopt_saved_mid_run_resume_bit_exactly(case, tmp_path):
    """Before, save_params to a .pdopt wrote the model's parameters again, not the optimizer's state: a run resumed
    from the pair (as paddle.static.save writes it) lost its velocities (1.4165 for 1.4036 at step 3), and
    paddle.static.load refused it; gradient merge's pair also held a learning rate of shape [1] for [], refused."""
    meta, main, startup, _ = _case(case)
    scope, executor = _started(case, main, startup)
    uninterrupted = [_step(executor, main, scope, step, meta["loss"]) for step in range(STEPS)]
    scope, executor = _started(case, main, startup)
    first = _step(executor, main, scope, 0, meta["loss"])   # mid-accumulation, for gradient merge
    gradc.save_params(scope, tmp_path / "ckpt.pdparams", main)
    gradc.save_params(scope, tmp_path / "ckpt.pdopt", main)
    resumed, executor = gradc.Scope(), gradc.Executor()
    executor.run(startup, scope=resumed)
    gradc.load_params(resumed, tmp_path / "ckpt.pdparams", main, strict=True)
    gradc.load_params(resumed, tmp_path / "ckpt.pdopt", main, strict=True)
    assert [first] + [_step(executor, main, resumed, step, meta["loss"]) for step in range(1, STEPS)] == uninterrupted


@pytest.mark.parametrize("case", ["momentum", "adam_ema", "merge", "amp_fp16"])
def test_pdopt_holds_what_paddle_static_save_writes(case, tmp_path):
    """The names of gradc's .pdparams and .pdopt are those of Paddle's own pair (the EMA's step counter, the loss
    scaling, gradient merge's counters in .pdopt), so paddle.static.load takes gradc's checkpoint."""
    meta, main, startup, _ = _case(case)
    scope, _ = _started(case, main, startup)
    assert gradc.save_params(scope, tmp_path / "ckpt.pdopt", main) == sorted(
        read_pickled(WEEK / case / "init.pdopt"))
    assert set(gradc.save_params(scope, tmp_path / "ckpt.pdparams", main)) >= set(
        read_pickled(WEEK / case / "init.pdparams"))


def test_a_zero_d_value_keeps_its_shape_through_a_pdparams(tmp_path):
    """Before, np.ascontiguousarray made Paddle 3's 0-d learning rate [1] in a .pdparams, which loading refused."""
    _, main, startup, _ = _case("momentum")
    scope = gradc.Scope()
    gradc.Executor().run(startup, scope=scope)
    gradc.save_params(scope, tmp_path / "lr.pdparams", main, names=["learning_rate_0"])
    assert gradc.load_params(gradc.Scope(), tmp_path / "lr.pdparams", main) == ["learning_rate_0"]
    assert np.load(tmp_path / "lr.pdparams", allow_pickle=True)["learning_rate_0"].shape == ()


def test_fetch_list_takes_the_programs_vars_as_paddles_executor_takes_variables():
    """Before, fetch_list=[block.var(name)] (Paddle's fetch_list=[loss]) was "TypeError: 'VarDesc' object is not
    iterable"; now a var stands for its name, alone or in a list, and anything else is one line."""
    meta, main, startup, _ = _case("momentum")
    scope, executor = _started("momentum", main, startup)
    loss_var, conv = main.global_block.var(meta["loss"]), main.global_block.var("conv2d_0.tmp_0")
    loss, activation = executor.run(main, feed={"x": BATCHES["x0"], "label": BATCHES["label0"]},
                                    fetch_list=[loss_var, conv], scope=scope)
    assert float(loss) == pytest.approx(meta["losses"][0], abs=1e-6) and activation.shape == (8, 4, 8, 8)
    assert len(executor.run(main, feed=EVAL_FEED, fetch_list=loss_var, scope=scope)) == 1
    with pytest.raises(gradc.ExecutionError, match="fetch_list holds a int: give var names"):
        executor.run(main, feed=EVAL_FEED, fetch_list=[3], scope=scope)


def test_the_researchers_mistakes_are_one_line_each():
    """A gradient, or batch norm's ReserveSpace, fetched from the for_test clone names the training program (before:
    'gradc compile ... appends it'; 'no op wrote it and it was not fed'); a float64 batch and the eval program run
    before the startup were already one line naming the var and the cure."""
    meta, main, startup, evaluate = _case("momentum")
    with pytest.raises(gradc.ExecutionError, match="reads var 'conv2d_0.w_0'.*run the startup program first"):
        gradc.Executor().run(evaluate, feed=EVAL_FEED, fetch_list=[meta["loss"]], scope=gradc.Scope())
    scope, executor = _started("momentum", main, startup)
    with pytest.raises(gradc.ExecutionError, match="in test mode, as clone.for_test=True.*from the training program"):
        executor.run(evaluate, feed=EVAL_FEED, fetch_list=["conv2d_0.w_0@GRAD"], scope=scope)
    with pytest.raises(gradc.ExecutionError, match="'batch_norm_0.tmp_3' has no value.*test mode.*ReserveSpace"):
        executor.run(evaluate, feed=EVAL_FEED, fetch_list=["batch_norm_0.tmp_3"], scope=scope)
    with pytest.raises(gradc.GradcError, match=r"feed var 'x'.* is float64, but block 0 declares float32 .*astype"):
        executor.run(main, feed={**EVAL_FEED, "x": EVAL_FEED["x"].astype(np.float64)}, scope=scope)


def test_train_save_params_to_a_pdopt_writes_and_says_the_optimizer_state(tmp_path):
    """gradc train --save-params takes save_params' split: a .pdopt holds the velocities, and the line says so."""
    mlp = Path(__file__).parent.parent / "examples" / "mlp"
    done = gradc_cli("compile", mlp / "forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "momentum")
    assert done.returncode == 0, done.stderr
    done = gradc_cli("train", tmp_path / "train.pb", "--startup", mlp / "startup.pb", "--startup",
                     tmp_path / "train.startup.pb", "--feed", mlp / "feed.npz", "--steps", "2",
                     "--save-params", tmp_path / "state.pdopt")
    assert done.returncode == 0, done.stderr
    saved = read_pickled(tmp_path / "state.pdopt")
    assert f"({len(saved)} optimizer state values)" in done.stdout
    assert "fc_0.w_0_velocity_0" in saved and "fc_0.w_0" not in saved


def test_the_model_of_a_gradient_merge_program_leaves_the_optimizer_state_out(tmp_path):
    """Before, the forward part kept the ops of gradient merge's update block (its conditional_block removed), so
    save_params' "model parameters" of the program held all 36 persistables, the moments and merged gradients too."""
    _, main, startup, _ = _case("merge")
    scope, _ = _started("merge", main, startup)
    saved = gradc.save_params(scope, tmp_path / "model.npz", main)
    assert set(read_pickled(WEEK / "merge" / "init.pdparams")) <= set(saved)
    assert [name for name in saved if "moment" in name or "pow_acc" in name or "@GRAD" in name] == []


@pytest.mark.parametrize("case", ["momentum", "adam_ema", "merge", "amp_fp16"])
def test_a_run_resumes_from_paddles_mid_run_static_save(case):
    """Paddle's .pdparams / .pdopt after its first step (mid-accumulation for gradient merge) resume in gradc to
    Paddle's next losses."""
    meta, main, startup, _ = _case(case)
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(startup, scope=scope)
    gradc.load_params(scope, WEEK / case / "step1.pdparams", main, strict=True)
    gradc.load_params(scope, WEEK / case / "step1.pdopt", main, strict=True)
    losses = [_step(executor, main, scope, step, meta["loss"]) for step in range(1, STEPS)]
    np.testing.assert_allclose(losses, meta["losses"][1:], rtol=1e-6, atol=1e-6)


def test_paddle_static_saves_prefix_names_its_two_files():
    """paddle.static.load takes a prefix; given to load_params it was 'No such file or directory', and its .pdmodel
    was said to have its values 'in a .pdiparams file'."""
    _, main, _, _ = _case("momentum")
    for given in ("init", "init.pdmodel"):
        with pytest.raises(gradc.FormatError, match=r"paddle.static.save's values are in .*init.pdparams and "
                                                    r".*init.pdopt: give each to gradc.load_params"):
            gradc.load_params(gradc.Scope(), WEEK / "momentum" / given, main)
