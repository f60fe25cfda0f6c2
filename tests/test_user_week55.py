"""An image-captioning engineer's week (docs/tools.md): a CNN encoder whose feature starts an nn.LSTM decoder (teacher
forcing, F.cross_entropy with ignore_index=0 over the padded captions) and a Show-Attend-Tell captioner (an LSTMCell
unrolled over additive attention on the CNN's 16 places, label smoothing of a one-hot under the padding's mask, the
doubly-stochastic penalty), trained by Adam under LinearWarmup then ExponentialDecay with ClipGradByGlobalNorm against
Paddle 3.3.1's (tools/paddle_user_week55.py); checked against central differences; the encoder and a one-step decoder
exported and run step by step in a greedy decoding (BLEU-1 and BLEU-2 by the user), evaluated by the token accuracy.
Each fault found, as the behaviour it has now."""

import json
from collections import Counter

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked

WEEK = DATA / "user_week55"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("showtell", "attend")
SCHEDULE = "LinearWarmup(ExponentialDecay(0.01, 0.9), 2, 0.0, 0.01)"
VOCAB, BATCH = 30, 8


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model, and the first batch of 8 images with their captions."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week55"), MODELS)
    data = np.load(out / "data.npz")
    np.savez(out / "first.npz", image=data["image"][:BATCH], caption=data["caption"][:BATCH])
    return out


def _train(program, startup, data, *extra):
    return gradc_cli("train", program, "--startup", startup, "--data", data, "--batch-size", BATCH, "--json",
                     "--log-every", 1, "--lr-schedule", SCHEDULE, *extra)


@pytest.mark.parametrize("model", MODELS)
def test_each_captioner_trains_to_paddles_losses(files, model):
    """gradc compile --optimizer adam --clip-global-norm 1.0 and train under the LinearWarmup(ExponentialDecay)
    schedule from Paddle's initial weights: its 5 losses to 1e-6 and its weights to 1e-6, the attention's state
    projection att_h.w to 1e-5 (Adam divides its small gradients' float32 rounding by their own size: 3e-7 and 3e-6
    held on an AVX-512 machine; where numpy and OpenBLAS run their AVX2 kernels 4.6e-7 and 4.1e-6); not the
    score's bias att_v.b, whose exact gradient is 0 (the softmax over the places ignores a shift), so both steps are
    Adam's of rounding noise (no fault)."""
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "t.pb", "--optimizer", "adam",
                         "--clip-global-norm", 1.0, "--lr-schedule", SCHEDULE)
    assert compiled.returncode == 0, compiled.stderr
    run = _train(folder / "t.pb", folder / "t.startup.pb", files / "data.npz", "--params", folder / "init.npz",
                 "--save-params", folder / "mine.npz")
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    ours, paddle = np.load(folder / "mine.npz"), np.load(folder / "trained.npz")
    for name in paddle.files:
        if name in ours.files and name != "att_v.b":   # the LSTM's flat buffer is rebuilt from its cells
            atol = 1e-5 if name == "att_h.w" else 1e-6
            np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=atol, err_msg=name)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_programs_train_to_its_losses(files, model):
    """Paddle's minimize() programs (its global-norm clipping, the rnn op's grad, the unrolled cell's) from its
    startup: its 5 losses (no fault)."""
    run = _train(files / model / "train.pb", files / model / "startup.pb", files / "data.npz")
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


