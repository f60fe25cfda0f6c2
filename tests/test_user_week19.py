"""A diffusion-model researcher's week (docs/tools.md): a tiny DDPM U-Net (GroupNorm, SiLU, a stride-2 conv down,
self-attention at 4x4, nearest interpolate and conv_transpose up, a skip by concat, sinusoidal timestep and null-class
label embeddings; x_t noised in the program by gather on the schedule) built by Paddle 3.3.1 (tools/
paddle_user_week19.py), trained by Paddle's executor with AdamW, LinearWarmup and ExponentialMovingAverage, sampled by
DDIM with guidance through Paddle's Predictor; trained, checked, exported and sampled with gradc; each fault found, as
the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week19"
META = json.loads((WEEK / "meta.json").read_text())
WARMUP = "LinearWarmup(learning_rate=0.002, warmup_steps=3, start_lr=0.0002, end_lr=0.002)"
KEY_BIAS = slice(16, 32)   # the attention's key bias in linear_2.b_0 (q, k, v): softmax is blind to it


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    """The week's files as the user has them: the fixture's programs unpacked beside its arrays."""
    return unpacked(WEEK, tmp_path_factory.mktemp("week19"))


def _first_batch(week, tmp_path):
    np.savez(tmp_path / "first.npz", **{k: v[:4] for k, v in np.load(week / "batches.npz").items()})
    return tmp_path / "first.npz"


def _trained(week) -> gradc.Trainer:
    """Paddle's training program stepped as Paddle's loop steps it: the host sets the scheduler's rate each step."""
    trainer = gradc.Trainer(week / "ddpm.pb", week / "ddpm_startup.pb")
    data = gradc.Dataset(dict(np.load(week / "batches.npz")))
    trainer.losses = []
    for rate, batch in zip(META["rates"], data.batches(0, 4)):
        trainer.scope["learning_rate_0"] = np.array(rate, np.float32)
        trainer.losses += trainer.train_step(batch)
    return trainer


def test_check_of_paddles_training_program_checks_its_forward_part(week, tmp_path):
    """Before, gradc check of Paddle's minimize program (what a static-graph user saves; there is no forward program
    beside it) was refused: "already a training program ... check the forward program it was compiled from". Now it
    checks the forward part, in training mode, saying so: GroupNorm, nearest interpolate and conv_transpose's
    gradients agree with float64 central differences, as the forward program's do; a gradient penalty's program, whose
    forward reads the backward, is still refused (tests/test_user_week2.py)."""
    feed = _first_batch(week, tmp_path)
    forward, trained = (gradc_cli("check", week / program, "--feed", feed, "--startup", week / "ddpm_startup.pb",
                                  "--max-elements", 4)
                        for program in ("ddpm_forward.pb", "ddpm.pb"))
    for run in (forward, trained):
        assert run.returncode == 0, run.stdout + run.stderr
        assert run.stdout.count(" ok\n") == 29 and "MISMATCH" not in run.stdout
    assert forward.stderr == ""
    assert trained.stderr == (f"gradc: note: '{week / 'ddpm.pb'}' is a training program: checking its forward part "
                              f"(its backward and optimizer ops left out)\n")


def test_gradients_of_groupnorm_and_the_upsampling_are_paddles(week):
    """Not a fault: gradc's gradients of step 1 (GroupNorm's scale and shift, conv_transpose's, the conv after the
    concat of both up-sampling paths) are Paddle's executor's to float32 round-off."""
    trainer = gradc.Trainer(week / "ddpm.pb", week / "ddpm_startup.pb")
    trainer.scope["learning_rate_0"] = np.array(META["rates"][0], np.float32)
    paddle = np.load(week / "first_grads.npz")
    batch = {k: v[:4] for k, v in np.load(week / "batches.npz").items()}
    grads = gradc.Executor().run(trainer.program, batch, [f"{name}@GRAD" for name in paddle.files], trainer.scope)
    for name, grad in zip(paddle.files, grads):
        np.testing.assert_allclose(grad, paddle[name], atol=5e-6 * np.abs(paddle[name]).max(), err_msg=name)


