"""An image-restoration engineer's week (docs/tools.md): an ESPCN/EDSR-like x2 super-resolution net built with Paddle
3.3.1's layers (tools/paddle_user_week23.py: Conv2D, a residual block, PixelShuffle; an L1 plus a perceptual loss of a
frozen feature net; a PSNR), a neural style transfer whose trained variable is the image (Gram matrices by matmul, a
total-variation loss by slicing and abs), both trained with Adam, and the SR net exported and run on images twice the
training size (save_inference_model and PIR's jit.save); each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked
from gradc.errors import FeedError

WEEK = DATA / "user_week23"
META = json.loads((WEEK / "meta.json").read_text())
SR_LOSS, PSNR = META["sr"]["loss"], META["sr"]["psnr"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them: the fixture's programs unpacked beside its arrays, and the feeds a user
    writes from them (the style transfer's two images, the frozen feature net, the larger images, a batch)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week23"))
    style = np.load(out / "style.npz")
    np.savez(out / "images.npz", content=style["content"], style=style["style"])
    np.savez(out / "vgg.npz", **{name: style[name] for name in style.files if name.startswith("vgg")})
    np.savez(out / "large.npz", lr=np.load(out / "predictor.npz")["lr"])
    data = np.load(out / "data.npz")
    np.savez(out / "batch.npz", lr=data["lr"][:2], hr=data["hr"][:2])
    return out


def _steps(lines: str) -> list[dict]:
    return [line["values"] for line in map(json.loads, lines.splitlines()) if line["event"] == "step"]


def _train_sr(files, name: str, *compile_args) -> tuple[list[dict], dict, str]:
    """sr.pb compiled with Adam(0.01) and the given options, trained 6 steps of 4 from Paddle's startup with the loss
    and the PSNR fetched; the step values, the saved parameters and compile's stderr."""
    compiled = gradc_cli("compile", files / "sr.pb", "-o", files / f"{name}.pb", "--optimizer", "adam", "--lr", 0.01,
                         *compile_args)
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", files / f"{name}.pb", "--startup", files / "sr_startup.pb", "--startup",
                    files / f"{name}.startup.pb", "--data", files / "data.npz", "--batch-size", 4, "--json",
                    "--log-every", 1, "--fetch", SR_LOSS, "--fetch", PSNR, "--save-params", files / f"{name}.npz")
    assert run.returncode == 0, run.stderr
    return _steps(run.stdout), dict(np.load(files / f"{name}.npz")), compiled.stderr


def test_the_psnr_written_after_the_loss_is_picked_with_a_note_naming_the_loss(files):
    """The PSNR is computed after the loss, so its scale op is the program's last and its output the float scalar the
    last op writes. Before, gradc compile took the PSNR for the loss without a word: Adam minimised it, and the PSNR
    fell at every step (5.88 dB to 4.36 dB) where Paddle's rose (5.88 to 8.02). Now the pick says so in one note line
    naming the other float scalar no op reads, the L1 + perceptual loss, and how to name it."""
    steps, _, stderr = _train_sr(files, "picked", "--no-grad", "perceptual.*")
    assert stderr.splitlines()[0] == (
        f"gradc: note: the loss is {PSNR}, the float scalar the last op (scale) writes; float scalars no op reads "
        f"besides it: {SR_LOSS}; if one of them is the loss, name it with --loss (loss= in Python)")
    psnrs = [step[PSNR] for step in steps]
    assert psnrs[0] == pytest.approx(META["sr"]["psnrs"][0], rel=1e-6)
    assert all(later < earlier for earlier, later in zip(psnrs, psnrs[1:]))


def test_the_named_loss_trains_to_paddles_losses_psnrs_and_weights_the_feature_net_frozen(files):
    """With --loss and the perceptual net left out (--no-grad 'perceptual.*': a legacy .pb keeps no trainable=False,
    and only the bias's reshape carries a stop_gradient), 6 Adam steps give Paddle's losses (1.03 ... 0.344) and PSNRs
    to 1e-6, Paddle's trained weights to 2e-6, and the feature net bit for bit as it started."""
    steps, params, stderr = _train_sr(files, "named", "--loss", SR_LOSS, "--no-grad", "perceptual.*")
    assert stderr == ("gradc: note: parameters frozen, without a gradient: 2 (perceptual.b, perceptual.w): in the "
                      "no-grad set (--no-grad)\n")
    np.testing.assert_allclose([step[SR_LOSS] for step in steps], META["sr"]["losses"], rtol=1e-6)
    np.testing.assert_allclose([step[PSNR] for step in steps], META["sr"]["psnrs"], rtol=1e-6)
    paddle = np.load(files / "sr_trained.npz")
    for name in paddle.files:
        np.testing.assert_allclose(params[name], paddle[name], atol=2e-6, err_msg=name)
    scope = gradc.Scope()
    gradc.Executor().run(gradc.load(files / "sr_startup.pb"), scope=scope)
    assert all(np.array_equal(params[name], scope[name]) for name in ("perceptual.w", "perceptual.b"))


