"""A pose-estimation engineer's week (docs/tools.md): a SimpleBaseline (stride-2 Conv2D+BatchNorm+ReLU, a
Conv2DTranspose back up to 4 heatmaps 8x8, the visibility-weighted MSE), a small hourglass (F.interpolate nearest and
bilinear with align_corners both ways, skip additions, OHKM by paddle.topk) and a soft-argmax integral regression
(softmax over the heatmap's places, the expected (x, y), an L1 loss), trained by Adam under MultiStepDecay with weight
decay against Paddle 3.3.1's (tools/paddle_user_week54.py); checked against central differences, the flip
test-time-augmented SimpleBaseline run and exported, and its keypoints scored by mean pixel error and PCK. Each fault
found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from user_weeks import train_steps

WEEK = DATA / "user_week54"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("simplebaseline", "hourglass", "integral")
SCHEDULES = {"simplebaseline": ("--lr-schedule", "MultiStepDecay(learning_rate=0.01, milestones=[2, 4], gamma=0.1)"),
             "hourglass": ("--lr-schedule", "MultiStepDecay(learning_rate=0.005, milestones=[3], gamma=0.5)"),
             "integral": ()}
COMPILE = {"simplebaseline": ("--weight-decay", 1e-4), "hourglass": ("--lr", 0.005, "--weight-decay", 1e-4),
           "integral": ()}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model; the first batch and the held-out images alone."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week54"), MODELS)
    data, test = np.load(out / "data.npz"), np.load(out / "test.npz")
    np.savez(out / "first.npz", **{name: data[name][:4] for name in data.files})
    np.savez(out / "images.npz", image=test["image"])
    return out


def _host_scores(predicted: np.ndarray, truth: np.ndarray, visible: np.ndarray, thresholds=(1.0,)) -> dict:
    """The mean Euclidean error and PCK of the visible keypoints, computed here by numpy."""
    distances = np.linalg.norm(predicted.astype(np.float64) - truth, axis=-1)[visible.reshape(truth.shape[:2]) > 0]
    return {"mean_error": distances.mean(), **{f"pck@{t:g}": np.mean(distances <= t) for t in thresholds}}


@pytest.mark.parametrize("model", MODELS)
def test_each_pose_model_trains_to_paddles_losses(files, model):
    """gradc compile --optimizer adam (--weight-decay as Paddle's L2 weight_decay) and train from Paddle's initial
    weights, under the same MultiStepDecay: Paddle's 5 losses to 1e-6 (BatchNorm on the batch, Conv2DTranspose,
    interpolate, OHKM's topk, the soft-argmax) and its weights to 3e-7 (no fault), but the bias of the heatmaps the
    soft-argmax reads: a softmax over the places does not see it, its gradient is rounding alone (2e-8), which Adam
    turns into steps of either sign in both."""
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "t.pb", "--optimizer", "adam",
                         *COMPILE[model])
    assert compiled.returncode == 0, compiled.stderr
    run = train_steps(folder / "t.pb", folder / "t.startup.pb", files / "data.npz", 4, "--params",
                      folder / "init.npz", "--save-params", folder / "mine.npz", *SCHEDULES[model])
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    ours, paddle = np.load(folder / "mine.npz"), np.load(folder / "trained.npz")
    shift_invariant = {"conv2d_10.b_0"} if model == "integral" else set()   # the heatmaps' bias
    for name in set(paddle.files) - shift_invariant:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=3e-7, err_msg=name)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_training_programs_train_alike(files, model):
    """Paddle's minimize() programs from its startup, the schedule given to gradc train as the user's loop stepped
    it: Paddle's 5 losses (no fault)."""
    run = train_steps(files / model / "train.pb", files / model / "startup.pb", files / "data.npz", 4,
                      *SCHEDULES[model])
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


def test_paddles_pir_program_trains_alike(files):
    """The SimpleBaseline minimized in PIR mode: its 5 losses from its initial values (no fault)."""
    run = train_steps(files / "pir_train.json", files / "pir_startup.json", files / "data.npz", 4, "--params",
                      files / "pir_init.npz", "--fetch", "loss", *SCHEDULES["simplebaseline"])
    np.testing.assert_allclose(step_losses(run), json.loads((WEEK / "pir_losses.json").read_text()), rtol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_check_agrees_with_central_differences(files, model):
    """gradc check on the trained weights and the first batch: every parameter's gradient agrees with float64 central
    differences, through BatchNorm, the interpolations, topk and the soft-argmax (no fault)."""
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / "first.npz", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["problems"] == []


@pytest.mark.parametrize("model", MODELS)
def test_run_gives_paddles_outputs(files, model):
    """gradc run of the forward program (BatchNorm on the batch, as Paddle ran it) on the first batch: Paddle's
    heatmaps or soft-argmax coordinates to 2e-6 (no fault)."""
    folder = files / model
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / "trained.npz", "--feed", files / "first.npz",
                    "--fetch", f"{META[model]['output']}=out", "-o", folder / "out.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_allclose(np.load(folder / "out.npz")["out"], np.load(folder / "outputs.npz")["output"],
                               rtol=0, atol=2e-6)


@pytest.mark.parametrize("suffix", ("", ".json"))
def test_flip_test_exports_and_runs_to_paddles_heatmaps(files, suffix):
    """The flip-TTA program (paddle.flip, the left/right swap by gather, BatchNorm's running statistics, argmax):
    exported (.pdmodel and PIR) and run on the held-out images, Paddle's heatmaps to 5e-7 and its coordinates exactly
    (no fault)."""
    folder, names = files / "simplebaseline", META["flip_test"]
    stem = files / f"flip{suffix or '.pdmodel'}"
    exported = gradc_cli("export", folder / "infer.pb", "-o", stem, "--params", folder / "trained.npz", "--input",
                         "image", "--fetch", f"{names['heatmaps']}=heatmaps", "--fetch", f"{names['coords']}=coords")
    assert exported.returncode == 0, exported.stderr
    run = gradc_cli("run", stem, "--params", stem.with_suffix(".pdiparams"), "--feed", files / "images.npz", "-o",
                    files / "flip_out.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / "flip_out.npz"), np.load(folder / "flip_outputs.npz")
    np.testing.assert_allclose(ours["heatmaps"], paddle["heatmaps"], rtol=0, atol=5e-7)
    np.testing.assert_array_equal(ours["coords"], paddle["coords"])


@pytest.mark.parametrize("output, batch", [("coords", 8), ("coords", 3), ("heatmaps", 5)])
def test_evaluate_scores_keypoints_by_mean_error_and_pck(files, output, batch):
    """gradc evaluate of a pose model reported its loss alone, and of the exported flip-TTA model 'no loss picked by
    itself'. --keypoints PRED,TRUE,VISIBLE gives the mean pixel error and PCK at each --pck over the visible
    keypoints of the whole set, numpy's numbers of Paddle's own coordinates (the program's argmax, or the heatmaps'
    taken on the host), at any batch size."""
    folder, names = files / "simplebaseline", META["flip_test"]
    run = gradc_cli("evaluate", folder / "infer.pb", "--params", folder / "trained.npz", "--data",
                    files / "test.npz", "--keypoints", f"{names[output]},keypoints,target_weight", "--pck", 1,
                    "--pck", 2, "--batch-size", batch, "--json")
    assert run.returncode == 0, run.stderr
    test = np.load(files / "test.npz")
    expected = _host_scores(np.load(folder / "flip_outputs.npz")["coords"], test["keypoints"], test["target_weight"],
                            (1.0, 2.0))
    result = json.loads(run.stdout)
    for key, value in expected.items():
        assert result[key] == pytest.approx(value, abs=1e-12), key


def test_evaluate_scores_the_soft_argmax_beside_its_loss(files):
    """The integral model's loss and its soft-argmax coordinates' error, every keypoint counted without VISIBLE."""
    folder = files / "integral"
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    files / "first.npz", "--keypoints", f"{META['integral']['output']},keypoints", "--json")
    assert run.returncode == 0, run.stderr
    data = np.load(files / "first.npz")
    expected = _host_scores(np.load(folder / "outputs.npz")["output"], data["keypoints"], np.ones((4, 4)))
    result = json.loads(run.stdout)
    assert result["mean_error"] == pytest.approx(expected["mean_error"], rel=1e-6)
    assert result["pck@1"] == expected["pck@1"] and "loss" in result


def test_heatmaps_argmax_takes_the_first_highest_place():
    """A heatmap's tie goes to its first place in row-major order, as paddle.argmax's; (column, row) is (x, y)."""
    from gradc.training.keypoints import KeypointTally

    tally = KeypointTally(("h", "k"), [0.5])
    heatmaps = np.zeros((1, 2, 3, 4))
    heatmaps[0, 0, 1, 2] = heatmaps[0, 0, 2, 0] = 1.0   # first at row 1, column 2
    heatmaps[0, 1, 2, 3] = 1.0
    tally.add(heatmaps, {"k": np.array([[[2.0, 1.0], [3.0, 0.0]]])}, "data")
    assert tally.results() == {"mean_error": 1.0, "pck@0.5": 0.5}


def test_keypoints_of_the_wrong_output_or_data_are_refused(files):
    """--keypoints naming an output that is no keypoint's (the swap's indices), heatmaps of another count (the
    upsampling's 8 channels) or an array the data lacks: one line each."""
    folder = files / "simplebaseline"
    for spec, said in (("assign_0.tmp_0,keypoints", "'assign_0.tmp_0' [4] is neither an (x, y) a keypoint"),
                       ("conv2d_transpose_0.tmp_0,keypoints", "[8, 8, 2] and the truth 'keypoints' [8, 4, 2] differ"),
                       (f"{META['flip_test']['coords']},joints", "the data has no array 'joints'")):
        run = gradc_cli("evaluate", folder / "infer.pb", "--params", folder / "trained.npz", "--data",
                        files / "test.npz", "--keypoints", spec)
        assert run.returncode == 1 and said in run.stderr and run.stderr.count("\n") == 1, run.stderr


def test_an_exported_pose_model_without_keypoints_is_told_of_them(files, tmp_path):
    """Evaluating the exported flip-TTA model on the held-out set offered --loss, --fetch and --label only; now
    --keypoints, with its output and the data's arrays it does not read."""
    folder, names = files / "simplebaseline", META["flip_test"]
    assert gradc_cli("export", folder / "infer.pb", "-o", tmp_path / "m", "--params", folder / "trained.npz",
                     "--input", "image", "--fetch", f"{names['heatmaps']}=heatmaps", "--fetch",
                     f"{names['coords']}=coords").returncode == 0
    run = gradc_cli("evaluate", tmp_path / "m.pdmodel", "--params", tmp_path / "m.pdiparams", "--data",
                    files / "test.npz")
    assert run.returncode == 1 and "(--keypoints coords,TRUE[,VISIBLE], of the arrays it does not read: keypoints, " \
        "target, target_weight)" in run.stderr, run.stderr


@pytest.mark.parametrize("monitor, best", [("pck@2", max), ("mean_error", min)])
def test_train_watches_pck_or_the_mean_error(files, tmp_path, monitor, best):
    """train --eval took no keypoint metric: each epoch's loss alone. --keypoints and --pck report each epoch's mean
    error and PCK of the held-out set; --early-stop --monitor keeps the epoch of the highest PCK or the lowest mean
    error, whose numbers gradc evaluate gives again."""
    folder = files / "simplebaseline"
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "t.pb", "--optimizer", "adam",
                     *COMPILE["simplebaseline"]).returncode == 0
    spec = f"{META['simplebaseline']['output']},keypoints,target_weight"
    run = gradc_cli("train", tmp_path / "t.pb", "--startup", tmp_path / "t.startup.pb", "--params", folder /
                    "init.npz", "--data", files / "data.npz", "--batch-size", 4, "--epochs", 4, "--eval",
                    files / "test.npz", "--keypoints", spec, "--pck", 2, "--early-stop", 4, "--monitor", monitor,
                    "--save-params", tmp_path / "kept.npz", "--json", *SCHEDULES["simplebaseline"])
    assert run.returncode == 0, run.stderr
    epochs = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert all({"mean_error", "pck@2"} <= set(epoch) for epoch in epochs)
    again = gradc_cli("evaluate", folder / "forward.pb", "--params", tmp_path / "kept.npz", "--data",
                      files / "test.npz", "--keypoints", spec, "--pck", 2, "--json")
    kept = json.loads(again.stdout)
    assert kept[monitor] == pytest.approx(best(epoch[monitor] for epoch in epochs), abs=1e-12)


