"""A semantic-segmentation engineer's week (docs/tools.md): a small U-Net (BatchNorm, max pooling, a transposed conv
and a bilinear upsampling, concatenated skips) and a DeepLab-like head (dilated convs, an ASPP with adaptive average
pooling to 1 and 3, bilinear upsampling with align_corners False and True) over 3x16x16 images of 4 classes, built
with Paddle 3.3.1's layers (tools/paddle_user_week30.py, tools/paddle_user_week30_pir.py); cross entropy over the
class axis with 255 ignored plus a Dice loss, Momentum and AdamW on a PolynomialDecay, step by step against Paddle's;
the confusion matrix and mIoU; the PIR exports against Paddle Inference; each fault found, as the behaviour it has
now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week30"
META = json.loads((WEEK / "meta.json").read_text())
SCHEDULES = {"unet": "PolynomialDecay(0.05, decay_steps=4, end_lr=0.001, power=0.9)",   # Paddle's own spelling
             "deeplab": "PolynomialDecay(0.01, 4, 0.0, 1.0)"}
OPTIMIZERS = {"unet": ["--optimizer", "momentum", "--momentum", "0.9", "--l2", "1e-4"],
              "deeplab": ["--optimizer", "adamw", "--weight-decay", "0.01"]}
# biases ahead of a batch norm have a zero gradient (gradc check: 1e-17 in float64), so each step's is float32
# rounding noise, which AdamW scales to a full step in either; the running means carry them
NOISE_DRIVEN = {f"conv2d_{index}.b_0" for index in (6, 7, 8, 9, 10, 11, 12, 13)} | {
    f"batch_norm2d_{index}.w_1" for index in (3, 4, 5)}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, the first batch as a feed, and the PIR exports' parameters under their names."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week30"))
    data = np.load(out / "data.npz")
    np.savez(out / "batch.npz", x=data["x"][:4], label=data["label"][:4])
    for name in ("unet", "deeplab"):
        final, legacy = np.load(out / f"{name}_final.npz"), META[name]["names"]["layers"]
        np.savez(out / f"{name}_pir.npz", **{saved: final[legacy[key]]
                                             for key, saved in META["pir"]["layers"][name].items()})
    np.savez(out / "two.npz", x=np.load(out / "test.npz")["x"][:2])
    return out


def _trained(files, name: str, lr_schedule: str):
    """The forward program compiled with Paddle's optimizer settings and trained 5 steps of 4 from Paddle's startup
    program; the steps' logged values and the saved parameters."""
    train = files / f"{name}_train_gradc.pb"
    compiled = gradc_cli("compile", files / f"{name}_forward.pb", "-o", train, *OPTIMIZERS[name])
    assert compiled.returncode == 0, compiled.stderr
    loss = META[name]["names"]["loss"]
    run = gradc_cli("train", train, "--startup", files / f"{name}_startup.pb", "--startup",
                    files / f"{name}_train_gradc.startup.pb", "--data", files / "data.npz", "--batch-size", "4",
                    "--steps", "5", "--lr-schedule", lr_schedule, "--fetch", loss, "--fetch", "learning_rate_0",
                    "--log-every", "1", "--json", "--save-params", files / f"{name}_gradc.npz")
    assert run.returncode == 0, run.stderr
    steps = [json.loads(line)["values"] for line in run.stdout.splitlines() if '"event": "step"' in line]
    return [step[loss] for step in steps], [step["learning_rate_0"] for step in steps], \
        np.load(files / f"{name}_gradc.npz")


@pytest.mark.parametrize("name", ["unet", "deeplab"])
def test_training_gives_paddles_losses_learning_rates_and_weights(files, name):
    """Paddle's scheduler spelling (positional values too) is read: before, --lr-schedule "PolynomialDecay(0.05,
    decay_steps=4, ...)" was refused ("cannot read the learning-rate schedule"). Five steps give Paddle's losses to
    1e-6 relative, its rates exactly and its weights and running statistics to 1e-6 (AdamW's noise-driven biases
    ahead of batch norm aside)."""
    losses, rates, weights = _trained(files, name, SCHEDULES[name])
    np.testing.assert_allclose(losses, META[name]["losses"], rtol=1e-6)
    assert rates == pytest.approx(META[name]["lr"], rel=1e-7)
    final = np.load(files / f"{name}_final.npz")
    assert sorted(weights) == sorted(final)
    for var in sorted(set(final) - NOISE_DRIVEN):
        np.testing.assert_allclose(weights[var], final[var], rtol=0, atol=1e-6, err_msg=var)


