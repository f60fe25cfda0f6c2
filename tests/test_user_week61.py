"""An object-detection engineer's week (docs/tools.md, 2026-12-05): a small single-stage detector on synthetic 32x32
images of 1 to 3 coloured boxes, built by Paddle 3.3.1's layers (three conv + batch norm stages, a YOLO head trained
by yolo_loss and a centre head by sigmoid_focal_loss), trained by Momentum and Adam against Paddle's losses, its
post-processing (yolo_box, multiclass_nms3) exported and run against Paddle's Predictor, and scored by the mAP at IoU
0.5 (tools/paddle_user_week61.py). Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from user_weeks import train_steps

WEEK = DATA / "user_week61"
META = json.loads((WEEK / "meta.json").read_text())
BATCH = 8
ROWS, COUNTS = META["rows"], META["counts"]
TRAIN_KEYS = ("img", "gt_box", "gt_label", "cls_target")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked; the first and third training batches (batch3.npz's image 7 has two boxes in one
    cell with the same best anchor) and that image alone; the trained detector exported (det.pdmodel)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week61"))
    train = np.load(out / "train.npz")
    for name, start, stop in (("batch1", 0, BATCH), ("batch3", 2 * BATCH, 3 * BATCH), ("image7", 23, 24)):
        np.savez(out / f"{name}.npz", **{key: train[key][start:stop] for key in TRAIN_KEYS})
    exported = gradc_cli("export", out / "inference.pb", "--params", out / "trained.npz", "--input", "img", "--input",
                         "im_size", "--fetch", ROWS, "--fetch", COUNTS, "-o", out / "det")
    assert exported.returncode == 0, exported.stderr
    return out


def _evaluate(files, *options):
    return gradc_cli("evaluate", files / "det.pdmodel", "--params", files / "det.pdiparams", "--data",
                     files / "test.npz", *options)


def test_momentum_trains_to_paddles_losses_until_its_yolo_gradient_goes_wrong(files):
    """gradc compile --optimizer momentum, and Paddle's own minimize program (legacy and PIR), from Paddle's seeded
    startup: Paddle's first 3 losses to 1e-6; the 4th differs in all three alike (24.1085 against Paddle's 24.0817),
    as Paddle's third step took its wrong yolov3_loss gradient (below; no fault of gradc)."""
    compiled = gradc_cli("compile", files / "forward.pb", "-o", files / "mom.pb", "--optimizer", "momentum", "--lr",
                         0.01, "--momentum", 0.9)
    assert compiled.returncode == 0, compiled.stderr
    runs = [train_steps(files / "mom.pb", files / "startup.pb", files / "train.npz", BATCH, "--startup",
                        files / "mom.startup.pb", "--steps", 4),
            train_steps(files / "train.pb", files / "startup.pb", files / "train.npz", BATCH, "--steps", 4),
            train_steps(files / "pir_train.json", files / "pir_startup.json", files / "train.npz", BATCH, "--steps", 4)]
    ours = [step_losses(run) for run in runs]
    for losses in ours:
        np.testing.assert_allclose(losses[:3], META["losses"][:3], rtol=1e-6)
        np.testing.assert_allclose(losses[3], ours[0][3], rtol=1e-6)
        assert abs(losses[3] - META["losses"][3]) > 0.02
    assert json.loads((WEEK / "pir_meta.json").read_text())["losses"] == META["losses"]


def test_first_step_gradients_are_paddles(files):
    """gradc's backward of the detector from Paddle's initial weights on the first batch: Paddle's 13 parameter
    gradients to 1e-5 relative, or 1e-6 of each one's largest element (an element summed to near zero keeps the
    rounding of its terms: 1.4e-6 of 3.9 where numpy and OpenBLAS run their AVX2 kernels) (no fault)."""
    program = gradc.load(files / "forward.pb")
    gradc.append_backward(program, loss=META["loss"])
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(gradc.load(files / "startup.pb"), scope=scope)
    paddle = np.load(files / "grads.npz")
    ours = executor.run(program, feed=files / "batch1.npz", fetch_list=paddle.files, scope=scope)
    assert len(paddle.files) == 13
    for name, value in zip(paddle.files, ours):
        np.testing.assert_allclose(value, paddle[name], rtol=1e-5, atol=1e-6 * np.abs(paddle[name]).max(), err_msg=name)


