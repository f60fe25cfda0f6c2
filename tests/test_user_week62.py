"""An OCR engineer's week (docs/tools.md, 2026-12-05): a CRNN on synthetic 8 x 32 text lines of 3 to 5 glyphs (two
convolutions, the width the time axis, a bidirectional nn.GRU, a Linear to 8 glyphs + blank) under nn.CTCLoss with
variable label lengths, its greedy decode (argmax, ctc_align), edit distances, CER and sequence accuracy in the
program, trained by Adam(0.01) against Paddle 3.3.1's (tools/paddle_user_week62.py), legacy and PIR; checked against
central differences, exported, evaluated. Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from user_weeks import save_first, train_steps

WEEK = DATA / "user_week62"
META = json.loads((WEEK / "meta.json").read_text())
PIR_LOSSES = json.loads((WEEK / "pir.json").read_text())["losses"]
BATCH = 8
# the conv bias before batch norm (and the running mean it shifts): gradient 0 up to rounding, which Adam makes steps of
ROUNDING_ONLY = ("conv2d_1.b_0", "batch_norm2d_0.w_1")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, the CRNN's in crnn/ with its first batch (first.npz)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week62"), ("crnn",))
    save_first(out / "crnn", BATCH)
    return out


def _assert_weights(ours, paddle, atol):
    assert sorted(ours.files) == sorted(paddle.files)
    for name in set(paddle.files) - set(ROUNDING_ONLY):
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=atol, err_msg=name)


def test_crnn_trains_to_paddles_losses_and_weights(files):
    """gradc compile --optimizer adam and train from Paddle's initial weights: its 6 CTC losses (7.36 ... 2.41) to 1e-6
    and its weights to 2e-6 through warpctc and the bidirectional GRU, with the program's CER each step (no fault)."""
    crnn = files / "crnn"
    compiled = gradc_cli("compile", crnn / "forward.pb", "-o", crnn / "t.pb", "--optimizer", "adam", "--lr", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    run = train_steps(crnn / "t.pb", crnn / "t.startup.pb", crnn / "data.npz", BATCH, "--params", crnn / "init.npz",
                      "--fetch", META["loss"], "--fetch", META["cer"], "--save-params", crnn / "mine.npz")
    np.testing.assert_allclose(step_losses(run), META["losses"], rtol=1e-6)
    cers = [line["values"][META["cer"]] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"]
    np.testing.assert_allclose(cers, META["cers"], rtol=1e-6)
    _assert_weights(np.load(crnn / "mine.npz"), np.load(crnn / "trained.npz"), 2e-6)


def test_paddles_own_program_trains_to_its_losses(files):
    """Paddle's minimize() program from its startup and initial weights: its 6 losses (no fault)."""
    crnn = files / "crnn"
    run = train_steps(crnn / "train.pb", crnn / "startup.pb", crnn / "data.npz", BATCH, "--params", crnn / "init.npz")
    np.testing.assert_allclose(step_losses(run), META["losses"], rtol=1e-6)


def test_pir_training_program_trains_to_paddles_pir_losses(files):
    """The CRNN minimized in PIR static mode (pd_op.warpctc, pd_op.rnn, full_like's lengths) from its own startup:
    Paddle's 6 PIR losses, the legacy ones, to 1e-6, and its trained weights to 2e-6
    but the flat GRU buffer gru_0.w_0, which no op reads (no fault)."""
    run = train_steps(files / "crnn_pir_train.json", files / "crnn_pir_startup.json", files / "crnn" / "data.npz",
                      BATCH, "--save-params", files / "pir_mine.npz")
    np.testing.assert_allclose(step_losses(run), PIR_LOSSES, rtol=1e-6)
    np.testing.assert_allclose(PIR_LOSSES, META["losses"], rtol=1e-6)
    paddle, ours = np.load(files / "pir_trained.npz"), np.load(files / "pir_mine.npz")
    assert not paddle["gru_0.w_0"].any()   # Paddle's PIR scope keeps the flat buffer zero; gradc's rebuilds it
    for name in set(paddle.files) - {*ROUNDING_ONLY, "gru_0.w_0"}:
        np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=2e-6, err_msg=name)


def test_check_holds_no_metric_value_off_the_losses_path(files):
    """Fault: `gradc check` of the CRNN stopped at "feed var 'full_like_1.tmp_0', read first by block 0, op 41
    (equal), has shape [8, 1], but block 0 declares [-1, 5]": the sequence accuracy's zeros_like (stop_gradient) was
    held at its value and fed, checked against Paddle's declaration of edit_distance's output. Values off the losses'
    path are no longer held: every parameter agrees with central differences through warpctc and the GRU."""
    crnn = files / "crnn"
    run = gradc_cli("check", crnn / "forward.pb", "--params", crnn / "trained.npz", "--feed", crnn / "first.npz",
                    "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)
    assert report["problems"] == [] and len(report["vars"]) == 16


def _paddles_set_metrics():
    """Paddle's test-mode decode of the 20 test lines on the final weights: its sequence accuracy and CER (the program's
    own), and PaddleOCR's norm_edit_dis of its tokens (1 - the mean of each distance over the longer sequence)."""
    outputs = np.load(WEEK / "crnn" / "outputs.npz")
    label_len = np.load(WEEK / "crnn" / "test.npz")["label_len"]
    distance, read = outputs["distance"].reshape(-1), outputs["lengths"].reshape(-1)
    norm = 1 - np.mean(distance / np.maximum(np.maximum(read, label_len), 1))
    return {"seq_acc": float(outputs["seq_acc"]), "cer": float(outputs["cer"]), "norm_edit_dis": norm}


def _evaluated(*args):
    run = gradc_cli("evaluate", *args, "--json")
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


@pytest.mark.parametrize("batch", [7, 20])
def test_evaluate_scores_a_ctc_programs_greedy_decode(files, batch):
    """Fault: `gradc evaluate` of the CRNN reported its loss alone: a CTC recogniser's sequence accuracy and CER were
    to be had only by fetching the program's own metric vars by their generated names (tmp_2, mean_1.tmp_0), and not
    at all without a decode in the program. Now a program with one warpctc op is scored by its greedy decode over the
    whole set: Paddle's 0.5 and 0.148148 on the final weights, at any batch size (a last batch of 6 at 7)."""
    crnn = files / "crnn"
    results = _evaluated(crnn / "forward.pb", "--params", crnn / "final.npz", "--data", crnn / "test.npz",
                         "--batch-size", batch)
    expected = _paddles_set_metrics()
    assert results["seq_acc"] == expected["seq_acc"] == 0.5
    np.testing.assert_allclose([results["cer"], results["norm_edit_dis"]], [expected["cer"], expected["norm_edit_dis"]],
                               rtol=1e-7)
    np.testing.assert_allclose(results["loss"], float(np.load(crnn / "outputs.npz")["loss"]), rtol=1e-6)


def test_evaluate_scores_an_exported_recogniser_with_ctc(files):
    """Fault: Paddle's inference program of the recogniser (softmax probabilities [N, T, C], as PaddleOCR exports one)
    exported by gradc could not be scored: "the model's class scores need labels to score ... pick one with --label",
    and --label label: "does not label the rows of class scores". `--ctc label,label_len` decodes its output greedily
    against the padded labels: the training program's numbers; the refusal without it names the option."""
    crnn = files / "crnn"
    exported = gradc_cli("export", crnn / "infer.pb", "-o", files / "ocr", "--input", "image", "--fetch",
                         META["infer_probs"], "--params", crnn / "final.npz")
    assert exported.returncode == 0, exported.stderr
    results = _evaluated(files / "ocr.pdmodel", "--params", files / "ocr.pdiparams", "--data", crnn / "test.npz",
                         "--ctc", "label,label_len", "--batch-size", 8)
    expected = _paddles_set_metrics()
    assert "loss" not in results and results["seq_acc"] == expected["seq_acc"]
    np.testing.assert_allclose([results["cer"], results["norm_edit_dis"]], [expected["cer"], expected["norm_edit_dis"]],
                               rtol=1e-7)
    refused = gradc_cli("evaluate", files / "ocr.pdmodel", "--params", files / "ocr.pdiparams", "--data",
                        crnn / "test.npz")
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert refused.stderr.rstrip().endswith("--ctc label,label_len")


def test_ctc_option_usage(files):
    """--ctc with one name is a usage error (exit 2); labels the data does not hold are one line (exit 1); a blank
    given as a third element replaces the op's (blank 3, a glyph: nothing reads right); labels all empty leave the
    CER undefined, NaN and a note, as the other metrics with nothing to count."""
    crnn = files / "crnn"
    common = ("evaluate", crnn / "forward.pb", "--params", crnn / "final.npz", "--data", crnn / "test.npz")
    usage = gradc_cli(*common, "--ctc", "label")
    assert usage.returncode == 2 and "give LABEL,LENGTHS[,BLANK]" in usage.stderr
    missing = gradc_cli("evaluate", crnn / "infer.pb", "--params", crnn / "final.npz", "--data", crnn / "test.npz",
                        "--ctc", "label,lens")
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "no array 'lens'" in missing.stderr
    assert _evaluated(*common[1:], "--ctc", "label,label_len,3")["seq_acc"] == 0
    empty = dict(np.load(crnn / "test.npz"))
    empty["label_len"] = np.zeros_like(empty["label_len"])
    np.savez(files / "empty.npz", **empty)
    undefined = gradc_cli("evaluate", crnn / "forward.pb", "--params", crnn / "final.npz", "--data",
                          files / "empty.npz", "--json")
    assert undefined.returncode == 0 and json.loads(undefined.stdout)["cer"] == "nan"
    assert "every label 'label' is empty (its lengths 'label_len' are 0): the CER is undefined (nan)" in \
        undefined.stderr


def test_train_eval_early_stops_on_the_cer(files):
    """Fault (with the one above): `gradc train --eval --early-stop --monitor cer` was refused, "early stopping watches
    'cer', which is not fetched". Each epoch's evaluation now gives the decode's metrics, and the CER is watched
    lower-better."""
    crnn = files / "crnn"
    compiled = gradc_cli("compile", crnn / "forward.pb", "-o", crnn / "es.pb", "--optimizer", "adam", "--lr", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", crnn / "es.pb", "--startup", crnn / "es.startup.pb", "--params", crnn / "final.npz",
                    "--data", crnn / "data.npz", "--batch-size", BATCH, "--eval", crnn / "test.npz", "--epochs", 2,
                    "--early-stop", 1, "--monitor", "cer", "--json")
    assert run.returncode == 0, run.stderr
    epochs = [line for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert epochs and all({"seq_acc", "cer", "norm_edit_dis"} <= set(line["eval"]) for line in epochs)


def test_exported_recogniser_fine_tunes_with_a_ctc_loss_added(files):
    """Fault: an exported recogniser (Paddle's inference program, softmax probabilities [N, T, C]) could not be
    fine-tuned: `--add-loss` offered cross-entropy (against one class an example) and mse, and `gradc info` pointed to
    them. `--add-loss ctc --train-mode` appends nn.CTCLoss(blank 0, 'mean') through the softmax's logits, every step
    read, against new inputs label and label_len: from the exported weights with Adam anew, Paddle's training
    program's 6 losses from the same weights (0.5609 ... 0.3941) to 1e-6."""
    crnn = files / "crnn"
    exported = gradc_cli("export", crnn / "infer.pb", "-o", files / "ship", "--input", "image", "--fetch",
                         META["infer_probs"], "--params", crnn / "final.npz")
    assert exported.returncode == 0, exported.stderr
    info = gradc_cli("info", files / "ship.pdmodel")
    assert "--add-loss cross-entropy|mse|ctc" in info.stdout
    compiled = gradc_cli("compile", files / "ship.pdmodel", "-o", files / "ft.pb", "--add-loss", "ctc", "--train-mode",
                         "--optimizer", "adam", "--lr", 0.01)
    assert compiled.returncode == 0, compiled.stderr
    assert "against the inputs label (padded labels, int32) and label_len (their lengths, int64), blank 0" in \
        compiled.stdout
    run = train_steps(files / "ft.pb", files / "ft.startup.pb", crnn / "data.npz", BATCH, "--params",
                      files / "ship.pdiparams")
    np.testing.assert_allclose(step_losses(run), META["finetune_losses"], rtol=1e-6)


def test_add_loss_ctc_refusals(files):
    """A blank outside the classes, an output not of rank 3, and a --label of four parts: one line each (exit 1)."""
    crnn, probs = files / "crnn", ("--loss-of", META["infer_probs"])
    cases = {("--label", "label,label_len,9", *probs): "the blank 9 is not one of the 9 classes",
             ("--loss-of", "conv2d_0.tmp_1"): "is [-1, 8, 8, 32]: the CTC loss scores an output of scores a step",
             ("--label", "a,b,c,d", *probs): "with --add-loss ctc give LABEL[,LENGTHS[,BLANK]]"}
    for args, said in cases.items():
        run = gradc_cli("compile", crnn / "infer.pb", "-o", files / "no.pb", "--add-loss", "ctc", *args)
        assert run.returncode == 1 and run.stderr.count("\n") == 1 and said in run.stderr, run.stderr
    assert not (files / "no.pb").exists()


def test_a_ctc_label_that_is_the_blank_is_refused_before_the_first_step(files):
    """Fault: a line whose label holds the blank (an OCR dictionary's missing character mapped to 0) in the data's last
    batch stopped training at step 6, after 5 steps, naming no line ("Label holds 0: labels must be classes in [0, 9)
    other than blank=0"); a length past the labels' width alike. Both are refused before the first step, naming the
    example and the position, as a classifier's labels are."""
    crnn = files / "crnn"
    data = dict(np.load(crnn / "data.npz"))
    blank, long = dict(data), dict(data)
    blank["label"] = data["label"].copy()
    blank["label"][40, 1] = 0
    long["label_len"] = data["label_len"].copy()
    long["label_len"][44] = 6
    said = {"blank": "array 'label' holds the label 0 (example 41, position 2 of its 5), but block 0, op 26 (warpctc) "
                     "reads labels as classes 0 to 8 other than its blank 0",
            "long": "array 'label_len' holds the length 6 (example 45), but the padded labels 'label' (block 0, op 26 "
                    "(warpctc)'s) are 5 wide: a length is 0 to 5"}
    for name, arrays in (("blank", blank), ("long", long)):
        np.savez(files / f"{name}.npz", **arrays)
        run = train_steps(crnn / "train.pb", crnn / "startup.pb", files / f"{name}.npz", BATCH, "--params",
                          crnn / "init.npz")
        assert run.returncode == 1 and run.stdout == "" and said[name] in run.stderr, run.stderr
