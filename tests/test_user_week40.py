"""An OCR engineer's week (docs/tools.md): text-line recognisers (a CRNN with a bidirectional LSTM, one with a
bidirectional GRU and blank 10, a transformer encoder) under CTC, decoded greedily in the program (argmax, ctc_align)
and scored by edit distance (a CER), built with Paddle 3.3.1's layers (tools/paddle_user_week40.py) and trained step
by step against Paddle's; warpctc's loss and gradient in float64 at its corners against Paddle's and central
differences; a PIR export run by gradc. Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked
from user_weeks import assert_weights_like_paddles, save_first, train_steps

WEEK = DATA / "user_week40"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("crnn_lstm", "crnn_gru", "tfm")
TRAINING = {"crnn_lstm": ("--optimizer", "adam", "--clip-global-norm", 1.0),
            "crnn_gru": ("--optimizer", "adam", "--clip-norm", 1.0),
            "tfm": ("--optimizer", "adamw", "--lr", 0.003, "--weight-decay", 0.01)}
SCHEDULES = {"crnn_lstm": ("--lr-schedule", "PiecewiseDecay(boundaries=[3], values=[0.01, 0.003])"),
             "crnn_gru": ("--lr-schedule", "CosineAnnealingDecay(learning_rate=0.01, T_max=6)"), "tfm": ()}
CTC_CASES = ("blank0", "blank0_norm", "blank4", "blank4_norm")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model; the first batch of each model's lines; warpctc's feeds."""
    out = tmp_path_factory.mktemp("week40")
    unpacked(WEEK, out, MODELS)
    for model in MODELS:
        save_first(out / model, 8)
    ctc = np.load(out / "ctc64.npz")
    for case in CTC_CASES:
        np.savez(out / f"ctc64_{case}_feed.npz", label=ctc[f"{case}_label"],
                 **{name: ctc[name] for name in ("logits", "input_len", "label_len", "w")})
    np.savez(out / "pir_feed.npz", image=np.load(out / "predictor_pir.npz")["image"])
    return out