def test_a_schedule_given_a_value_twice_or_too_many_is_one_error_line(files):
    for spec, message in [("PolynomialDecay(0.05, 4, learning_rate=0.1)",
                           "schedule PolynomialDecay: learning_rate given twice, by position and by name"),
                          ("PolynomialDecay(0.05, 4, 0.001, 0.9, False, 3)",
                           "schedule PolynomialDecay takes at most 5 values: learning_rate, decay_steps, end_lr, "
                           "power, cycle")]:
        assert gradc.schedules.parse(spec.replace(", learning_rate=0.1", "").replace(", 3)", ")"))(0) == 0.05
        with pytest.raises(gradc.GradcError, match=message):
            gradc.schedules.parse(spec)


@pytest.mark.parametrize("name", ["unet", "deeplab"])
def test_startup_gives_paddles_initial_weights_and_check_agrees(files, name):
    """Paddle's startup program run by gradc gives its initial weights (each var's sum of |value|, to float32
    rounding), and gradc check of the loss (cross entropy with ignored pixels plus Dice) agrees with float64 central
    differences."""
    fetch = [arg for var in META[name]["init"] for arg in ("--fetch", var)]
    run = gradc_cli("run", files / f"{name}_startup.pb", *fetch, "--out", files / f"{name}_init.npz")
    assert run.returncode == 0, run.stderr
    init = np.load(files / f"{name}_init.npz")
    for var, total in META[name]["init"].items():
        assert float(np.abs(init[var]).sum()) == pytest.approx(total, rel=1e-6), var
    check = gradc_cli("check", files / f"{name}_forward.pb", "--startup", files / f"{name}_startup.pb",
                      "--feed", files / "batch.npz")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "compiled gradients agree with central differences" in check.stdout


@pytest.mark.parametrize("name", ["unet", "deeplab"])
def test_confusion_matrix_and_miou_are_paddles(files, name):
    """The test clone with the confusion matrix by paddle.bincount (ignored pixels weighted 0), run by gradc with
    Paddle's trained weights, gives Paddle's matrix exactly and so its mIoU."""
    matrix = META[name]["names"]["confusion"]
    run = gradc_cli("run", files / f"{name}_eval.pb", "--params", files / f"{name}_final.npz",
                    "--feed", files / "test.npz", "--fetch", matrix, "--out", files / f"{name}_confusion.npz")
    assert run.returncode == 0, run.stderr
    confusion = np.load(files / f"{name}_confusion.npz")[matrix]
    np.testing.assert_array_equal(confusion, META[name]["confusion"])
    inter = np.diag(confusion)
    union = confusion.sum(0) + confusion.sum(1) - inter
    assert np.mean(inter[union > 0] / union[union > 0]) == pytest.approx(META[name]["miou"], rel=1e-6)


@pytest.mark.parametrize("name", ["unet", "deeplab"])
def test_pir_exports_run_to_paddle_inference(files, name):
    """paddle.jit.save's U-Net and save_inference_model's DeepLab (PIR) run in gradc to the Predictor's outputs
    (oneDNN off: with it on, Paddle 3.3.1's Predictor fails on both files, meta.json's predictor_failures)."""
    run = gradc_cli("run", files / f"{name}_pir.json", "--params", files / f"{name}_pir.npz",
                    "--feed", files / "two.npz", "--out", files / f"{name}_pir_out.npz")
    assert run.returncode == 0, run.stderr
    paddle = np.load(files / "predictor_pir.npz")[f"{name}_plain"]
    np.testing.assert_allclose(np.load(files / f"{name}_pir_out.npz")["fetch_name_0"], paddle, rtol=0, atol=2e-6)
    assert "ConvertPirAttribute2RuntimeAttribute" in META["pir"]["predictor_failures"][f"{name}_onednn"]


