"""A speech and audio engineer's week (docs/tools.md): a keyword spotter whose MFCC features, SpecAugment masks and
conformer-ish encoder are in the program, and a vocoder-like autoencoder trained on an |STFT| L1 loss through an iSTFT
head, built and trained by Paddle 3.3.1 in legacy static mode and as PIR (tools/paddle_user_week18.py and
tools/paddle_user_week18_pir.py); float64 FFT cases with Paddle's gradients; each fault found, as the behaviour it has
now."""

import gzip
import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc import gradcheck, schedules
from gradc.central_differences import numeric_grad, settled
from gradc.executor.feeding import program_inputs
from gradc.training.programs import forward_part

WEEK = DATA / "user_week18"
META = json.loads((WEEK / "meta.json").read_text())
STEP_DECAY = "StepDecay(learning_rate=0.01, step_size=2, gamma=0.5)"


@pytest.fixture(scope="module")
def week(tmp_path_factory):
    """The week's files as the user has them: the programs unpacked (they are stored gzipped), the arrays beside."""
    out = tmp_path_factory.mktemp("week18")
    for path in WEEK.iterdir():
        target = out / path.name.removesuffix(".gz")
        target.write_bytes(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
    return out


def step_losses(run, name: str) -> list[float]:
    assert run.returncode == 0, run.stderr
    return [json.loads(line)["values"][name] for line in run.stdout.splitlines() if '"event": "step"' in line]


def test_the_keyword_spotter_trains_to_paddles_losses_with_its_step_decay(week, tmp_path):
    """MFCC in the program (reflect pad3d, frame, the window, fft_r2c, |.|^2, the mel matmul, 10 log10 of the max with
    1e-10, the DCT matmul), fed SpecAugment masks, attention, GLU, depthwise conv, batch norm: gradc's Adam with
    Paddle's StepDecay written by the host gives Paddle's 4 losses; so does Paddle's own training program."""
    compiled = gradc_cli("compile", week / "kws.pb", "-o", tmp_path / "train.pb", "--loss", META["kws_loss"],
                         "--optimizer", "adam", "--lr-schedule", STEP_DECAY)
    assert compiled.returncode == 0, compiled.stderr
    common = ("--data", week / "kws_data.npz", "--batch-size", 4, "--lr-schedule", STEP_DECAY, "--json",
              "--log-every", 1)
    run = gradc_cli("train", tmp_path / "train.pb", "--startup", week / "kws_startup.pb", "--startup",
                    tmp_path / "train.startup.pb", *common)
    np.testing.assert_allclose(step_losses(run, META["kws_loss"]), META["kws_losses"], rtol=1e-5)
    paddles = gradc_cli("train", week / "kws_train.pb", "--startup", week / "kws_startup.pb", "--fetch",
                        META["kws_loss"], *common)
    np.testing.assert_allclose(step_losses(paddles, META["kws_loss"]), META["kws_losses"], rtol=1e-5)


def test_spec_augment_and_dropout_drawn_in_the_program_are_paddles_draws(week, tmp_path):
    """SpecAugment drawn by uniform_random, floor and comparisons with a range, dropout 0.1 in the attention and the
    feed-forward: with --paddle-stream --seed 18 (paddle.seed(18) before the startup) the weights, masks and dropout
    are Paddle's, and so are the 4 losses."""
    compiled = gradc_cli("compile", week / "kws_random.pb", "-o", tmp_path / "train.pb", "--loss",
                         META["kws_random_loss"], "--optimizer", "adam", "--lr", 0.005)
    assert compiled.returncode == 0, compiled.stderr
    data = np.load(week / "kws_data.npz")
    np.savez(tmp_path / "data.npz", wav=data["wav"], label=data["label"])
    run = gradc_cli("train", tmp_path / "train.pb", "--startup", week / "kws_random_startup.pb", "--startup",
                    tmp_path / "train.startup.pb", "--data", tmp_path / "data.npz", "--batch-size", 4,
                    "--paddle-stream", "--seed", 18, "--json", "--log-every", 1)
    np.testing.assert_allclose(step_losses(run, META["kws_random_loss"]), META["kws_random_losses"], rtol=1e-5)


def test_the_vocoder_trains_through_its_istft_head_to_paddles_losses(week, tmp_path):
    """exp and phase to a complex spectrum, fft_c2r, the window, overlap_add, the envelope divided out; the loss
    |STFT| L1 against the target: gradients through fft_c2r, overlap_add, frame, fft_r2c and |complex|; Paddle's 4
    Adam losses (206.6 down to 2.9)."""
    compiled = gradc_cli("compile", week / "vocoder.pb", "-o", tmp_path / "train.pb", "--loss", META["vocoder_loss"],
                         "--optimizer", "adam", "--lr", 0.003)
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", tmp_path / "train.pb", "--startup", week / "vocoder_startup.pb", "--startup",
                    tmp_path / "train.startup.pb", "--data", week / "vocoder_data.npz", "--batch-size", 4, "--json",
                    "--log-every", 1)
    np.testing.assert_allclose(step_losses(run, META["vocoder_loss"]), META["vocoder_losses"], rtol=1e-5)


