"""A vision-transformer fine-tuner's week (docs/tools.md): a tiny ViT (patch embedding by a stride-4 conv, class token
and position embedding, pre-norm blocks of LayerNorm, nn.MultiHeadAttention and a GELU MLP) with drop path, mixup and
label smoothing, built by Paddle 3.3.1 (tools/paddle_user_week20.py) and trained by Paddle's executor with AdamW (no
decay on LayerNorm, bias, class token and position embedding), layer-wise learning-rate decay, warmup + cosine,
global-norm clipping and GradientMergeOptimizer; trained, compiled, checked, evaluated and run with gradc; each fault
found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked
from gradc.schedules import runs_per_update

WEEK = DATA / "user_week20"
META = json.loads((WEEK / "meta.json").read_text())
SCHEDULE = ("LinearWarmup(learning_rate=CosineAnnealingDecay(learning_rate=0.001, T_max=6), warmup_steps=2, "
            "start_lr=0.0, end_lr=0.001)")
# the attention's key bias: its gradient is 0 in exact arithmetic (softmax ignores a shift shared by every key), so
# Adam turns float32 rounding noise into learning-rate-sized steps of either sign; gradc's and Paddle's noise differ
KEY_BIASES = {"linear_1.b_0", "linear_7.b_0"}
NO_DECAY = ("--no-decay", "layer_norm*", "--no-decay", "*.b_*", "--no-decay", "cls_token", "--no-decay", "pos_embed")
LAYER_LR = ("--param-lr", "conv2d_0.*=0.25", "--param-lr", "cls_token=0.25", "--param-lr", "pos_embed=0.25",
            "--param-lr", "layer_norm_[01].*=0.5", "--param-lr", "linear_[0-5].*=0.5")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them: the fixture's programs unpacked beside its arrays."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week20"))
    return out


def _feeds(size: int, steps: int) -> list[dict]:
    """Paddle's batches of `size`: the examples' arrays sliced, each step's mixup lambda (a [1] input) beside them; in
    micro-batches of 4 the partners are indexed within the micro-batch."""
    data = dict(np.load(WEEK / "batches.npz"))
    lams = np.repeat(data.pop("lam"), 8 // size)
    data["perm"] = data["perm"] % size
    return [{**{k: v[i * size:(i + 1) * size] for k, v in data.items()}, "lam": lams[i:i + 1]} for i in range(steps)]


def _train(program, startups, size: int = 8, steps: int = 6):
    trainer = gradc.Trainer(program, startups, lr_schedule=SCHEDULE)
    losses = [loss for feed in _feeds(size, steps) for loss in trainer.train_step(feed)]
    return trainer, losses


def _assert_paddles_weights(scope) -> None:
    for name, value in np.load(WEEK / "vit_trained.npz").items():
        if name not in KEY_BIASES:
            np.testing.assert_allclose(scope[name], value, rtol=1e-4, atol=1e-6, err_msg=name)


def _update_settings(program) -> dict[str, tuple[float, bool]]:
    """Each parameter's learning-rate multiplier (the scale of the global rate its adamw op reads) and with_decay."""
    block = program.global_block
    scales = {name: op.attr("scale") for op in block.ops if op.type == "scale" for name in op.output_names()}
    return {op.input("Param")[0]: (scales.get(op.input("LearningRate")[0], 1.0), op.attr("with_decay"))
            for op in block.ops if op.type == "adamw"}


def test_paddles_vit_training_program_trains_to_paddles_losses_and_weights(files):
    """Not a fault: Paddle's program (drop path by fed masks, mixup, label smoothing, AdamW with its per-parameter
    learning-rate scales, LinearWarmup into cosine written by the host, clipping) from its seeded startup gives
    Paddle's 6 losses and, after them, Paddle's 40 parameters (but the key biases: KEY_BIASES)."""
    trainer, losses = _train(files / "vit.pb", [files / "vit_startup.pb"])
    np.testing.assert_allclose(losses, META["vit"]["losses"], rtol=1e-5)
    _assert_paddles_weights(trainer.scope)


def test_compile_gives_layer_wise_learning_rates_as_paddles_param_attrs(files, tmp_path):
    """Before, gradc compile --optimizer had no way to scale a parameter's learning rate (ParamAttr(learning_rate=r),
    the layer-wise decay of ViT fine-tuning): the compiled ViT gave Paddle's losses for 2 steps (a warmup from 0), then
    drifted (2.5582 for 2.5402, 2% by step 6). Now --param-lr GLOB=RATE scales it as Paddle's program does (a scale op
    of the global rate per parameter): the multipliers and decays of the 40 updates are Paddle's, and so are the 6
    losses and the weights."""
    compiled = gradc_cli("compile", files / "vit_forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "adamw",
                         "--lr", "0.001", "--lr-schedule", "cosine", "--decay-steps", 6, "--warmup-steps", 2,
                         "--weight-decay", "0.05", *NO_DECAY, "--clip-global-norm", "1.0", *LAYER_LR)
    assert compiled.returncode == 0, compiled.stderr
    ours, paddles = (_update_settings(gradc.load(path)) for path in (tmp_path / "train.pb", files / "vit.pb"))
    assert ours == paddles and len(ours) == 40
    assert sorted({rate for rate, _ in ours.values()}) == [0.25, 0.5, 1.0]
    assert sum(not decays for _, decays in ours.values()) == 26
    trainer = gradc.Trainer(tmp_path / "train.pb", [files / "vit_startup.pb", tmp_path / "train.startup.pb"])
    losses = [loss for feed in _feeds(8, 6) for loss in trainer.train_step(feed)]
    np.testing.assert_allclose(losses, META["vit"]["losses"], rtol=1e-5)
    _assert_paddles_weights(trainer.scope)


