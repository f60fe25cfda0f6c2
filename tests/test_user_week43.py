"""A super-resolution engineer's week (docs/tools.md): an EDSR-like x2 net (residual blocks without BN,
nn.PixelShuffle, a bicubic skip, L1 + Charbonnier + a frozen perceptual net, Adam under MultiStepDecay), the same
channels-last on odd sizes (a bilinear align_corners skip), a DnCNN-like denoiser (reflect-padded convs, batch norm)
trained on 1 - SSIM (a Gaussian window by a grouped conv over a replicate pad) plus total variation, and interpolation
baselines, built with Paddle 3.3.1's layers (tools/paddle_user_week43.py) and trained, evaluated, checked and exported
against Paddle's numbers. Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from user_weeks import train_steps

WEEK = DATA / "user_week43"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("sr", "sr_nhwc", "dncnn")
SCHEDULE = "MultiStepDecay(learning_rate=0.01, milestones=[2, 4], gamma=0.5)"
LOSSES = {"sr": "tmp_7", "sr_nhwc": "mean_0.tmp_0", "dncnn": "tmp_29"}
OPTIMIZERS = {"sr": ("--lr-schedule", SCHEDULE), "sr_nhwc": ("--lr-schedule", SCHEDULE), "dncnn": ("--lr", 0.005)}
FROZEN = ("--no-grad", "conv2d_6.*", "--no-grad", "conv2d_7.*")   # the perceptual net: a .pb keeps no trainable


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model; each model's first batch of 2."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week43"), MODELS)
    for model in MODELS:
        data = np.load(out / model / "data.npz")
        np.savez(out / model / "batch.npz", **{name: data[name][:2] for name in data.files})
    np.savez(out / "big.npz", lr=np.load(out / "predictor.npz")["lr"])
    return out


@pytest.mark.parametrize("model", MODELS)
def test_each_model_trains_to_paddles_losses_and_weights(files, model):
    """gradc compile --optimizer adam (the SR nets under MultiStepDecay, given to train too) with the loss named and
    the frozen perceptual net left out: 6 steps of 2 from Paddle's initial weights give its losses to 1e-6 relative
    (7e-8 measured) and weights to 1e-6 (6.7e-8), through bicubic / bilinear resizes, pixel_shuffle NCHW and NHWC,
    reflect and replicate pads, the grouped SSIM window (no fault). The denoiser's first conv bias element 6 (a
    channel the ReLU nearly never passes: gradients of 1e-8, float32 noise that Adam's normalisation makes steps of
    lr) and the moving mean behind it move differently, in Paddle as in gradc run twice with sums in other orders."""
    folder = files / model
    extra = FROZEN if model == "sr" else ()
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "gradc.pb", "--optimizer", "adam",
                         "--loss", LOSSES[model], *OPTIMIZERS[model], *extra)
    assert compiled.returncode == 0, compiled.stderr
    schedule = OPTIMIZERS[model] if model != "dncnn" else ()
    run = train_steps(folder / "gradc.pb", folder / "gradc.startup.pb", folder / "data.npz", 2, "--params",
                      folder / "init.npz", "--save-params", folder / "trained_gradc.npz", *schedule)
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    ours, paddle = np.load(folder / "trained_gradc.npz"), np.load(folder / "trained.npz")
    noisy = {"conv2d_14.b_0", "batch_norm2d_0.w_1"} if model == "dncnn" else set()
    for name in set(paddle.files) - noisy:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=1e-6, err_msg=name)
    if model == "dncnn":
        kept = np.arange(8) != 6
        np.testing.assert_allclose(ours["conv2d_14.b_0"][kept], paddle["conv2d_14.b_0"][kept], rtol=0, atol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_training_programs_train_in_gradc(files, model):
    """Paddle's minimize() programs from its startup (the schedule given to train, as the file holds only its step-0
    rate): its 6 losses to 1e-6 relative (no fault)."""
    folder = files / model
    schedule = OPTIMIZERS[model] if model != "dncnn" else ()
    run = train_steps(folder / "train.pb", folder / "startup.pb", folder / "data.npz", 2, "--params",
                      folder / "init.npz", *schedule)
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model, fetched", [("sr", {"psnr": "tmp_10"}), ("sr_nhwc", {"psnr": "tmp_5"}),
                                            ("dncnn", {"psnr": "tmp_32", "ssim": "mean_0.tmp_0"})])
def test_evaluate_gives_paddles_set_loss_psnr_and_ssim(files, model, fetched):
    """gradc evaluate of the forward program on Paddle's trained weights in batches of 5 (test mode: batch norm's
    moving statistics) gives the loss, PSNR and SSIM Paddle's test program gives over the whole set in one run, to
    2e-6 relative (the PSNR from the set's mean squared error) (no fault)."""
    args = [arg for name in fetched.values() for arg in ("--fetch", name)]
    run = gradc_cli("evaluate", files / model / "forward.pb", "--params", files / model / "trained.npz", "--data",
                    files / model / "data.npz", "--batch-size", 5, "--loss", LOSSES[model], "--json", *args)
    assert run.returncode == 0, run.stderr
    ours, paddle = json.loads(run.stdout), META[model]["eval"]
    np.testing.assert_allclose(ours["loss"], paddle["loss"], rtol=2e-6)
    for key, name in fetched.items():
        np.testing.assert_allclose(ours[name], paddle[key], rtol=2e-6, err_msg=key)


def test_evaluate_says_which_scalar_it_took_for_the_loss(files):
    """Without --loss, gradc evaluate of the denoiser took the PSNR (the scalar the last op writes) for the loss
    without a word, and fetching that PSNR (--fetch) left it out of the report: "loss: 6.75562 (tmp_32)", the
    batches' mean PSNR, where Paddle's set PSNR is 6.75508 and the loss 1.0137. Now a guess passed over other scalars
    is noted, and a fetched guess is averaged as the metric it is (the set's PSNR), with no loss."""
    folder = files / "dncnn"
    common = ("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data", folder / "data.npz",
              "--batch-size", 5)
    run = gradc_cli(*common, "--fetch", "mean_0.tmp_0")
    assert run.returncode == 0 and "gradc: note: the loss is tmp_32, the float scalar the last op (scale) writes; " \
        "float scalars no op reads besides it: tmp_29" in run.stderr
    run = gradc_cli(*common, "--fetch", "tmp_32", "--fetch", "mean_0.tmp_0", "--json")
    assert run.returncode == 0 and "no loss: tmp_32, the loss gradc would pick, is fetched (--fetch)" in run.stderr
    ours = json.loads(run.stdout)
    assert "loss" not in ours
    np.testing.assert_allclose(ours["tmp_32"], META["dncnn"]["eval"]["psnr"], rtol=2e-6)
    baseline = gradc_cli("evaluate", files / "baseline.pb", "--data", files / "sr" / "data.npz", "--batch-size", 5,
                         *[arg for mode in ("bilinear", "bicubic", "nearest")
                           for arg in ("--fetch", META["baseline"][f"{mode}_psnr"])])
    assert baseline.returncode == 0, baseline.stderr
    assert "loss: none (tmp_8, written last, is fetched: a metric, below; name it with --loss)" in baseline.stdout
    for mode in ("bilinear", "bicubic", "nearest"):   # nearest: 17.8818 before, the batches' mean
        line = next(line for line in baseline.stdout.splitlines() if line.startswith(META["baseline"][f"{mode}_psnr"]))
        np.testing.assert_allclose(float(line.split(": ")[1]), META["baseline"]["eval"][mode], rtol=1e-5)


@pytest.mark.parametrize("model", MODELS)
def test_check_of_each_loss_against_central_differences(files, model):
    """gradc check on Paddle's trained weights: every parameter, and the images (the low-resolution input through
    the bicubic skip and pixel_shuffle, the noisy image through the reflect pads and SSIM's window) agree with float64
    central differences (no fault)."""
    inputs = {"sr": "lr", "sr_nhwc": "lr", "dncnn": "noisy"}[model]
    for extra in ((), ("--wrt", inputs, "--max-elements", 60)):
        run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                        files / model / "batch.npz", "--loss", LOSSES[model], "--directions", 2, "--json", *extra)
        assert run.returncode == 0, run.stdout + run.stderr
        assert json.loads(run.stdout)["problems"] == []