def test_the_epochs_psnr_is_that_of_its_mean_squared_error_not_a_mean_of_psnrs(files):
    """The PSNR, 10 log10(1 / MSE), is computed from a mean: an epoch's is that of the epoch's MSE, as evaluate gives
    a set's. Before, the epoch line averaged the 6 steps' PSNRs (7.1111); now 10 log10(1 / the mean of the MSEs
    Paddle's step PSNRs give), 7.0459 (equal batches: the MSEs weigh alike)."""
    compiled = gradc_cli("compile", files / "sr.pb", "-o", files / "epoch.pb", "--optimizer", "adam", "--lr", 0.01,
                         "--loss", SR_LOSS, "--no-grad", "perceptual.*")
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", files / "epoch.pb", "--startup", files / "sr_startup.pb", "--startup",
                    files / "epoch.startup.pb", "--data", files / "data.npz", "--batch-size", 4, "--json",
                    "--fetch", SR_LOSS, "--fetch", PSNR)
    assert run.returncode == 0, run.stderr
    (epoch,) = [line["train"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    mses = 10 ** (-np.array(META["sr"]["psnrs"]) / 10)
    np.testing.assert_allclose(epoch[PSNR], 10 * np.log10(1 / mses.mean()), rtol=1e-6)
    assert abs(np.mean(META["sr"]["psnrs"]) - 10 * np.log10(1 / mses.mean())) > 0.05   # the mean of PSNRs
    np.testing.assert_allclose(epoch[SR_LOSS], np.mean(META["sr"]["losses"]), rtol=1e-6)   # a loss: the mean


def test_the_style_transfer_trains_the_image_to_paddles(files):
    """The image is the one parameter trained (--param image; the frozen feature net given by --params): 10 Adam steps
    give Paddle's losses (0.0333 ... 0.0202) to 1e-5 and Paddle's stylised image to 2e-6 (it moved 0.2 from the
    content image). L-BFGS, the optimizer style transfer is known for, is Paddle's dygraph LBFGS, with no
    static-graph op: compile --optimizer lbfgs is refused, saying where gradc has it (gradc train --lbfgs of the
    program compiled without an optimizer, tests/test_lbfgs.py): two steps of up to 10 iterations take the loss to
    0.0071, a third of where Adam's 10 steps end (0.0202)."""
    compiled = gradc_cli("compile", files / "style.pb", "-o", files / "style_train.pb", "--param", "image",
                         "--optimizer", "adam", "--lr", 0.02)
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", files / "style_train.pb", "--startup", files / "style_startup.pb", "--startup",
                    files / "style_train.startup.pb", "--params", files / "vgg.npz", "--feed", files / "images.npz",
                    "--steps", 10, "--json", "--log-every", 1, "--save-params", files / "stylised.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose([step[META["style"]["loss"]] for step in _steps(run.stdout)], META["style"]["losses"],
                               rtol=1e-5)
    paddle, image = np.load(files / "style.npz"), np.load(files / "stylised.npz")["image"]
    np.testing.assert_allclose(image, paddle["trained_image"], atol=2e-6)
    assert np.abs(image - paddle["content"]).max() > 0.1
    refused = gradc_cli("compile", files / "style.pb", "-o", files / "lbfgs.pb", "--optimizer", "lbfgs")
    assert refused.returncode == 2
    assert refused.stderr.startswith("gradc: error: Invalid value for '--optimizer': L-BFGS is no op of a program: "
                                     "compile without --optimizer, then train the compiled program with gradc train "
                                     "--lbfgs")
    compiled = gradc_cli("compile", files / "style.pb", "-o", files / "style_lbfgs.pb", "--param", "image")
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", files / "style_lbfgs.pb", "--startup", files / "style_startup.pb", "--params",
                    files / "vgg.npz", "--feed", files / "images.npz", "--steps", 3, "--json", "--log-every", 1,
                    "--lbfgs", "max_iter=10, line_search_fn='strong_wolfe'")
    assert run.returncode == 0, run.stderr
    final = json.loads(run.stdout.splitlines()[-1])["last"][META["style"]["loss"]]
    assert final < META["style"]["losses"][-1] / 2