def test_paddles_pir_program_trains_to_its_losses(files):
    """The LSTM captioner minimized in PIR static mode: gradc trains Paddle's serialized program from the legacy
    program's initial values (the same named draws) to its 5 PIR losses (no fault)."""
    run = _train(files / "showtell_pir_train.json", files / "showtell_pir_startup.json", files / "data.npz",
                 "--params", files / "showtell" / "init.npz", "--fetch", "loss")
    losses = json.loads((WEEK / "pir_losses.json").read_text())["showtell"]
    np.testing.assert_allclose(step_losses(run), losses, rtol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_check_agrees_with_central_differences(files, model):
    """gradc check on Paddle's trained weights and the first batch: every parameter's gradient agrees with float64
    central differences, through the ignored padding, the attention's softmax and the penalty (no fault)."""
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / "first.npz", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["problems"] == []


def _export(program, out, fetches: dict, inputs, params):
    args = [arg for name, key in fetches.items() for arg in ("--fetch", f"{name}={key}")]
    args += [arg for name in inputs for arg in ("--input", name)]
    run = gradc_cli("export", program, "-o", out, "--params", params, *args)
    assert run.returncode == 0, run.stderr


def _exported_pair(files, model):
    """The encoder exported from the forward program and the one-step decoder from the step program, both with the
    trained weights."""
    folder, meta = files / model, META[model]
    encoder = {meta["h0"]: "h0"} if model == "showtell" else {meta["features"]: "features", meta["h0"]: "h0",
                                                              meta["c0"]: "c0"}
    _export(folder / "forward.pb", folder / "encoder", encoder, ["image"], folder / "trained.npz")
    inputs = ["token", "h", "c"] + (["features"] if model == "attend" else [])
    _export(folder / "step.pb", folder / "step", {meta["step"][key]: key for key in ("logits", "h_next", "c_next")},
            inputs, folder / "trained.npz")
    return folder / "encoder.pdmodel", folder / "step.pdmodel"


def _greedy(files, model) -> tuple[np.ndarray, list[np.ndarray]]:
    """The user's greedy decoding with gradc's Python API: <bos> first, each step fed the best token and the state
    the last step returned; the tokens and each step's logits."""
    import gradc

    encoder_path, step_path = _exported_pair(files, model)
    executor, first = gradc.Executor(), dict(np.load(files / "first.npz"))
    encoder, step = gradc.load(encoder_path), gradc.load(step_path)
    encoder_scope, step_scope = gradc.Scope(), gradc.Scope()
    gradc.load_params(encoder_scope, encoder_path.with_suffix(".pdiparams"), encoder)
    gradc.load_params(step_scope, step_path.with_suffix(".pdiparams"), step)
    if model == "showtell":
        (h,) = executor.run(encoder, feed={"image": first["image"]}, fetch_list=["h0"], scope=encoder_scope)
        c, extra, token = np.zeros_like(h), {}, np.ones((BATCH, 1), np.int64)
    else:
        features, h, c = executor.run(encoder, feed={"image": first["image"]}, fetch_list=["features", "h0", "c0"],
                                      scope=encoder_scope)
        extra, token = {"features": features}, np.ones(BATCH, np.int64)
    decoded, step_logits = [], []
    for _ in range(7):
        logits, h, c = executor.run(step, feed={"token": token, "h": h, "c": c, **extra},
                                    fetch_list=["logits", "h_next", "c_next"], scope=step_scope)
        step_logits.append(logits.reshape(BATCH, VOCAB))
        token = step_logits[-1].argmax(1).reshape(token.shape)
        decoded.append(token.reshape(-1))
    return np.stack(decoded, 1), step_logits


def _words(tokens) -> list[int]:
    """The caption's words: up to <eos> (2), without <bos> (1) and the padding (0)."""
    words = []
    for token in tokens:
        if token == 2:
            break
        if token > 2:
            words.append(int(token))
    return words


def _bleu(candidates, references, n: int) -> float:
    """Corpus BLEU-n with uniform weights and the brevity penalty, as nltk's corpus_bleu defines it."""
    precisions = []
    for order in range(1, n + 1):
        hits = total = 0
        for candidate, reference in zip(candidates, references):
            grams = Counter(tuple(candidate[i:i + order]) for i in range(len(candidate) - order + 1))
            known = Counter(tuple(reference[i:i + order]) for i in range(len(reference) - order + 1))
            hits += sum(min(count, known[gram]) for gram, count in grams.items())
            total += max(len(candidate) - order + 1, 0)
        precisions.append(hits / total if total else 0.0)
    if min(precisions) == 0:
        return 0.0
    length, reference_length = sum(map(len, candidates)), sum(map(len, references))
    penalty = 1.0 if length > reference_length else np.exp(1 - reference_length / max(length, 1))
    return float(penalty * np.exp(np.mean(np.log(precisions))))


@pytest.mark.parametrize("model", MODELS)
def test_greedy_decoding_step_by_step_gives_paddles_captions(files, model):
    """The exported encoder and one-step decoder run step by step from Python (the state and the features fed back
    each step): Paddle's first and 7th step's logits to 5e-7 and its 7 greedy tokens of each of the 8 images, so the
    same BLEU-1 and BLEU-2 against the references (no fault)."""
    outputs = np.load(files / model / "outputs.npz")
    tokens, step_logits = _greedy(files, model)
    np.testing.assert_allclose(step_logits[0], outputs["first_logits"], rtol=0, atol=5e-7)
    np.testing.assert_allclose(step_logits[-1], outputs["last_logits"], rtol=0, atol=5e-7)
    np.testing.assert_array_equal(tokens, outputs["tokens"])
    references = [_words(caption[1:]) for caption in np.load(files / "first.npz")["caption"]]
    for n in (1, 2):
        ours = _bleu([_words(row) for row in tokens], references, n)
        assert ours == _bleu([_words(row) for row in outputs["tokens"]], references, n)


def test_a_one_step_decoder_exported_without_inputs_names_them_all(files):
    """Export of the one-step decoder without --input named its three missing inputs "'c' and 'h' and 'token'"; now
    as a sentence lists them, with the options that give them."""
    folder = files / "showtell"
    run = gradc_cli("export", folder / "step.pb", "-o", folder / "bare", "--params", folder / "trained.npz",
                    "--fetch", f"{META['showtell']['step']['logits']}=logits")
    assert run.returncode == 1
    assert "the fetches need 'c', 'h' and 'token', which are neither fed" in run.stderr, run.stderr
    assert "--input c --input h --input token" in run.stderr


@pytest.mark.parametrize("model, ignore", [("showtell", ()), ("attend", ()), ("attend", ("--ignore-index", 0))])
def test_evaluate_gives_the_token_accuracy_of_the_shifted_captions(files, model, ignore):
    """The loss reads caption[:, 1:], a var the program computes, not an array of the data: gradc evaluate gave the
    loss alone, and --f1 said "the program has no cross-entropy op whose labels the data holds". Now the labels the
    program computes from the data are fetched with the scores: the accuracy of Paddle's best tokens over the 40
    captions, the padding left out by the loss's ignore_index (0.0993), or by --ignore-index 0 where the smoothed
    one-hot loss has none (0.0927; 0.05 with the padding counted), the same at batch 7 and 40."""
    targets = np.load(files / "data.npz")["caption"][:, 1:]
    predicted = np.load(files / model / "outputs.npz")["all_predicted"]
    counted = targets != 0 if model == "showtell" or ignore else np.ones_like(targets, bool)
    for batch in (7, 40):
        run = gradc_cli("evaluate", files / model / "forward.pb", "--params", files / model / "trained.npz",
                        "--data", files / "data.npz", "--batch-size", batch, "--json", *ignore)
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["acc"] == pytest.approx(np.mean((predicted == targets)[counted]), abs=1e-12)


def test_evaluate_f1_and_train_eval_of_computed_labels(files, tmp_path):
    """--f1 scores the computed labels too (each token's class over the set), and train --eval --topk 1 reports each
    epoch's token accuracy."""
    folder = files / "showtell"
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    files / "data.npz", "--f1", "--json")
    assert run.returncode == 0, run.stderr
    assert len(json.loads(run.stdout)["class_f1"]) == VOCAB
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "t.pb", "--optimizer", "adam").returncode == 0
    run = gradc_cli("train", tmp_path / "t.pb", "--startup", tmp_path / "t.startup.pb", "--params", folder /
                    "init.npz", "--data", files / "data.npz", "--batch-size", 8, "--eval", files / "data.npz",
                    "--topk", 1, "--json")
    assert run.returncode == 0, run.stderr
    epochs = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert 0 < epochs[0]["acc"] < 1