def test_the_spectral_loss_gradient_in_float64_is_paddles_and_central_differences(week):
    """Paddle's backward of |STFT(wav)| - |STFT(target)| L1 run by gradc gives Paddle's wav@GRAD; gradc's own
    backward of the forward part gives the same, and central differences agree with it at every sample."""
    case = np.load(week / "spectral64.npz")
    feed = {"wav": case["wav"], "target": case["target"]}
    paddles = gradc.load(week / "spectral64.pb")
    loss, grad = gradc.Executor().run(paddles, feed=feed, fetch_list=[META["spectral64_loss"], "wav@GRAD"],
                                      scope=gradc.Scope())
    np.testing.assert_allclose(loss, case["loss"], rtol=1e-12)
    np.testing.assert_allclose(grad, case["wav_grad"], rtol=1e-10, atol=1e-16)
    analytic, checks = gradcheck.compare_program(forward_part(paddles), feed, ["wav"], loss=META["spectral64_loss"])
    assert checks[0].checked == case["wav"].size and checks[0].mismatch is None
    np.testing.assert_allclose(analytic["wav"], case["wav_grad"], rtol=1e-10, atol=1e-16)


@pytest.mark.parametrize("case", ["stft_two_sided_ortho", "irfft_ortho_odd", "hfft", "ihfft_abs", "rfftn_forward_abs",
                                  "fft2_real", "power_to_db_top_db"])
def test_fft_gradients_in_float64_are_paddles_and_central_differences(week, case):
    """PIR programs of paddle.signal.stft (two-sided, normalized, constant padding), irfft (ortho, odd n), hfft, ihfft,
    rfftn (forward norm), fft2 and power_to_db with top_db: gradc's loss and its gradients for both inputs are
    Paddle's (1e-10), and central differences agree with them at every element, so Paddle's are right too."""
    arrays = np.load(week / "fft_cases.npz")
    feed = {"x": arrays["x"], "y": arrays["y"], "w": arrays[f"{case}.w"]}
    analytic, checks = gradcheck.compare_program(gradc.load(week / f"fft_{case}.json"), feed, ["x", "y"], loss="loss")
    assert [check.mismatch for check in checks] == [None, None]
    for name in ("x", "y"):
        paddle = arrays[f"{case}.{name}_grad"] if f"{case}.{name}_grad" in arrays else np.zeros_like(arrays[name])
        np.testing.assert_allclose(analytic[name], paddle, rtol=1e-10, atol=1e-13, err_msg=name)