def _steps(run) -> list:
    assert run.returncode == 0, run.stderr
    return [line["values"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "step"]


@pytest.mark.parametrize("model", MODELS)
def test_each_recogniser_trains_to_paddles_losses_cers_and_weights(files, model):
    """gradc compile (the loss picked by itself: before, the CER, see below) with Paddle's optimizer, schedule and
    clipping, and train from its initial weights: 6 steps of 8 lines give Paddle's CTC losses to 1e-6 relative
    (1.1e-7 measured), the CER the program computes by argmax, ctc_align and edit_distance exactly, and Paddle's
    weights to 1e-6 (4.8e-7). Left out: a conv bias before batch norm, with the running statistics it shifts, and the
    attention's key bias (the transformer's linear_3.b_0; a softmax over keys is blind to it): their gradient is 0
    up to rounding, which Adam scales to a full step of either sign, in Paddle as in gradc. The epoch's CER is the
    set's, as evaluate's: the summed edit distances over the summed label lengths (Paddle's step CERs times their
    batches' lengths); before, the mean of the step CERs (1.00102 for the CRNN-GRU, whose set's is 1)."""
    folder, names = files / model, META[model]
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "train_gradc.pb", *TRAINING[model],
                         *SCHEDULES[model])
    assert compiled.returncode == 0, compiled.stderr
    run = train_steps(folder / "train_gradc.pb", folder / "train_gradc.startup.pb", folder / "data.npz", 8, "--params",
                      folder / "init.npz", "--fetch", names["loss"], "--fetch", names["cer"], "--save-params",
                      folder / "trained_gradc.npz", *SCHEDULES[model])
    steps = _steps(run)
    np.testing.assert_allclose([s[names["loss"]] for s in steps], names["losses"], rtol=1e-6)
    assert [s[names["cer"]] for s in steps] == names["cers"]
    lengths = np.load(folder / "data.npz")["label_len"].reshape(len(steps), -1).sum(axis=1)
    distances = np.round(np.array(names["cers"]) * lengths)
    (epoch,) = [line["train"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    np.testing.assert_allclose(epoch[names["cer"]], distances.sum() / lengths.sum(), rtol=1e-12)
    assert abs(np.mean(names["cers"]) - distances.sum() / lengths.sum()) > 1e-4   # what the mean of steps gave
    noise = [name for name in np.load(folder / "trained.npz").files
             if name.startswith("conv2d_") and name.endswith(".b_0")
             or name.startswith("batch_norm2d_") and name.endswith(("w_1", "w_2")) or name == "linear_3.b_0"]
    assert_weights_like_paddles(folder, 1e-6, noise)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_training_programs_train_in_gradc(files, model):
    """Paddle's minimize() programs (warpctc_grad, the rnn op's or the attention's gradients, clipping, AdamW's
    decay) from its startup and initial weights give its 6 losses to 1e-6 relative (no fault)."""
    folder = files / model
    run = train_steps(folder / "train.pb", folder / "startup.pb", folder / "data.npz", 8, "--params",
                      folder / "init.npz", *SCHEDULES[model])
    np.testing.assert_allclose([s[META[model]["loss"]] for s in _steps(run)], META[model]["losses"], rtol=1e-6)


def test_the_loss_picked_is_the_ctc_loss_not_the_cer_written_last(files):
    """The program ends with the CER (sum of edit distances / sum of label lengths), a float scalar no parameter
    reaches through ops with a gradient (argmax, ctc_align and edit_distance have none). gradc picked it as the loss:
    `compile --optimizer` failed ("no parameter has a gradient: run the backward pass first"), `compile` alone wrote a
    program of 0 parameter gradients, `check` said "0 var(s) checked: compiled gradients agree" and `info` named it.
    Now each picks the CTC loss, with a note saying why."""
    folder = files / "crnn_lstm"
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "picked.pb", "--optimizer", "adam")
    assert compiled.returncode == 0, compiled.stderr
    assert "the loss is mean_0.tmp_0" in compiled.stderr and "tmp_2, which the last op (elementwise_div)" in \
        compiled.stderr
    assert "22 parameter gradients" in compiled.stdout
    info = gradc_cli("info", folder / "forward.pb", "--json")
    assert json.loads(info.stdout)["loss"] == "mean_0.tmp_0"
    check = gradc_cli("check", folder / "forward.pb", "--params", folder / "trained.npz", "--feed",
                      folder / "first.npz", "--directions", 1, "--json")
    assert check.returncode == 0, check.stdout + check.stderr
    result = json.loads(check.stdout)
    assert result["loss"] == "mean_0.tmp_0" and len(result["vars"]) == 22 and result["problems"] == []


def test_a_loss_no_parameter_reaches_is_not_checked_as_agreeing(files):
    """`check --loss` of the CER checked nothing and said "0 var(s) checked: compiled gradients agree" (exit 0), after
    a warning of 22 clauses, each parameter's whole path to the CER and "no op on its path to the loss has a gradient"
    (most of them have one). Now the check is an error, one line that names, in one clause, the op that stops them."""
    folder = files / "crnn_lstm"
    check = gradc_cli("check", folder / "forward.pb", "--params", folder / "trained.npz", "--feed",
                      folder / "first.npz", "--directions", 1, "--loss", "tmp_2")
    assert check.returncode == 1
    assert check.stderr.splitlines() == [
        "gradc: error: nothing to check: no parameter gets a gradient from tmp_2; 22 (batch_norm2d_0.b_0, "
        "batch_norm2d_0.w_0, batch_norm2d_1.b_0, batch_norm2d_1.w_0, batch_norm2d_2.b_0, batch_norm2d_2.w_0, "
        "conv2d_0.b_0, conv2d_0.w_0, conv2d_1.b_0, conv2d_1.w_0, conv2d_2.b_0, conv2d_2.w_0, ... 10 more): its path to "
        "the loss goes through arg_max (writing arg_max_0.tmp_0), which passes no gradient to its inputs (name the "
        "loss with --loss, the vars to check with --wrt)"]


@pytest.mark.parametrize("model, weights", [("crnn_lstm", "init"), ("crnn_lstm", "trained"),
                                            ("crnn_gru", "init"), ("crnn_gru", "trained")])
def test_run_decodes_and_scores_as_paddle(files, model, weights):
    """gradc run of the forward program: the logits to 1e-6 (6.6e-7 measured), and the greedy decode (argmax,
    ctc_align merging repeats and dropping blank 0 or 10 within each input length, padded with 0), its lengths, the
    edit distances to the padded labels and the CER exactly Paddle's (no fault)."""
    folder, names = files / model, META[model]
    outputs = ("logits", "tokens", "lengths", "distance", "cer", "loss")
    fetches = [arg for key in outputs for arg in ("--fetch", f"{names[key]}={key}")]
    run = gradc_cli("run", folder / "forward.pb", "--params", folder / f"{weights}.npz", "--feed",
                    folder / "first.npz", *fetches, "-o", folder / f"run_{weights}.npz")
    assert run.returncode == 0, run.stderr
    ours = np.load(folder / f"run_{weights}.npz")
    paddle = np.load(folder / ("outputs_init.npz" if weights == "init" else "outputs.npz"))
    np.testing.assert_allclose(ours["logits"], paddle["logits"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours["loss"], paddle["loss"], rtol=2e-7)
    for key in ("tokens", "lengths", "distance", "cer"):
        assert ours[key].dtype == paddle[key].dtype and np.array_equal(ours[key], paddle[key]), key
    if weights == "init":   # random weights decode to something: the comparison is not of empty strings
        assert paddle["lengths"].sum() > 0


@pytest.mark.parametrize("model", MODELS)
def test_evaluate_gives_the_sets_cer_not_a_mean_of_batch_cers(files, model):
    """gradc evaluate --fetch of the CER averaged each batch's CER (weighted by its lines): 0.875735 at 8 lines a
    batch for the CRNN-LSTM, 0.875374 at 5, where Paddle's test program over the 48 lines gives 0.873626 (a batch of
    short labels weighed as one of long ones). A ratio of two sums over the batch now divides the sums over the set:
    Paddle's CER of the set at any batch size (the CTC mean loss is a mean over lines already: Paddle's to 1e-6)."""
    folder, names = files / model, META[model]
    for batch in (8, 5):
        run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "init.npz", "--data",
                        folder / "data.npz", "--batch-size", batch, "--fetch", names["cer"], "--json")
        assert run.returncode == 0, run.stderr
        np.testing.assert_allclose(json.loads(run.stdout)[names["cer"]], names["set_cer"], rtol=1e-6)
    assert abs(np.mean(names["batch_cers"]) - names["set_cer"]) > 1e-4   # what the mean of batches gave
    if model != "crnn_gru":
        run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "init.npz", "--data",
                        folder / "data.npz", "--batch-size", 8, "--json")
        np.testing.assert_allclose(json.loads(run.stdout)["loss"], names["set_loss"], rtol=1e-6)