def test_a_mask_of_the_data_cannot_mark_computed_labels(files):
    """--mask with labels the program computes is refused in one line that says why and what to use instead."""
    folder = files / "showtell"
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    files / "data.npz", "--mask", "caption")
    assert run.returncode == 1
    assert "are computed by the program, not read from the data" in run.stderr and "--ignore-index" in run.stderr


@pytest.mark.parametrize("model", MODELS)
def test_evaluate_gives_the_loss_of_the_whole_set_at_any_batch(files, model):
    """The attention captioner's loss is the masked token mean plus 0.5 times the penalty averaged by image: gradc
    evaluate weighted the whole sum by images, 7.9331 at batch 1 against Paddle's 7.9477 over the 40 at once. Now a
    sum of scaled scalars with a masked mean among them is the sum of each term's set value (the mean's over the
    set's token count): Paddle's loss of the 40 to 1e-6 at batch 1, 7 and 40; the LSTM's ignore_index mean as
    before."""
    for batch in (1, 7, 40):
        run = gradc_cli("evaluate", files / model / "forward.pb", "--params", files / model / "trained.npz",
                        "--data", files / "data.npz", "--batch-size", batch, "--json")
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["loss"] == pytest.approx(META[model]["set_loss"], rel=1e-6), batch


def test_a_decoding_steps_next_state_named_as_its_input_is_refused_with_the_way_to_do_it(files, tmp_path):
    """Exporting the one-step decoder with its next state named as its input (--fetch lstm_0.tmp_1=h, so each step's
    --out feeds the next) was refused with "the model has a var of that name"; now the refusal says why and what
    works: the fetch named h_next, stored as h by gradc run --fetch h_next=h; two steps so on the command line give
    Paddle's first two tokens of each image."""
    folder, step = files / "showtell", META["showtell"]["step"]
    args = ("--params", folder / "trained.npz", "--input", "token", "--input", "h", "--input", "c")
    run = gradc_cli("export", folder / "step.pb", "-o", tmp_path / "step", "--fetch", f"{step['logits']}=logits",
                    "--fetch", f"{step['h_next']}=h", "--fetch", f"{step['c_next']}=c", *args)
    assert run.returncode == 1
    assert (f"cannot rename the fetch '{step['h_next']}' to 'h': 'h' is an input of the model" in run.stderr
            and "gradc run --fetch h_next=h" in run.stderr), run.stderr
    encoder, decoder = _exported_pair(files, "showtell")
    run = gradc_cli("run", encoder, "--params", encoder.with_suffix(".pdiparams"), "--feed", files / "first.npz",
                    "--fetch", "h0=h", "-o", tmp_path / "state.npz")
    assert run.returncode == 0, run.stderr
    state = dict(np.load(tmp_path / "state.npz"))
    state.update(c=np.zeros_like(state["h"]), token=np.ones((BATCH, 1), np.int64))
    tokens = []
    for _ in range(2):
        np.savez(tmp_path / "in.npz", **state)
        run = gradc_cli("run", decoder, "--params", decoder.with_suffix(".pdiparams"), "--feed", tmp_path / "in.npz",
                        "--fetch", "logits", "--fetch", "h_next=h", "--fetch", "c_next=c", "-o", tmp_path / "out.npz")
        assert run.returncode == 0, run.stderr
        state = dict(np.load(tmp_path / "out.npz"))
        state["token"] = state.pop("logits").reshape(BATCH, VOCAB).argmax(1)[:, None]
        tokens.append(state["token"][:, 0])
    np.testing.assert_array_equal(np.stack(tokens, 1), np.load(folder / "outputs.npz")["tokens"][:, :2])