def test_check_with_respect_to_fed_images(files):
    """Before, gradc check --wrt lr (or hr) of the SR loss reported a MISMATCH, "compiled 0, numeric -0.0203273": a
    fed var is stop_gradient in Paddle's file, so the compiled backward never gave it a gradient, and the check
    compared central differences with zeros. Now a var checked by name gets its gradient: every element of the
    low-resolution batch (through the convolutions and pixel_shuffle) and of the target (through the L1 and the frozen
    feature net) agrees with central differences."""
    run = gradc_cli("check", files / "sr.pb", "--loss", SR_LOSS, "--feed", files / "batch.npz", "--params",
                    files / "sr_trained.npz", "--wrt", "lr", "--wrt", "hr", "--max-elements", 512, "--json")
    assert run.returncode == 0, run.stdout
    checked = {var["var"]: var for var in json.loads(run.stdout)["vars"]}
    assert [checked[name]["checked"] for name in ("lr", "hr")] == [128, 512]
    assert max(var["max_abs_error"] for var in checked.values()) < 1e-9


@pytest.mark.parametrize("loss", ["loss", "tv"])
def test_check_of_the_style_image_gram_and_total_variation(files, loss):
    """The style loss (Gram matrices by matmul of reshaped features) and the total variation alone (slices and abs)
    agree with central differences at all 256 pixels of the image (no fault)."""
    run = gradc_cli("check", files / "style.pb", "--loss", META["style"][loss], "--feed", files / "images.npz",
                    "--params", files / "vgg.npz", "--startup", files / "style_startup.pb", "--wrt", "image",
                    "--max-elements", 256, "--json")
    assert run.returncode == 0, run.stdout
    (image,) = json.loads(run.stdout)["vars"]
    assert image["checked"] == 256 and image["max_abs_error"] < 1e-8


@pytest.mark.parametrize("model, predicted", [("sr_infer.pdmodel", "predictor.npz"),
                                              ("sr_pir.json", "predictor_pir.npz")])
def test_the_saved_net_runs_on_images_twice_the_training_size(files, model, predicted):
    """Paddle's save_inference_model and PIR jit.save of the SR net (input [-1, 1, -1, -1]), trained on 8x8 inputs,
    run by gradc on 16x16 ones: the 32x32 outputs are Paddle's Predictor's to 2e-6 (no fault)."""
    run = gradc_cli("run", files / model, "--params", files / "sr_trained.npz", "--feed", files / "large.npz",
                    "-o", files / f"{model}.out.npz")
    assert run.returncode == 0, run.stderr
    (output,) = np.load(files / f"{model}.out.npz").values()
    assert output.shape == (2, 1, 32, 32)
    np.testing.assert_allclose(output, np.load(files / predicted)["sr"], atol=2e-6)


def test_a_saved_net_declared_at_the_training_size_runs_on_larger_images_as_the_predictor_runs_it(files):
    """The same net saved with its input declared [-1, 1, 8, 8], as it was trained: Paddle's Predictor runs it on
    16x16 inputs (it checks no declared size), Paddle's Executor refuses them. Before, gradc run refused them too
    ("feed var 'lr' ... has shape [2, 1, 16, 16], but block 0 declares [-1, 1, 8, 8]"), so a model exported at its
    training size could not be run on a larger image as in Paddle's deployment. Now a saved model (its inputs read by
    feed ops) takes a feed of the declared rank and other sizes with a note, and gives the Predictor's 32x32 outputs
    to 2e-6; a feed of another rank, or any size the forward program declares otherwise, is still refused."""
    run = gradc_cli("run", files / "sr_fixed.pdmodel", "--params", files / "sr_trained.npz", "--feed",
                    files / "large.npz", "-o", files / "fixed_out.npz")
    assert run.returncode == 0, run.stderr
    assert ("gradc: note: feed var 'lr' has shape [2, 1, 16, 16] where the saved model declares [-1, 1, 8, 8]: run "
            "as Paddle's Predictor runs it, which checks no declared size") in run.stderr
    (output,) = np.load(files / "fixed_out.npz").values()
    np.testing.assert_allclose(output, np.load(files / "predictor.npz")["sr_fixed"], atol=2e-6)
    np.savez(files / "flat.npz", lr=np.load(files / "large.npz")["lr"][:, 0])
    refused = gradc_cli("run", files / "sr_fixed.pdmodel", "--params", files / "sr_trained.npz", "--feed",
                        files / "flat.npz")
    assert refused.returncode == 1
    assert refused.stderr.endswith("has shape [2, 16, 16], but block 0 declares [-1, 1, 8, 8]\n")
    np.savez(files / "wide.npz", lr=np.zeros((2, 3, 16, 16), np.float32))   # the rank; no conv takes 3 channels
    failed = gradc_cli("run", files / "sr_fixed.pdmodel", "--params", files / "sr_trained.npz", "--feed",
                       files / "wide.npz")
    assert failed.returncode == 1   # its error alone: the size note shows when a run ends (fuzz seed 1471)
    assert "gradc: note:" not in failed.stderr   # (the params' warning of unused values stays: it is about them)
    assert failed.stderr.splitlines()[-1].startswith("gradc: error: block 0, op ")
    forward = gradc.load(files / "sr_fixed.pdmodel")
    forward.global_block.ops = [op for op in forward.global_block.ops if op.type not in ("feed", "fetch")]
    scope = gradc.Scope()
    gradc.load_params(scope, files / "sr_trained.npz", forward)
    with pytest.raises(FeedError, match=r"has shape \[2, 1, 16, 16\], but block 0 declares \[-1, 1, 8, 8\]"):
        gradc.Executor().run(forward, feed=dict(np.load(files / "large.npz")), scope=scope)