@pytest.mark.parametrize("name", ["unet", "deeplab"])
def test_pir_training_programs_train_as_in_paddle(files, name):
    """Paddle's PIR training programs (minimize in PIR mode, the host-stepped PolynomialDecay) from their startup
    programs seeded as paddle.seed(30) (--paddle-stream): Paddle's 5 losses to 2e-6 relative (7.4e-7 measured, at
    DeepLab's step 2, after AdamW's first noise-driven step) and its weights (each var's sum of |value|) to 1e-5
    (biases ahead of batch norm: 1e-6 absolute, or aside with AdamW)."""
    run = gradc_cli("train", files / f"{name}_pir_train.json", "--startup", files / f"{name}_pir_startup.json",
                    "--paddle-stream", "--seed", "30", "--data", files / "data.npz", "--batch-size", "4", "--steps",
                    "5", "--lr-schedule", SCHEDULES[name], "--fetch", "loss", "--log-every", "1", "--json",
                    "--save-params", files / f"{name}_pir_gradc.npz")
    assert run.returncode == 0, run.stderr
    losses = [json.loads(line)["values"]["loss"] for line in run.stdout.splitlines() if '"event": "step"' in line]
    paddle = META["pir"]["train"][name]
    np.testing.assert_allclose(losses, paddle["losses"], rtol=2e-6)
    weights = np.load(files / f"{name}_pir_gradc.npz")
    for var in sorted(set(paddle["final"]) - NOISE_DRIVEN):
        assert float(np.abs(weights[var]).sum()) == pytest.approx(paddle["final"][var], rel=1e-5, abs=1e-6), var


def _pixel_accuracy(name: str) -> float:
    confusion = np.array(META[name]["confusion"])
    return float(np.trace(confusion) / confusion.sum())


def test_evaluate_scores_an_exported_segmentation_model_per_pixel(files):
    """Before, gradc evaluate of the exported U-Net took the width (16) for the classes and refused the labels:
    "array 'label' holds the label 255 (example 1), but the model's output 'fetch_name_0' scores 16 classes". Now
    the classes are along the axis the labels [N, 1, H, W] (or [N, H, W]) leave out, --ignore-index 255 leaves the
    border pixels out, and the accuracy is the pixel accuracy of Paddle's confusion matrix, as evaluate of the
    training program gives it."""
    args = ["--params", files / "unet_pir.npz", "--json", "--topk", "1,2"]
    scored = gradc_cli("evaluate", files / "unet_pir.json", "--data", files / "test.npz", "--ignore-index", "255",
                       *args)
    assert scored.returncode == 0, scored.stderr
    results = json.loads(scored.stdout)
    assert results["acc_top1"] == pytest.approx(_pixel_accuracy("unet"), abs=1e-12)
    test = np.load(files / "test.npz")
    np.savez(files / "test_hw.npz", x=test["x"], label=test["label"][:, 0])
    flat = gradc_cli("evaluate", files / "unet_pir.json", "--data", files / "test_hw.npz", "--ignore-index", "255",
                     *args)
    assert json.loads(flat.stdout)["acc_top2"] == results["acc_top2"]
    train = gradc.load(files / "unet_forward.pb")
    own = gradc.evaluate(train, files / "test.npz", files / "unet_final.npz", topk=(1, 2))
    assert (own["acc_top1"], own["acc_top2"]) == (results["acc_top1"], results["acc_top2"])
    refused = gradc_cli("evaluate", files / "unet_pir.json", *args[:2], "--data", files / "test.npz")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr == (f"gradc: error: data '{files / 'test.npz'}': array 'label' holds the label 255 "
                              f"(example 1), but the model's output 'fetch_name_0' scores 4 classes: a label is 0 to "
                              f"3 (--ignore-index N leaves the labels N out, a segmentation map's 255)\n")