def test_exports_run_on_larger_odd_images(files):
    """Paddle's jit.save PIR export of the SR net (H, W dynamic) run by gradc on 11x13 images gives the dygraph
    outputs to 5e-6 of their 5.0 (4.8e-7 measured on an AVX-512 machine, 2.1e-6 where numpy and OpenBLAS run their
    AVX2 kernels; the Predictor's are 2.4e-6 off them); gradc export of its compilation, .pdmodel and PIR .json, runs
    alike (no fault)."""
    paddle = np.load(files / "predictor.npz")
    run = gradc_cli("run", files / "sr_pir.json", "--params", files / "sr" / "trained.npz", "--feed",
                    files / "big.npz", "-o", files / "pir_out.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(files / "pir_out.npz")["fetch_name_0"], paddle["dygraph"], rtol=0, atol=5e-6)
    np.testing.assert_allclose(paddle["fetch_name_0"], paddle["dygraph"], rtol=0, atol=5e-6)
    folder = files / "sr"
    assert gradc_cli("compile", folder / "forward.pb", "-o", folder / "export.pb", "--loss", "tmp_7",
                     *FROZEN).returncode == 0
    for suffix in (".json", ".pdmodel"):
        run = gradc_cli("export", folder / "export.pb", "--params", folder / "trained.npz", "--input", "lr",
                        "--fetch", "tmp_2=sr", "-o", folder / ("sr" + suffix if suffix == ".json" else "sr"))
        assert run.returncode == 0, run.stderr
        run = gradc_cli("run", folder / f"sr{suffix}", "--params", folder / "sr.pdiparams", "--feed",
                        files / "big.npz", "-o", files / "export_out.npz")
        assert run.returncode == 0, run.stderr
        np.testing.assert_allclose(np.load(files / "export_out.npz")["sr"], paddle["dygraph"], rtol=0, atol=5e-6)


def test_a_scale_gives_paddles_output_size(files):
    """F.interpolate(scale_factor=0.7) of a 10x10 image: 10 * float32(0.7) is 6.99999988, and Paddle's kernel takes
    int() of it in double, 6 rows; gradc rounded the product to float32 first, 7.0, and gave 7x7 (and 7x13 for
    [0.7, 1.3], Paddle 6x12: 10 * float32(1.3) is 12.9999995). Now Paddle's sizes and values (1.8e-7 measured)."""
    run = gradc_cli("run", files / "resize.pb", "--feed", files / "resize.npz", "--fetch",
                    f"{META['resize']['bilinear']}=bilinear", "--fetch", f"{META['resize']['bicubic']}=bicubic", "-o",
                    files / "resize_out.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / "resize_out.npz"), np.load(files / "resize.npz")
    assert ours["bilinear"].shape == (1, 3, 6, 6) and ours["bicubic"].shape == (1, 3, 6, 12)
    for name in ("bilinear", "bicubic"):
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=1e-6)


def test_a_pir_scale_attribute_is_used_in_double(files):
    """A PIR program holds the scale attribute in double (a_f64 1.3), and Paddle's ratio is 1 / 1.3; gradc rounded
    it to float32 first, and its float64 bilinear resize by [1.3, 1.7] (align_mode 1) was 2.8e-6 off Paddle's, the
    gradient 2.1e-5, the antialiased resize by [0.7, 0.29] 1.6e-7. Now all three to 1e-12 (4.4e-15 measured)."""
    run = gradc_cli("run", files / "resize_pir.json", "--feed", files / "resize_pir.npz", "-o", files / "pir.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / "pir.npz"), np.load(files / "resize_pir.npz")
    for index, name in enumerate(("y", "grad", "smooth")):
        np.testing.assert_allclose(ours[f"fetch_name_{index}"], paddle[name], rtol=0, atol=1e-12, err_msg=name)


def test_float64_bicubic_gradient_is_the_forwards_adjoint(files):
    """A float64 bicubic resize (align_corners False) to 7x9 and to a reference's 9x11 (paddle.shape(ref)[2:]) from
    5x6: Paddle's grad kernel computes the sampling positions in float32 where its forward uses double, so its
    gradient is up to 2e-6 off the forward's (gradc check: "compiled 0.00887494, numeric 0.00887445" while gradc
    followed Paddle). gradc's float64 gradient is the forward's adjoint: check agrees at every element, and Paddle's
    is the one off (float32 grads still follow Paddle's kernel)."""
    loss = META["resize"]["bicubic_loss"]
    run = gradc_cli("check", files / "bicubic.pb", "--feed", files / "bicubic.npz", "--loss", loss, "--wrt", "x",
                    "--max-elements", 180, "--json")
    assert run.returncode == 0 and json.loads(run.stdout)["problems"] == [], run.stdout
    assert gradc_cli("compile", files / "bicubic.pb", "-o", files / "bicubic_grad.pb", "--loss", loss, "--wrt",
                     "x").returncode == 0
    run = gradc_cli("run", files / "bicubic_grad.pb", "--feed", files / "bicubic.npz", "--fetch", "x@GRAD=g", "-o",
                    files / "bicubic_grad.npz")
    assert run.returncode == 0, run.stderr
    off = np.abs(np.load(files / "bicubic_grad.npz")["g"] - np.load(files / "bicubic.npz")["grad"]).max()
    assert 1e-7 < off < 1e-5


def test_info_names_the_other_scalars_a_loss_could_be(files):
    """gradc info of the SR forward program said "loss: tmp_10 (gradc compile picks it by itself)": the PSNR, written
    after the loss tmp_7, with nothing to say there was a choice. Now it names the others, as compile's note does; a
    program whose last scalar is the only one (Paddle's training program, marked) reads as before."""
    run = gradc_cli("info", files / "sr" / "forward.pb")
    assert run.returncode == 0, run.stderr
    assert "loss: tmp_10 (gradc compile picks it by itself; float scalars no op reads besides it: tmp_7 (--loss " \
           "NAME))" in run.stdout
    run = gradc_cli("info", files / "sr" / "train.pb")
    assert "loss: tmp_7 (its op's op_role marks it the loss)" in run.stdout


def test_a_schedule_stepped_per_epoch(files):
    """An SR recipe halves the rate every so many epochs: MultiStepDecay(0.01, [2, 4], 0.5) stepped after each of 3
    epochs of 6 steps. gradc train's --lr-schedule stepped per step only (the rate halved at step 2, not epoch 2),
    with no way to say otherwise but listing 18 rates; now --lr-per-epoch gives Paddle's 18 losses to 1e-6 relative
    (2.3e-7 measured), and without it they part from step 3 on."""
    folder = files / "sr_nhwc"
    assert gradc_cli("compile", folder / "forward.pb", "-o", folder / "epochs.pb", "--optimizer", "adam", "--loss",
                     LOSSES["sr_nhwc"], "--lr-schedule", SCHEDULE).returncode == 0
    common = ("train", folder / "epochs.pb", "--startup", folder / "epochs.startup.pb", "--params", folder / "init.npz",
              "--data", folder / "data.npz", "--batch-size", 2, "--epochs", 3, "--json", "--log-every", 1,
              "--lr-schedule", SCHEDULE)
    paddle = META["sr_nhwc"]["epoch_losses"]
    np.testing.assert_allclose(step_losses(gradc_cli(*common, "--lr-per-epoch")), paddle, rtol=1e-6)
    stepped = step_losses(gradc_cli(*common))
    np.testing.assert_allclose(stepped[:3], paddle[:3], rtol=1e-6)
    assert abs(stepped[3] / paddle[3] - 1) > 1e-3
    usage = gradc_cli("train", folder / "epochs.pb", "--data", folder / "data.npz", "--lr-per-epoch")
    assert usage.returncode == 2 and "--lr-per-epoch: only with --lr-schedule" in usage.stderr