@pytest.mark.parametrize("case", CTC_CASES)
def test_warpctc_at_its_corners_gives_paddles_loss_and_gradient(files, case):
    """float64 sum(w * ctc_loss(reduction='none')) over 5 sequences: repeated labels (a blank needed between),
    a label that just fits, one longer than its input (no alignment: Paddle's loss 0 and gradient 0, not inf), an
    empty label, blank 0 or 4, norm_by_times or not: Paddle's own program run by gradc and gradc's compilation give
    Paddle's losses and gradients to 1e-14 (no fault)."""
    paddle, feed = np.load(files / "ctc64.npz"), files / f"ctc64_{case}_feed.npz"
    assert paddle[f"{case}_loss"][3] == 0 and not paddle[f"{case}_grad"][:, 3].any()   # the impossible label
    assert gradc_cli("compile", files / f"ctc64_{case}.pb", "-o", files / f"ctc64_{case}_gradc.pb", "--wrt",
                     "logits").returncode == 0
    for program in (f"ctc64_{case}_paddle.pb", f"ctc64_{case}_gradc.pb"):
        run = gradc_cli("run", files / program, "--feed", feed, "--fetch", "logits@GRAD=grad", "--fetch",
                        "warpctc_0.tmp_0=loss", "-o", files / "ctc_out.npz")
        assert run.returncode == 0, run.stderr
        ours = np.load(files / "ctc_out.npz")
        np.testing.assert_allclose(ours["loss"].ravel(), paddle[f"{case}_loss"], rtol=1e-14, atol=1e-14)
        np.testing.assert_allclose(ours["grad"], paddle[f"{case}_grad"], rtol=0, atol=1e-14)