def test_paddles_ddpm_trains_to_its_losses_and_ema(week):
    """Not a fault: Paddle's program, its LinearWarmup's rate set in the scope each step, gives Paddle's 6 losses; the
    EMA's vars, bias-corrected as Paddle's ema.apply does (ema / (1 - 0.9^steps)), give Paddle's EMA weights, but for
    the attention's key bias: its gradient is 0 but for round-off (softmax is blind to a bias on every key), which
    AdamW's m / sqrt(v) makes steps of the learning rate's size, of round-off's sign."""
    trainer = _trained(week)
    np.testing.assert_allclose(trainer.losses, META["losses"], rtol=1e-5)
    steps = int(trainer.scope["@EMA_STEP_COUNTER@"][0])
    paddle = dict(np.load(week / "ddpm_ema.npz"))
    for name, value in paddle.items():
        ema = trainer.scope[f"{name}_ema_0"] / (1 - 0.9 ** steps)
        if name == "linear_2.b_0":
            ema, value = np.delete(ema, KEY_BIAS), np.delete(value, KEY_BIAS)
        np.testing.assert_allclose(ema, value, rtol=1e-5, atol=1e-7, err_msg=name)
    batch = {k: v[:4] for k, v in np.load(week / "batches.npz").items()}
    (bias_grad,) = gradc.Executor().run(trainer.program, batch, ["linear_2.b_0@GRAD"], trainer.scope)
    assert np.abs(bias_grad[KEY_BIAS]).max() < 1e-6 < np.abs(np.delete(bias_grad, KEY_BIAS)).max()


def test_the_command_line_trains_paddles_program_and_a_compiled_one_to_paddles_losses(week, tmp_path):
    """Not a fault: gradc train of Paddle's program with the same scheduler (--lr-schedule), and gradc compile of the
    forward program with adamw, weight decay 0.01 and the warm-up, give Paddle's losses."""
    data = ("--data", week / "batches.npz", "--batch-size", 4, "--json", "--log-every", 1, "--lr-schedule", WARMUP)
    compiled = gradc_cli("compile", week / "ddpm_forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "adamw",
                         "--lr", 0.002, "--weight-decay", 0.01, "--lr-schedule", WARMUP)
    assert compiled.returncode == 0, compiled.stderr
    for run in (gradc_cli("train", week / "ddpm.pb", "--startup", week / "ddpm_startup.pb", *data),
                gradc_cli("train", tmp_path / "train.pb", "--startup", week / "ddpm_startup.pb", "--startup",
                          tmp_path / "train.startup.pb", *data)):
        assert run.returncode == 0, run.stderr
        losses = [line["values"][META["loss"]] for line in map(json.loads, run.stdout.splitlines())
                  if line["event"] == "step"]
        np.testing.assert_allclose(losses, META["losses"], rtol=1e-5)