def test_evaluate_leaves_out_an_ignore_index_inside_the_class_range(files):
    """A loss op's ignore_index of 0 (the background left out) is left out of the accuracy as of the loss; before,
    only labels outside 0 .. C-1 were: the accuracy is that of Paddle's confusion matrix without its row 0."""
    program = gradc.load(files / "unet_forward.pb")
    (op,) = [op for op in program.global_block.ops if op.type == "softmax_with_cross_entropy"]
    op.set_attr("ignore_index", 0)
    test = np.load(files / "test.npz")
    data = {"x": test["x"], "label": np.where(test["label"] == 255, 0, test["label"])}
    results = gradc.evaluate(program, data, files / "unet_final.npz")
    confusion = np.array(META["unet"]["confusion"])
    assert results["acc"] == pytest.approx(np.trace(confusion[1:, 1:]) / confusion[1:].sum(), abs=1e-12)


def test_class_axis_of_scores_and_labels():
    axis = gradc.training.accuracy.class_axis
    assert axis([-1, 4, 16, 16], (6, 1, 16, 16)) == 1
    assert axis([-1, 4, 16, 16], (6, 16, 16)) == 1
    assert axis([-1, 10], (6, 1)) == 1 and axis([-1, 10], (6,)) == 1
    assert axis([-1, 5, 7], (6, 5, 1)) == 2   # a tagger's [N, S, C]: the last, as F.cross_entropy's default
    assert axis([-1, 4, 16, 16], (6, 3, 16, 16)) == -1


def test_add_loss_cross_entropy_over_a_segmentation_models_class_axis(files):
    """Before, compile --add-loss cross-entropy of the exported U-Net scored classes along the last axis, the width:
    labels [-1, 4, 16, 1], 16 "classes", and no way to leave the 255 borders out. Now --class-axis 1 --ignore-index
    255 give Paddle's F.cross_entropy(logits, label, axis=1, ignore_index=255) of the eval-mode model, its mean over
    the counted pixels, and its head's gradient; the default says what it scores and points to --class-axis."""
    plain = gradc_cli("compile", files / "unet_pir.json", "-o", files / "tune_plain.pb", "--add-loss",
                      "cross-entropy")
    assert ("against the input label of shape [-1, 4, 16, 1] (16 classes along axis 3); the classes of scores "
            "[N, C, H, W] are along axis 1: --class-axis 1") in plain.stdout
    tuned = gradc_cli("compile", files / "unet_pir.json", "-o", files / "tune.pb", "--add-loss", "cross-entropy",
                      "--class-axis", "1", "--ignore-index", "255")
    assert tuned.returncode == 0, tuned.stderr
    assert "of shape [-1, 1, 16, 16] (4 classes along axis 1, 255 ignored)" in tuned.stdout
    run = gradc_cli("run", files / "tune.pb", "--params", files / "unet_pir.npz", "--feed", files / "test.npz",
                    "--fetch", "mean_0.tmp_0", "--fetch", "conv2d_5.w_0@GRAD", "--out", files / "tune.npz")
    assert run.returncode == 0, run.stderr
    paddle, ours = np.load(files / "predictor_pir.npz"), np.load(files / "tune.npz")
    assert float(ours["mean_0.tmp_0"]) == pytest.approx(float(paddle["unet_ce"]), rel=1e-6)
    np.testing.assert_allclose(ours["conv2d_5.w_0@GRAD"], paddle["unet_ce_head_grad"], rtol=0, atol=1e-7)
    usage = gradc_cli("compile", files / "unet_pir.json", "-o", files / "no.pb", "--add-loss", "mse",
                      "--ignore-index", "255")
    assert usage.returncode == 2 and "--ignore-index: only with --add-loss cross-entropy" in usage.stderr
    assert not (files / "no.pb").exists()


def test_fit_with_steps_runs_that_many_steps(files):
    """Before, Trainer.fit(data, batch_size=4, steps=5) stopped after one epoch, 3 steps (epochs defaulted to 1),
    where gradc train --steps 5 runs 5. Now fit's steps alone span as many epochs as they need: Paddle's 5 losses."""
    program = gradc.load(files / "unet_forward.pb")
    startup = gradc.optimizers.Momentum(learning_rate=0.05, momentum=0.9,
                                        weight_decay=gradc.optimizers.L2Decay(1e-4)).minimize(program)
    trainer = gradc.Trainer(program, [files / "unet_startup.pb", startup], fetch=[META["unet"]["names"]["loss"]],
                            lr_schedule=gradc.schedules.parse(SCHEDULES["unet"]))
    history = trainer.fit(files / "data.npz", batch_size=4, steps=5)
    np.testing.assert_allclose([values[0] for values in history.steps], META["unet"]["losses"], rtol=1e-6)


