"""A pose-estimation engineer's week (docs/tools.md): a SimpleBaseline net (Conv2D+BatchNorm+ReLU down, a
Conv2DTranspose up, K=4 heatmaps; visibility-weighted heatmap MSE plus OHKM's 2 hardest keypoints by paddle.topk) and
a small hourglass (max-pooled and brought back by F.interpolate nearest, bilinear align_corners False and True, added
to the skip; heatmap MSE plus integral regression: softmax over the cells, the expected coordinates), trained by
Adam(MultiStepDecay(0.01, [2, 4], 0.1), weight_decay=1e-4) against Paddle 3.3.1's (tools/paddle_user_week54.py);
checked against central differences, run and exported to the flip test's argmax coordinates, scored by the PCK and
the mean pixel error a user computes from gradc's outputs. No fault of gradc's was found this week."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from user_weeks import save_first, train_steps

WEEK = DATA / "user_week54"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("simplebaseline", "hourglass")
SCHEDULE = ("--lr-schedule", "MultiStepDecay(0.01, [2, 4], 0.1)")
HEAT = 8


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model, each with its first batch of 4 images (first.npz)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week54"), MODELS)
    for model in MODELS:
        save_first(out / model, 4)
    return out


@pytest.mark.parametrize("model", MODELS)
def test_compiled_adam_with_weight_decay_and_multistep_trains_to_paddles_losses(files, model):
    """gradc compile --optimizer adam --weight-decay 1e-4 of the forward program, trained from Paddle's initial
    weights under MultiStepDecay: Paddle's 5 losses to 1e-6 and its weights to 1e-6, but the biases of the convolutions
    a BatchNorm follows and the running means after them: their true gradient is 0 (BatchNorm takes the mean out),
    so Adam's g / sqrt(v) steps them by the rate in the direction of the rounding (up to 0.01 apart, both ways)."""
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "t.pb", "--optimizer", "adam", "--lr", 0.01,
                         "--weight-decay", 1e-4)
    assert compiled.returncode == 0, compiled.stderr
    run = train_steps(folder / "t.pb", folder / "t.startup.pb", folder / "data.npz", 4, "--params",
                      folder / "init.npz", "--save-params", folder / "mine.npz", *SCHEDULE)
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    ours, paddle = np.load(folder / "mine.npz"), np.load(folder / "trained.npz")
    rounding_only = {"conv2d_0.b_0", "conv2d_1.b_0", "conv2d_transpose_0.b_0",
                     *(f"batch_norm2d_{i}.w_1" for i in range(3))}
    for name in set(paddle.files) - rounding_only:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_training_programs_train(files, model):
    """Paddle's minimize() programs (its L2 decay ops, topk_grad, the interpolations' grads) from its startup."""
    run = train_steps(files / model / "train.pb", files / model / "startup.pb", files / model / "data.npz", 4,
                      *SCHEDULE)
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


def test_paddles_pir_training_program_trains(files):
    """The hourglass minimized in PIR mode (its bilinear and nearest interpolations, flip and gather), from its own
    initial values on the same batches: the PIR run's 5 losses to 1e-6."""
    run = train_steps(files / "hourglass_pir_train.json", files / "hourglass_pir_startup.json",
                      files / "hourglass" / "data.npz", 4, "--params", files / "hourglass_pir_init.npz", *SCHEDULE)
    losses = json.loads((WEEK / "pir_losses.json").read_text())["hourglass"]
    np.testing.assert_allclose(step_losses(run), losses, rtol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_check_agrees_with_central_differences(files, model):
    """gradc check on Paddle's trained weights and the first batch: every parameter's gradient agrees with float64
    central differences, through topk's hardest keypoints, the transposed convolution, the three interpolations and
    the soft-argmax."""
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / model / "first.npz", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["problems"] == []


@pytest.mark.parametrize("model", MODELS)
def test_run_gives_paddles_heatmaps(files, model):
    """gradc run of the forward program with the trained weights: Paddle's heatmaps to 2e-6 (BatchNorm, as the
    program says, by the batch); the hourglass's integral coordinates and flip-test argmax coordinates too."""
    folder, paddle = files / model, np.load(files / model / "outputs.npz")
    keys = [key for key in ("heatmaps", "integral", "coords") if key in META[model]]
    fetches = [arg for key in keys for arg in ("--fetch", f"{META[model][key]}")]
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / "trained.npz", "--feed", folder / "first.npz",
                    *fetches, "-o", folder / "out.npz")
    assert run.returncode == 0, run.stderr
    ours = np.load(folder / "out.npz")
    for key in keys:
        np.testing.assert_allclose(ours[META[model][key]], paddle[key], rtol=0, atol=2e-6, err_msg=key)


def _pck(coords: np.ndarray, joints: np.ndarray, visible: np.ndarray, radius: float) -> tuple[float, float]:
    """The share of visible keypoints within ``radius`` cells of the truth, and their mean distance in cells."""
    distance = np.linalg.norm(coords - joints, axis=-1)[visible > 0]
    return float(np.mean(distance <= radius)), float(np.mean(distance))


def test_exported_flip_test_gives_paddles_coordinates_and_pck(files):
    """gradc export of the hourglass with --input image alone (the targets are the loss's only), run on the first
    batch's images: the flip test's argmax coordinates are Paddle's exactly, and the PCK@1.5 cells and mean pixel
    error computed from them are Paddle's."""
    folder = files / "hourglass"
    exported = gradc_cli("export", folder / "forward.pb", "-o", folder / "exp", "--params", folder / "trained.npz",
                         "--input", "image", "--fetch", f"{META['hourglass']['coords']}=coords")
    assert exported.returncode == 0, exported.stderr
    first = np.load(folder / "first.npz")
    np.savez(folder / "image.npz", image=first["image"])
    run = gradc_cli("run", folder / "exp.pdmodel", "--params", folder / "exp.pdiparams", "--feed",
                    folder / "image.npz", "-o", folder / "exp_out.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(folder / "exp_out.npz")["coords"], np.load(folder / "outputs.npz")["coords"]
    np.testing.assert_array_equal(ours, paddle)
    assert ((ours >= 0) & (ours < HEAT)).all()
    assert _pck(ours, first["joints"], first["visible"], 1.5) == _pck(paddle, first["joints"], first["visible"], 1.5)


def test_evaluate_reports_the_test_mode_loss(files):
    """gradc evaluate of the SimpleBaseline runs BatchNorm on its running stats (test mode): a loss other than the
    --train-mode one, which is the mean of the batch-statistics losses gradc run gives."""
    folder = files / "simplebaseline"
    results = [json.loads(gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                                    folder / "data.npz", "--batch-size", 4, "--json", *extra).stdout)
               for extra in ((), ("--train-mode",))]
    assert results[0]["examples"] == results[1]["examples"] == 20
    assert abs(results[0]["loss"] - results[1]["loss"]) > 1e-3