@pytest.mark.parametrize("spec, message", [
    ("linear_99.*=0.5", "--param-lr linear_99.*=0.5: no parameter's name matches linear_99.*"),
    ("linear_1*=half", "--param-lr takes GLOB=RATE (a finite number), not 'linear_1*=half'")])
def test_a_param_lr_that_matches_nothing_or_is_no_number_is_one_error_line(files, tmp_path, spec, message):
    run = gradc_cli("compile", files / "vit_forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "adamw",
                    "--param-lr", spec)
    assert run.returncode == 1 and run.stderr.startswith("gradc: error: ") and message in run.stderr
    assert not (tmp_path / "train.pb").exists()
    twice = gradc_cli("compile", files / "vit_forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "adamw",
                      "--param-lr", "linear_1*=0.5", "--param-lr", "linear_12.*=1.0")
    assert twice.returncode == 1 and "linear_12.b_0 matches two rates, 0.5 and 1" in twice.stderr


def test_gradient_merge_trains_with_its_schedule_as_one_large_batch(files):
    """Before, Paddle's GradientMergeOptimizer(k_steps=2) program stopped at its first step with a schedule: "cannot
    tell which var a schedule writes (no optimizer op reads a learning rate)", its updates being inside a
    conditional_block; and, the var found, the schedule moved at every run where Paddle's user steps it once per
    update (k runs): the 3rd micro-batch's loss 2.4627 for Paddle's 2.4748. Now the rate is found in every block and
    the schedule steps once per k_steps runs: Paddle's 4 micro-batch losses, and the weights after 2 updates are
    those of 2 steps of the one-batch program on the same 8 examples."""
    merged, losses = _train(files / "merge.pb", [files / "merge_startup.pb"], size=4, steps=4)
    np.testing.assert_allclose(losses, META["merge"]["losses"], rtol=1e-5)
    whole, _ = _train(files / "vit.pb", [files / "vit_startup.pb"], steps=2)
    for name in np.load(WEEK / "vit_trained.npz").files:
        if name not in KEY_BIASES:
            np.testing.assert_allclose(merged.scope[name], whole.scope[name], rtol=1e-4, atol=1e-6, err_msg=name)
    assert runs_per_update(merged.program, merged.scope) == 2
    assert runs_per_update(whole.program, whole.scope) == 1


def test_check_of_the_vit_loss_agrees_with_central_differences(files, tmp_path):
    """Not a fault: every one of the 40 parameters' compiled gradients agrees with central differences through
    attention, LayerNorm, GELU, drop path, gather (mixup) and label_smooth; the key bias's is 0 (1e-17)."""
    np.savez(tmp_path / "first.npz", **_feeds(8, 1)[0])
    run = gradc_cli("check", files / "vit_forward.pb", "--feed", tmp_path / "first.npz", "--startup",
                    files / "vit_startup.pb")
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count(" ok") == 40 and "MISMATCH" not in run.stdout


def test_the_saved_eval_model_runs_and_evaluates_as_paddles_predictor(files, tmp_path):
    """Not a fault: Paddle's eval model (no drop path, no mixup) with Paddle's trained weights gives its Predictor's
    logits in gradc run, and gradc evaluate --topk 1,5 counts the top-1 and top-5 hits those logits give."""
    run = gradc_cli("run", files / "vit_infer.pdmodel", "--params", WEEK / "vit_trained.npz", "--feed",
                    WEEK / "test.npz", "--out", tmp_path / "logits.npz")
    assert run.returncode == 0, run.stderr
    paddle = np.load(WEEK / "predictor.npz")[META["infer"]["logits"]]
    np.testing.assert_allclose(np.load(tmp_path / "logits.npz")[META["infer"]["logits"]], paddle, rtol=1e-5,
                               atol=2e-6)
    evaluated = gradc_cli("evaluate", files / "vit_infer.pdmodel", "--params", WEEK / "vit_trained.npz", "--data",
                          WEEK / "test.npz", "--topk", "1,5", "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    label = np.load(WEEK / "test.npz")["label"]
    ranked = np.argsort(-paddle, axis=1)
    result = json.loads(evaluated.stdout)
    for k in (1, 5):
        assert result[f"acc_top{k}"] == pytest.approx((ranked[:, :k] == label[:, None]).any(axis=1).mean())


def test_the_jit_saved_pir_model_runs_with_the_trained_weights_as_paddles_predictor(files, tmp_path):
    """Not a fault: the eval model saved by paddle.jit.save (PIR's model.json, Paddle 3's default) runs in gradc with
    Paddle's trained weights given by name (vit_trained.npz, the legacy program's) to the Predictor's logits."""
    run = gradc_cli("run", files / "vit_pir.json", "--params", WEEK / "vit_trained.npz", "--feed", WEEK / "test.npz",
                    "--out", tmp_path / "logits.npz")
    assert run.returncode == 0, run.stderr
    logits = np.load(tmp_path / "logits.npz")
    paddle = np.load(WEEK / "predictor_pir.npz")[META["pir"]["logits"]]
    np.testing.assert_allclose(logits[logits.files[0]], paddle, rtol=1e-5, atol=2e-6)