@pytest.mark.parametrize("name", ["unet", "deeplab"])
def test_evaluate_gives_the_miou_of_the_sets_confusion_matrix(files, name):
    """Before, gradc evaluate had no mIoU and refused the confusion matrix as a fetch: the user ran the eval program
    in one batch and took the mIoU in numpy. --miou gives Paddle's (its bincount matrix's, 0.2005 and 0.2822) and each
    class's IoU from the matrix summed over the batches, so batches of 4 and 2 give one batch of 6's exactly."""
    confusion = np.array(META[name]["confusion"])
    inter = np.diag(confusion)
    union = confusion.sum(0) + confusion.sum(1) - inter
    runs = [gradc_cli("evaluate", files / f"{name}_forward.pb", "--params", files / f"{name}_final.npz", "--data",
                      files / "test.npz", "--miou", "--json", "--batch-size", size) for size in (4, 6)]
    assert all(run.returncode == 0 for run in runs), runs[0].stderr
    batched, whole = (json.loads(run.stdout) for run in runs)
    assert batched["miou"] == whole["miou"] == pytest.approx(META[name]["miou"], rel=1e-6)
    assert batched["class_iou"] == whole["class_iou"] == list(inter / union)
    assert batched["acc"] == pytest.approx(_pixel_accuracy(name), abs=1e-12)


def test_train_eval_gives_each_epochs_miou_as_evaluate_does(files):
    """Before, gradc train --eval had no --miou: the epoch's evaluation gave the loss alone. Now train takes it (the
    code is evaluate's): the U-Net's mIoU and accuracy on test.npz after an epoch of data.npz are what evaluate gives
    of the parameters the epoch ended with (the per-class list stays evaluate's)."""
    train = files / "unet_train_miou.pb"
    assert gradc_cli("compile", files / "unet_forward.pb", "-o", train, *OPTIMIZERS["unet"]).returncode == 0
    run = gradc_cli("train", train, "--startup", files / "unet_startup.pb", "--startup",
                    files / "unet_train_miou.startup.pb", "--data", files / "data.npz", "--batch-size", 4, "--json",
                    "--eval", files / "test.npz", "--miou", "--topk", 1, "--save-params", files / "unet_miou.npz")
    assert run.returncode == 0, run.stderr
    (epoch,) = [json.loads(line)["eval"] for line in run.stdout.splitlines() if '"event": "epoch"' in line]
    scored = gradc_cli("evaluate", files / "unet_forward.pb", "--params", files / "unet_miou.npz", "--data",
                       files / "test.npz", "--miou", "--json", "--batch-size", 4)
    assert scored.returncode == 0, scored.stderr
    evaluated = json.loads(scored.stdout)
    assert "class_iou" not in epoch and 0 < epoch["miou"] < 1
    assert {key: epoch[key] for key in ("acc", "miou")} == {key: evaluated[key] for key in ("acc", "miou")}


def test_miou_of_an_exported_model_and_in_text(files):
    """The PIR export, with no loss op, scored with --ignore-index 255: the same mIoU as the training program; the
    text lists each class's IoU, and a program with no class scores to score is one error line."""
    args = ["--params", files / "unet_pir.npz", "--data", files / "test.npz", "--ignore-index", "255", "--miou"]
    scored = gradc_cli("evaluate", files / "unet_pir.json", *args, "--json")
    assert json.loads(scored.stdout)["miou"] == pytest.approx(META["unet"]["miou"], rel=1e-6)
    text = gradc_cli("evaluate", files / "unet_pir.json", *args)
    assert "miou: 0.200453\nclass_iou: 0.7879 0.006579 0.007353 0\n" in text.stdout
    refused = gradc_cli("evaluate", files / "unet_pir.json", *args[:2], "--data", files / "two.npz", "--miou")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.startswith("gradc: error: ") and "need labels to score" in refused.stderr