def test_a_saved_spotter_with_paddle_audio_mfcc_runs_fine_tunes_and_exports(week, tmp_path):
    """paddle.jit.save of a dygraph spotter with paddle.audio.features.MFCC (PIR): gradc run gives Paddle's
    probabilities, and stft -> istft Paddle's waveform and magnitudes; --add-loss cross-entropy with Adam(0.01)
    fine-tunes to the losses of Paddle's dygraph fine-tuning, and the export of the tuned model gives Paddle's tuned
    probabilities (its .json and .pdmodel ran in Paddle's Predictor to 9e-8, measured); evaluate's loss is the mean
    cross-entropy of those outputs."""
    pir = np.load(week / "pir.npz")
    np.savez(tmp_path / "wav.npz", wav=pir["wav"])
    for model, names in (("kws_pir", ["probabilities"]), ("istft_pir", ["waveform", "magnitude"])):
        run = gradc_cli("run", week / f"{model}.json", "--params", week / f"{model}.pdiparams", "--feed",
                        tmp_path / "wav.npz", "-o", tmp_path / f"{model}.npz")
        assert run.returncode == 0, run.stderr
        got = np.load(tmp_path / f"{model}.npz")
        for fetched, name in zip(got.files, names):
            np.testing.assert_allclose(got[fetched], pir[name], rtol=1e-5, atol=2e-6, err_msg=name)
    assert gradc_cli("compile", week / "kws_pir.json", "-o", tmp_path / "tune.pb", "--add-loss", "cross-entropy",
                     "--optimizer", "adam", "--lr", 0.01).returncode == 0
    data = np.load(week / "kws_data.npz")
    np.savez(tmp_path / "data.npz", wav=data["wav"], label=data["label"])
    run = gradc_cli("train", tmp_path / "tune.pb", "--startup", tmp_path / "tune.startup.pb", "--params",
                    week / "kws_pir.pdiparams", "--data", tmp_path / "data.npz", "--batch-size", 4, "--json",
                    "--log-every", 1, "--save-params", tmp_path / "tuned.pdiparams")
    np.testing.assert_allclose(step_losses(run, "mean_0.tmp_0"), META["kws_pir_tuned_losses"], rtol=1e-5)
    exported = gradc_cli("export", tmp_path / "tune.pb", "--params", tmp_path / "tuned.pdiparams", "--input", "wav",
                         "--fetch", "fetch_name_0", "-o", tmp_path / "tuned.json")
    assert exported.returncode == 0, exported.stderr
    model = gradc.load(tmp_path / "tuned.json")
    scope = gradc.Scope()
    gradc.load_params(scope, tmp_path / "tuned.pdiparams", model)
    (tuned,) = gradc.Executor().run(model, feed={"wav": pir["wav"]}, fetch_list=["fetch_name_0"], scope=scope)
    np.testing.assert_allclose(tuned, pir["tuned"], rtol=1e-5, atol=2e-6)
    evaluated = gradc_cli("evaluate", tmp_path / "tune.pb", "--params", tmp_path / "tuned.pdiparams", "--data",
                          tmp_path / "data.npz", "--json")
    (probabilities,) = gradc.Executor().run(model, feed={"wav": data["wav"]}, fetch_list=["fetch_name_0"], scope=scope)
    cross_entropy = -np.mean(np.log(np.take_along_axis(probabilities, data["label"], 1)))
    assert json.loads(evaluated.stdout)["loss"] == pytest.approx(cross_entropy, rel=1e-5)


def test_paddles_pir_vocoder_trains_from_its_persistables_with_its_one_cycle_schedule(week):
    """Before, gradc train of Paddle's PIR training program with its persistables as --params (Paddle's values after
    its startup program: parameters, Adam's moments, the learning rate) took each moment for an input the data lacked
    ("has no array 'conv1d_2.b_0_moment1_0' ... the program's inputs: conv1d_0.b_0_beta1_pow_acc_0, ..."): PIR holds
    them as persistable pd_op.data (gradc info listed the 24 as inputs). And Paddle's OneCycleLR was unknown. Now
    they are state, not inputs, and the 4 losses are Paddle's; the rates written are Paddle's scheduler's."""
    program = gradc.load(week / "vocoder_pir_train.json")
    assert program_inputs(program.global_block) == ["target"]
    info = gradc_cli("info", week / "vocoder_pir_train.json").stdout
    assert "inputs:\n  target  float32[-1, 512]\noutputs" in info   # not the 24 moments and beta powers too
    spec = "OneCycleLR(max_learning_rate=0.003, total_steps=4)"
    run = gradc_cli("train", week / "vocoder_pir_train.json", "--params", week / "vocoder_pir_init.npz", "--data",
                    week / "vocoder_data.npz", "--batch-size", 4, "--fetch", "loss", "--lr-schedule", spec, "--json",
                    "--log-every", 1)
    np.testing.assert_allclose(step_losses(run, "loss"), META["vocoder_pir_losses"], rtol=1e-5)
    assert [schedules.parse(spec)(step) for step in range(4)] == META["vocoder_pir_rates"]