def test_two_boxes_on_one_anchor_gradc_is_central_differences_where_paddle_is_not(files):
    """Paddle's yolov3_loss_grad with two true boxes in one cell whose best anchor is the same (image 7 of the third
    batch: a 12x6 and a 9x9 box, both nearest the 10x10 anchor, in cell (1, 2)): gradc's gradient of the head's output
    is Paddle's everywhere but on that anchor's 8 channels there, where it is 0.149 against Paddle's 0.037; gradc
    check of that image agrees with float64 central differences at each of the 384 elements."""
    program = gradc.load(files / "forward.pb")
    gradc.append_backward(program, loss=META["loss"])
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(gradc.load(files / "startup.pb"), scope=scope)
    grad = META["yolo_out"] + "@GRAD"
    (ours,) = executor.run(program, feed=files / "batch3.npz", fetch_list=[grad], scope=scope)
    paddle = np.load(files / "collision.npz")["yolo_out@GRAD"]
    wrong = np.argwhere(~np.isclose(ours, paddle, rtol=1e-4, atol=1e-6))
    assert {(image, channel // 8, row, column) for image, channel, row, column in wrong} == {(7, 1, 2, 1)}
    checked = gradc_cli("check", files / "forward.pb", "--startup", files / "startup.pb", "--feed",
                        files / "image7.npz", "--wrt", META["yolo_out"], "--max-elements", 384, "--json")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert json.loads(checked.stdout)["problems"] == []


def test_the_export_runs_to_paddles_predictor(files):
    """gradc export of the inference program (yolo_box, multiclass_nms3) with the trained weights, legacy and PIR:
    gradc run gives the Predictor's 158 rows to 2e-5 and its counts of each of the 24 images (no fault)."""
    paddle = np.load(files / "predictor.npz")
    pir = gradc_cli("export", files / "inference.pb", "--params", files / "trained.npz", "--input", "img", "--input",
                    "im_size", "--fetch", f"{ROWS}=dets", "--fetch", f"{COUNTS}=counts", "-o", files / "det.json")
    assert pir.returncode == 0, pir.stderr
    for model, params, rows, counts in (("det.pdmodel", "det.pdiparams", ROWS, COUNTS),
                                        ("det.json", "det.pdiparams", "dets", "counts")):
        run = gradc_cli("run", files / model, "--params", files / params, "--feed", files / "test.npz", "--out",
                        files / "out.npz")
        assert run.returncode == 0, run.stderr
        out = np.load(files / "out.npz")
        assert out[rows].shape == paddle["rows"].shape == (158, 6)
        np.testing.assert_allclose(out[rows], paddle["rows"], rtol=0, atol=2e-5)
        np.testing.assert_array_equal(out[counts], paddle["counts"])


@pytest.mark.parametrize("batch_size", [5, 24])
def test_evaluate_gives_the_detectors_map(files, batch_size):
    """FAULT: gradc evaluate had no detection metric: no mAP of an NMS op's rows against the data's boxes (it asked
    for class labels). `--detections ROWS,BOXES,LABELS` gives VOC's mAP over the whole set: 0.365097 at IoU 0.5, that
    of Paddle's Predictor's boxes (computed by the fixture script), each class's AP, at any batch size; --iou 0.75
    adds map@0.75."""
    run = _evaluate(files, "--detections", f"{ROWS},boxes,labels", "--iou", 0.5, "--iou", 0.75, "--batch-size",
                    batch_size, "--json")
    assert run.returncode == 0, run.stderr
    results = json.loads(run.stdout)
    assert results["examples"] == 24
    np.testing.assert_allclose(results["map@0.5"], META["map50"]["map"], rtol=1e-12)
    np.testing.assert_allclose(results["class_ap@0.5"], META["map50"]["class_ap"], rtol=1e-12)
    assert 0 < results["map@0.75"] < results["map@0.5"]
    python = gradc.evaluate(files / "det.pdmodel", files / "test.npz", files / "det.pdiparams",
                            detections=f"{ROWS},boxes,labels")
    assert python["map@0.5"] == results["map@0.5"]


def test_nms_rows_are_not_class_scores(files):
    """FAULT: evaluate of the exported detector took its NMS rows [M, 6] for the scores of 6 classes: "the model's
    class scores (multiclass_nms3_0.tmp_0) need labels", and with --label, "scores 6 classes: a label is 0 to 5".
    Now the error offers --detections with the rows and the arrays the model does not read."""
    bare = _evaluate(files)
    assert bare.returncode == 1
    assert "class scores (" not in bare.stderr
    assert f"--detections {ROWS},BOXES,LABELS, of the arrays it does not read: boxes," in bare.stderr
    labelled = _evaluate(files, "--label", "labels")
    assert labelled.returncode == 1 and "6 classes" not in labelled.stderr


def test_boxes_not_in_the_rows_coordinates_are_named(files):
    """yolo_loss's true boxes (normalised centre and size) are not the rows' pixel corners: the mAP of them is 0, and
    two warnings say why (49 boxes without area as corners; boxes within [0, 1] against rows reaching 31)."""
    run = _evaluate(files, "--detections", f"{ROWS},gt_box,gt_label")
    assert run.returncode == 0, run.stderr
    assert "map@0.5: 0\n" in run.stdout
    assert "49 of a class >= 0 have x2 <= x1 or y2 <= y1" in run.stderr
    assert "all lie within [0, 1] and the detections reach 31" in run.stderr


@pytest.mark.parametrize("options, code, message", [
    (("--detections", "scores,boxes,labels"), 1, "'scores' is not computed by the forward part"),
    (("--detections", f"{ROWS},boxes"), 2, "give ROWS,BOXES,LABELS"),
    (("--detections", f"{ROWS},bboxes,labels"), 1, "the data has no array 'bboxes'"),
    (("--iou", 0.5), 2, "--iou: only with --detections"),
    (("--detections", f"{ROWS},boxes,labels", "--iou", 0), 2, "give IoU thresholds above 0 and up to 1"),
])
def test_detection_option_errors(files, options, code, message):
    """Each mistake with --detections is one line (exit 1), or a usage error (exit 2)."""
    run = _evaluate(files, *options)
    assert run.returncode == code and message in run.stderr, run.stderr
    assert "Traceback" not in run.stderr


def test_rows_not_from_a_counting_nms_are_refused(files):
    """--detections of a var that is not an NMS op's rows (yolo_box's boxes in the inference program) is one line
    naming the op that writes it."""
    run = gradc_cli("evaluate", files / "inference.pb", "--params", files / "trained.npz", "--data",
                    files / "test.npz", "--detections", "yolo_box_0.tmp_0,boxes,labels")
    assert run.returncode == 1
    assert "'yolo_box_0.tmp_0' is written by yolo_box, not by an NMS op" in run.stderr


def test_train_evaluates_the_map_after_each_epoch(files):
    """FAULT (as evaluate's): gradc train --eval had no mAP either. Over Paddle's program of the losses and the
    post-processing together (detector.pb), `--eval test.npz --detections ...` reports map@0.5 after each epoch,
    --monitor map@0.5 keeps the best epoch's weights, whose map@0.5 is what gradc evaluate gives for the saved
    weights; --iou without --detections is a usage error."""
    compiled = gradc_cli("compile", files / "detector.pb", "-o", files / "d.pb", "--optimizer", "adam", "--lr", 0.005)
    assert compiled.returncode == 0, compiled.stderr
    spec = f"{ROWS},boxes,labels"
    run = train_steps(files / "d.pb", files / "startup.pb", files / "train.npz", BATCH, "--startup",
                      files / "d.startup.pb", "--epochs", 3, "--eval", files / "test.npz", "--detections", spec,
                      "--early-stop", 3, "--monitor", "map@0.5", "--save-params", files / "d.npz")
    assert run.returncode == 0, run.stderr
    epochs = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert len(epochs) == 3 and all(0 < epoch["map@0.5"] < 1 for epoch in epochs)
    best = max(range(3), key=lambda epoch: epochs[epoch]["map@0.5"])
    evaluated = gradc_cli("evaluate", files / "detector.pb", "--params", files / "d.npz", "--data",
                          files / "test.npz", "--detections", spec, "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)["map@0.5"] == epochs[best]["map@0.5"]
    unused = train_steps(files / "d.pb", files / "startup.pb", files / "train.npz", BATCH, "--startup",
                         files / "d.startup.pb", "--eval", files / "test.npz", "--iou", 0.5)
    assert unused.returncode == 2 and "--iou: only with --detections" in unused.stderr


def test_a_loss_added_to_nms_rows_is_refused(files):
    """FAULT: `gradc compile det.pdmodel --add-loss cross-entropy --loss-of <the NMS rows>` wrote a program scoring
    the rows [M, 6] as 6 classes' logits, exit 0, with only a warning that no parameter gets a gradient; and gradc
    info offered that --add-loss for the detector. Now the loss is refused in one line naming the op without a
    gradient, and info offers --detections."""
    for kind in ("cross-entropy", "mse"):
        run = gradc_cli("compile", files / "det.pdmodel", "-o", files / "ft.pb", "--add-loss", kind, "--loss-of", ROWS)
        assert run.returncode == 1
        assert (f"'{ROWS}' is written by multiclass_nms3 (block 0, op 16), which has no gradient: a loss of it trains "
                f"nothing") in run.stderr
        assert not (files / "ft.pb").exists()
    head = gradc_cli("compile", files / "det.pdmodel", "-o", files / "ft.pb", "--add-loss", "mse", "--loss-of",
                     META["yolo_out"])
    assert head.returncode == 0, head.stderr
    info = gradc_cli("info", files / "det.pdmodel")
    assert f"of a detector: run it, or score its kept boxes (gradc evaluate --detections {ROWS},BOXES" in info.stdout
    assert "--add-loss" not in info.stdout


def test_a_set_without_true_boxes_has_an_undefined_map(files):
    """A set whose every true box is padding has no AP to average: map@0.5 is nan with a note saying why, as the other
    metrics with nothing to count (after the rebase onto main's NaN convention; it was an error)."""
    test = dict(np.load(files / "test.npz"))
    np.savez(files / "unlabelled.npz", **{**test, "labels": np.full_like(test["labels"], -1)})
    run = gradc_cli("evaluate", files / "det.pdmodel", "--params", files / "det.pdiparams", "--data",
                    files / "unlabelled.npz", "--detections", f"{ROWS},boxes,labels", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["map@0.5"] == "nan"
    assert "--detections: no true box in 'boxes' (every class 'labels' below 0 or box without area): map@0.5 " \
           "undefined (nan)" in run.stderr