@pytest.mark.parametrize("case", CTC_CASES)
def test_check_of_warpctc_against_central_differences(files, case):
    """gradc check of every logit: without norm_by_times the gradient is the loss's (3.6e-9 measured). With it,
    Paddle divides each sequence's gradient, and not its loss, by its input length: check said only "gradients differ
    from central differences for logits"; now it names the warpctc op and why."""
    run = gradc_cli("check", files / f"ctc64_{case}.pb", "--feed", files / f"ctc64_{case}_feed.npz", "--wrt",
                    "logits", "--max-elements", 150)
    if case.endswith("_norm"):
        assert run.returncode == 1
        assert run.stderr.splitlines()[-1] == (
            "gradc: error: gradients differ from central differences for logits; warpctc (block 0, op 0) has "
            "norm_by_times: its gradient is each sequence's divided by the sequence's input length, and its loss is "
            "not (Paddle's semantics), so the compiled gradient is not the loss's; check with norm_by_times off")
    else:
        assert run.returncode == 0, run.stdout + run.stderr
        assert "150/150" in run.stdout


@pytest.mark.parametrize("model", MODELS)
def test_check_of_each_recogniser_against_central_differences(files, model):
    """Every parameter on Paddle's trained weights, through batch norm, the LSTM or the attention and warpctc, agrees
    with float64 central differences along 2 random directions (to 3.4e-10; no fault). The CRNN-GRU's CTC has
    norm_by_times: its gradients are not its loss's, and check says so (the fault above)."""
    folder = files / model
    run = gradc_cli("check", folder / "forward.pb", "--params", folder / "trained.npz", "--feed",
                    folder / "first.npz", "--directions", 2, *(() if model == "crnn_gru" else ("--json",)))
    if model == "crnn_gru":
        assert run.returncode == 1 and "warpctc (block 0, op 31) has norm_by_times" in run.stderr
    else:
        assert run.returncode == 0, run.stdout + run.stderr
        result = json.loads(run.stdout)
        assert len(result["vars"]) >= 22 and result["problems"] == []


def test_pir_export_and_gradc_export_run_as_paddle(files):
    """Paddle's paddle.jit.save of the CRNN (softmax and argmax fetched) run by gradc gives the dygraph and
    Predictor outputs to 1e-7 and the same argmax; gradc export of the CRNN with its decode (image and input lengths
    in; logits, tokens, lengths out; batch norm in test mode), on the initial weights, decodes its logits greedily as
    a hand-written decoder does (and, by hand, runs in Paddle's Predictor to 6.6e-7 and the same tokens) (no
    fault)."""
    run = gradc_cli("run", files / "crnn_pir.json", "--params", files / "crnn_pir.pdiparams", "--feed",
                    files / "pir_feed.npz", "-o", files / "pir_out.npz")
    assert run.returncode == 0, run.stderr
    ours, paddle = np.load(files / "pir_out.npz"), np.load(files / "predictor_pir.npz")
    for key in ("dygraph_0", "fetch_name_0"):
        np.testing.assert_allclose(ours["fetch_name_0"], paddle[key], rtol=0, atol=1e-7)
    assert np.array_equal(ours["fetch_name_1"], paddle["dygraph_1"])
    folder, names = files / "crnn_lstm", META["crnn_lstm"]
    export = gradc_cli("export", folder / "forward.pb", "--params", folder / "init.npz", "-o", folder / "ocr.json",
                       "--input", "image", "--input", "input_len", "--fetch", f"{names['logits']}=logits", "--fetch",
                       f"{names['tokens']}=tokens", "--fetch", f"{names['lengths']}=lengths")
    assert export.returncode == 0, export.stderr
    run = gradc_cli("run", folder / "ocr.json", "--params", folder / "ocr.pdiparams", "--feed", folder / "first.npz",
                    "-o", folder / "ocr_out.npz")
    assert run.returncode == 0, run.stderr
    exported, lines = np.load(folder / "ocr_out.npz"), np.load(folder / "first.npz")
    for row, best in enumerate(exported["logits"].argmax(-1)):   # the greedy decode, by hand
        steps = best[:lines["input_len"][row]]
        kept = [int(t) for i, t in enumerate(steps) if t != 0 and (i == 0 or t != steps[i - 1])]
        assert exported["lengths"][row, 0] == len(kept) and exported["tokens"][row, :len(kept)].tolist() == kept
        assert not exported["tokens"][row, len(kept):].any()
    assert exported["lengths"].sum() > 0   # (the trained weights decode every line to nothing yet)