@pytest.mark.parametrize("spec", sorted(META["schedules"]))
def test_paddles_cyclic_and_linear_schedulers_give_paddles_rates(spec):
    """OneCycleLR (cos and linear, three phases), CyclicLR (triangular, triangular2, exp_range), LinearLR and
    CosineAnnealingWarmRestarts (T_mult 1 and 2), alone or after LinearWarmup: Paddle's rate at every run."""
    schedule = schedules.parse(spec)
    np.testing.assert_allclose([schedule(step) for step in range(len(META["schedules"][spec]))],
                               META["schedules"][spec], rtol=1e-12, atol=1e-15)


def test_one_cycle_past_its_total_steps_and_a_bad_argument_are_one_line(week, tmp_path):
    """Paddle's OneCycleLR refuses a step past total_steps; gradc train refuses a run that would need one before it
    trains at all (8 steps of batches of 2 here), rather than after 5 steps."""
    run = gradc_cli("train", week / "vocoder_pir_train.json", "--params", week / "vocoder_pir_init.npz", "--data",
                    week / "vocoder_data.npz", "--batch-size", 2, "--fetch", "loss", "--lr-schedule",
                    "OneCycleLR(max_learning_rate=0.003, total_steps=4)")
    assert run.returncode == 1 and "step" not in run.stdout   # refused before the first of the 8 steps
    assert run.stderr.strip() == ("gradc: error: OneCycleLR(total_steps=4) gives 5 learning rates and step 8 needs one "
                                  "(Paddle's refuses it too): train at most 5 steps, or give a larger total_steps")
    with pytest.raises(gradc.GradcError, match="CyclicLR: mode must be triangular, triangular2 or exp_range"):
        schedules.parse("CyclicLR(base_learning_rate=0.1, max_learning_rate=1.0, step_size_up=2, mode='sine')")


def test_check_of_a_masked_frame_is_not_taken_for_a_wrong_gradient(week, tmp_path):
    """A SpecAugment time mask zeroes whole frames, so the projection's output there is its bias, 0 at the start: a
    LayerNorm of a constant row, where the loss curves so hard that central differences with step 1e-6 miss the
    right gradient (461.989 for 461.941; the miss falls 100-fold at each tenth of the step). gradc check said
    MISMATCH for linear_0.b_0 and exited 1; now a miss is retaken at steps 1e-7 and 1e-8 and agrees. A wrong
    gradient (1% off) still misses at every step."""
    data = np.load(week / "kws_data.npz")
    np.savez(tmp_path / "batch.npz", **{name: value[:4] for name, value in data.items()})
    run = gradc_cli("check", week / "kws.pb", "--feed", tmp_path / "batch.npz", "--startup", week / "kws_startup.pb",
                    "--loss", META["kws_loss"], "--wrt", "linear_0.b_0")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "linear_0.b_0     16/16" in run.stdout and "ok" in run.stdout

    def objective():   # sqrt(v^2 + 1e-11): a bend 3e-6 wide at 0, as sharp as such a LayerNorm's
        return float(np.sum(np.sqrt(value ** 2 + 1e-11)))

    value = np.array([np.sqrt(1e-11), 0.5])
    analytic = value / np.sqrt(value ** 2 + 1e-11)
    indices = np.arange(2)
    coarse = numeric_grad(objective, value, 1e-6, indices)
    assert abs(coarse[0] - analytic[0]) > 5e-3   # the step's error (0.0089), not the gradient's
    np.testing.assert_allclose(settled(objective, value, 1e-6, indices, analytic, coarse, 1e-5, 1e-7), analytic,
                               rtol=1e-5)
    wrong = analytic * 1.01
    kept = settled(objective, value, 1e-6, indices, wrong, coarse, 1e-5, 1e-7)
    assert np.all(np.abs(kept - wrong) > 1e-3)