@pytest.mark.parametrize("suffix", ["pdmodel", "json"])
def test_gradc_export_of_the_trained_net_runs_on_larger_images(files, suffix):
    """gradc export of the training program (legacy .pdmodel and PIR .json) keeps H and W dynamic: the exported net
    runs on 16x16 inputs and gives what Paddle's saved net gives with the same weights, bit for bit."""
    exported = files / f"exported.{suffix}"
    run = gradc_cli("export", files / "sr.pb", "-o", exported, "--input", "lr", "--fetch",
                    f"{META['sr']['sr']}=sr", "--params", files / "sr_trained.npz")
    assert run.returncode == 0, run.stderr
    run = gradc_cli("run", exported, "--params", exported.with_suffix(".pdiparams"), "--feed", files / "large.npz",
                    "-o", files / f"exported_{suffix}.npz")
    assert run.returncode == 0, run.stderr
    saved = gradc.load(files / "sr_infer.pdmodel")
    scope = gradc.Scope()
    gradc.load_params(scope, files / "sr_trained.npz", saved)
    (expected,) = gradc.Executor().run(saved, feed=dict(np.load(files / "large.npz")),
                                       fetch_list=[META["infer"]["sr_infer"]], scope=scope)
    np.testing.assert_array_equal(np.load(files / f"exported_{suffix}.npz")["sr"], expected)


def test_evaluate_gives_the_psnr_of_the_sets_mean_squared_error(files):
    """Before, evaluate --fetch of the PSNR (10 log10 of 1 over the batch's MSE) averaged the batches' PSNRs: 9.0269 dB
    in batches of 4, 9.0202 in one batch of 24, though the batch size is to change only the rounding. A scalar made
    by scalar ops from one mean over the batch is now that of the set's mean: one batch of 24's PSNR in batches of 4
    and 5; the loss stays the mean of the batches' losses, as Paddle's Model.evaluate."""
    program, scope = gradc.load(files / "sr.pb"), gradc.Scope()
    gradc.load_params(scope, files / "sr_trained.npz", program)
    data = dict(np.load(files / "data.npz"))
    whole = gradc.Executor().run(gradc.training.programs.forward_part(program), data, [SR_LOSS, PSNR], scope)
    for size in (4, 5):
        run = gradc_cli("evaluate", files / "sr.pb", "--params", files / "sr_trained.npz", "--data",
                        files / "data.npz", "--loss", SR_LOSS, "--fetch", PSNR, "--batch-size", size, "--json")
        assert run.returncode == 0, run.stderr
        results = json.loads(run.stdout)
        assert results[PSNR] == pytest.approx(float(whole[1]), rel=1e-6)
        assert results["loss"] == pytest.approx(float(whole[0]), rel=1e-6)
        assert sorted(results) == sorted(["examples", "loss", "loss_var", "loss_vars", SR_LOSS, PSNR])


def test_miou_of_a_program_without_class_scores_is_one_error_line(files):
    """The SR net scores no classes: evaluate --miou says what the mIoU needs, in one line, and prints nothing."""
    run = gradc_cli("evaluate", files / "sr.pb", "--params", files / "sr_trained.npz", "--data", files / "data.npz",
                    "--loss", SR_LOSS, "--miou")
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr == (f"gradc: error: data '{files / 'data.npz'}': evaluation: the mIoU needs class scores and "
                          f"labels: the program has no cross-entropy op whose labels the data holds, nor one output "
                          f"of rank 2 or more (name the labels with --label NAME)\n")