def test_info_of_the_pir_program_counts_the_lstm_once(files):
    """gradc info of the LSTM captioner's PIR training program counted nn.LSTM's flat buffer lstm_0.w_0 as values of
    their own, 4,558 against the legacy program's 2,894: the PIR rnn op names its DropoutState without its layer
    (dropout_state__non_persistable), by which the buffer was found. Now the one unread buffer of the cells' size is
    it: 2,894 values and the buffer's 1,664 said to repeat the cells', as for the legacy program."""
    counts = []
    for program in (files / "showtell_pir_train.json", files / "showtell" / "forward.pb"):
        run = gradc_cli("info", program, "--json")
        assert run.returncode == 0, run.stderr
        facts = json.loads(run.stdout)
        counts.append((facts["parameter_values"], facts["flat_buffers"]))
    assert counts[0] == counts[1] == (2894, {"lstm_0.w_0": 1664})


@pytest.mark.parametrize("batch", (1, 7))
def test_trainings_epoch_loss_is_the_sets_as_evaluate_gives_it(files, tmp_path, batch):
    """gradc train's epoch value of the attention captioner's loss weighted the whole sum by images, as evaluate did
    (7.9469 at batch 7 with the weights still): now each term's epoch value, as evaluate's. Trained at a rate of 1e-30
    from Paddle's trained weights, the epoch's loss is Paddle's over the 40 at once to 1e-6."""
    folder = files / "attend"
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "t.pb", "--optimizer", "adam").returncode == 0
    run = gradc_cli("train", tmp_path / "t.pb", "--startup", tmp_path / "t.startup.pb", "--params", folder /
                    "trained.npz", "--data", files / "data.npz", "--batch-size", batch, "--lr", 1e-30, "--json")
    assert run.returncode == 0, run.stderr
    (epoch,) = [line["train"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert epoch[META["attend"]["loss"]] == pytest.approx(META["attend"]["set_loss"], rel=1e-6)