def test_the_exported_denoiser_samples_paddles_ddim_images(week, tmp_path):
    """Not a fault: the denoiser exported from the trained program (x_t, an intermediate of the training program,
    made the input and named) gives, two runs a DDIM step with guidance, the images of Paddle's Predictor's steps; a
    step is also one gradc run of the exported model."""
    trainer = _trained(week)
    gradc.save_params(trainer.scope, tmp_path / "trained.npz", trainer.program)
    exported = gradc_cli("export", week / "ddpm.pb", "--params", tmp_path / "trained.npz", "--input",
                         f"{META['x_t']}=x_t", "--input", "t", "--input", "label", "--fetch", f"{META['pred']}=eps",
                         "-o", tmp_path / "denoiser")
    assert exported.returncode == 0, exported.stderr
    denoiser, scope = gradc.load(tmp_path / "denoiser.pdmodel"), gradc.Scope()
    gradc.load_params(scope, tmp_path / "denoiser.pdiparams", denoiser)
    paddle, a_bar = np.load(week / "sample.npz"), np.array(META["a_bar"], np.float32)
    image, label, null = paddle["noise"], paddle["label"], np.full(2, META["null"], np.int64)
    steps = META["ddim_steps"]
    for index, (t, t_next) in enumerate(zip(steps, steps[1:] + [-1])):
        feed = {"x_t": image, "t": np.full(2, t, np.int64)}
        (cond,), (uncond,) = (gradc.Executor().run(denoiser, {**feed, "label": which}, ["eps"], scope)
                              for which in (label, null))
        if index == 0:   # the same step by the command line
            np.savez(tmp_path / "feed.npz", **feed, label=label)
            run = gradc_cli("run", tmp_path / "denoiser.pdmodel", "--params", tmp_path / "denoiser.pdiparams",
                            "--feed", tmp_path / "feed.npz", "--out", tmp_path / "eps.npz")
            assert run.returncode == 0, run.stderr
            np.testing.assert_array_equal(np.load(tmp_path / "eps.npz")["eps"], cond)
        eps = uncond + META["guidance"] * (cond - uncond)
        clean = (image - np.sqrt(1 - a_bar[t]) * eps) / np.sqrt(a_bar[t])
        image = clean if t_next < 0 else np.sqrt(a_bar[t_next]) * clean + np.sqrt(1 - a_bar[t_next]) * eps
        np.testing.assert_allclose(image, paddle[f"step{index}"], rtol=1e-5, atol=1e-5)


def test_train_saves_the_ema_weights_paddles_apply_gives(week, tmp_path):
    """Before, a command-line user lost the EMA: gradc train --save-params writes the model's parameters (the raw
    weights, and the EMA's step counter), not the averages (optimizer state), and no command bias-corrected them as
    ema.apply() does. Now --save-ema writes them: Paddle's EMA weights but for the key bias (above), which export as
    the model's; a program without an EMA is refused, naming what adds one."""
    data = ("--startup", week / "ddpm_startup.pb", "--data", week / "batches.npz", "--batch-size", 4,
            "--lr-schedule", WARMUP)
    run = gradc_cli("train", week / "ddpm.pb", *data, "--save-ema", tmp_path / "ema.npz")
    assert run.returncode == 0, run.stderr
    assert f"wrote {tmp_path / 'ema.npz'} (30 model parameters, their exponential moving averages)" in run.stdout
    ema, paddle = np.load(tmp_path / "ema.npz"), dict(np.load(week / "ddpm_ema.npz"))
    paddle["linear_2.b_0"][KEY_BIAS] = ema["linear_2.b_0"][KEY_BIAS]
    for name, value in paddle.items():
        np.testing.assert_allclose(ema[name], value, rtol=1e-5, atol=1e-7, err_msg=name)
    exported = gradc_cli("export", week / "ddpm.pb", "--params", tmp_path / "ema.npz", "--input", f"{META['x_t']}=x_t",
                         "--input", "t", "--input", "label", "--fetch", f"{META['pred']}=eps", "-o", tmp_path / "ema")
    assert exported.returncode == 0, exported.stderr
    scope = gradc.Scope()
    gradc.load_params(scope, tmp_path / "ema.pdiparams", gradc.load(tmp_path / "ema.pdmodel"))
    np.testing.assert_array_equal(scope["group_norm_3.w_0"], ema["group_norm_3.w_0"])
    refused = gradc_cli("train", week / "ddpm_forward.pb", *data, "--save-ema", tmp_path / "none.npz")
    assert refused.returncode == 1 and refused.stderr == (
        f"gradc: error: '{week / 'ddpm_forward.pb'}' keeps no exponential moving average (no var @EMA_STEP_COUNTER@): "
        f"paddle.static.ExponentialMovingAverage(decay).update() after minimize adds one\n")