def test_keypoints_on_train_need_eval(files):
    folder = files / "simplebaseline"
    run = gradc_cli("train", folder / "train.pb", "--startup", folder / "startup.pb", "--data", files / "data.npz",
                    "--keypoints", "a,b")
    assert run.returncode == 2 and "--keypoints: only with --eval" in run.stderr, run.stderr


@pytest.mark.parametrize("command, extra", [("evaluate", ()), ("train", ("--eval", "test.npz"))])
def test_a_pck_without_keypoints_is_a_usage_error(files, command, extra):
    """--pck without --keypoints was left unused, by evaluate and train --eval alike."""
    folder = files / "simplebaseline"
    startup = ("--startup", folder / "startup.pb") if command == "train" else ()
    run = gradc_cli(command, folder / "train.pb", *startup, "--data", files / "data.npz", "--pck", 2,
                    *[files / item if item == "test.npz" else item for item in extra])
    said = "--pck: only with --keypoints"
    assert run.returncode == 2 and said in run.stderr and run.stderr.count("\n") == 1, run.stderr


def test_an_eval_set_with_no_visible_keypoint_leaves_the_training_and_its_weights(files, tmp_path):
    """Every target_weight 0 in the eval set: train --eval --keypoints stopped after the first epoch ('no keypoint is
    visible'), its trained weights not saved. The metrics are undefined (nan), why said once, and the run saves;
    evaluate says no keypoint was visible."""
    folder = files / "simplebaseline"
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "t.pb", "--optimizer", "adam",
                     *COMPILE["simplebaseline"]).returncode == 0
    test = dict(np.load(files / "test.npz"))
    test["target_weight"] = np.zeros_like(test["target_weight"])
    np.savez(tmp_path / "hidden.npz", **test)
    spec = f"{META['simplebaseline']['output']},keypoints,target_weight"
    run = gradc_cli("train", tmp_path / "t.pb", "--startup", tmp_path / "t.startup.pb", "--params", folder /
                    "init.npz", "--data", files / "data.npz", "--batch-size", 4, "--epochs", 2, "--eval",
                    tmp_path / "hidden.npz", "--keypoints", spec, "--pck", 2, "--save-params", tmp_path / "kept.npz",
                    "--json", *SCHEDULES["simplebaseline"])
    assert run.returncode == 0 and (tmp_path / "kept.npz").exists(), run.stderr
    keypoints = test["target_weight"].size
    said = f"none of its {keypoints} keypoints is visible (> 0 in 'target_weight'): mean_error, pck@2 undefined (nan)"
    assert run.stderr.count(said) == 1, run.stderr
    epochs = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert len(epochs) == 2 and all(epoch["mean_error"] == epoch["pck@2"] == "nan" for epoch in epochs)
    again = gradc_cli("evaluate", tmp_path / "t.pb", "--params", tmp_path / "kept.npz", "--data",
                      tmp_path / "hidden.npz", "--keypoints", spec, "--pck", 2)
    assert again.returncode == 0 and said in again.stderr and "mean_error: nan" in again.stdout, again.stderr
