"""A text-classification engineer's week (docs/tools.md): a TextCNN (Conv1D of three widths, max over time with the
padding at -1e9, label smoothing and class weights), a BiLSTM with attention pooled over the sequence lengths and a
fastText bag of n-grams (a mean by paddle.sum / lengths, multi-label BCE with pos_weight), trained by Adam with
ClipGradByNorm, Momentum under PiecewiseDecay and Adam against Paddle 3.3.1's (tools/paddle_user_week52.py), each batch
padded to its own longest; checked against central differences, exported and run on one sentence longer than any
trained on, evaluated by accuracy and multi-label F1. Each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, step_losses, unpacked
from gradc.executor.feeding import padded_sequences
from user_weeks import train_steps

WEEK = DATA / "user_week52"
META = json.loads((WEEK / "meta.json").read_text())
MODELS = ("textcnn", "bilstm", "fasttext")
TOKENS = {"textcnn": "ids", "bilstm": "ids", "fasttext": "bag"}
SCHEDULE = ("--lr-schedule", "PiecewiseDecay([2, 4], [0.1, 0.05, 0.01])")
COMPILE = {"textcnn": ("--optimizer", "adam", "--clip-norm", 1.0), "bilstm": ("--optimizer", "momentum",
                                                                              "--momentum", 0.9, "--lr", 0.1),
           "fasttext": ("--optimizer", "adam")}
TRAIN = {"textcnn": (), "bilstm": SCHEDULE, "fasttext": ()}


def _first(data: dict, tokens: str, count: int = 8) -> dict:
    """The first ``count`` sentences of a data set of sequences, still as sequences."""
    end = data[f"{tokens}@LOD0"][count]
    rest = {name: value[:count] for name, value in data.items() if name not in (tokens, f"{tokens}@LOD0")}
    return {tokens: data[tokens][:end], f"{tokens}@LOD0": data[f"{tokens}@LOD0"][:count + 1], **rest}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, a folder a model; each model's first batch (sequences) and its long sentence."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week52"), MODELS)
    for model, tokens in TOKENS.items():
        np.savez(out / model / "first.npz", **_first(dict(np.load(out / model / "data.npz")), tokens))
        outputs = np.load(out / model / "outputs.npz")
        np.savez(out / model / "long.npz", **{tokens: outputs["long_ids"], "lengths": np.array([20])})
    return out


def _train(program, startup, folder, data="data.npz", *extra):
    return train_steps(program, startup, folder / data, 8, *extra)


@pytest.mark.parametrize("model", MODELS)
def test_each_text_model_trains_on_sentences_of_each_batchs_length(files, model):
    """gradc compile with the user's optimizer and train from Paddle's initial weights on the data set of sentences
    (ids flat with their offsets ids@LOD0): each batch padded to its own longest, as Paddle's were (widths 6, 11, 8,
    10, 5; the bags 11 to 23), gives Paddle's 5 losses to 1e-6 and its weights to 3e-7. It was refused: "feed var
    'ids' ... has shape [42], but block 0 declares [-1, -1] (give it the trailing axis of 1 ...)"."""
    folder = files / model
    compiled = gradc_cli("compile", folder / "forward.pb", "-o", folder / "t.pb", *COMPILE[model])
    assert compiled.returncode == 0, compiled.stderr
    run = _train(folder / "t.pb", folder / "t.startup.pb", folder, "data.npz", "--params", folder / "init.npz",
                 "--save-params", folder / "mine.npz", *TRAIN[model])
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)
    ours, paddle = np.load(folder / "mine.npz"), np.load(folder / "trained.npz")
    for name in paddle.files:
        if name in ours.files:   # the LSTM's flat buffer is rebuilt from its cells
            np.testing.assert_allclose(ours[name], paddle[name], rtol=0, atol=3e-7, err_msg=name)


def test_sentences_are_padded_to_their_batchs_longest():
    """The padding of a batch of sequences: zeros after each, the width its longest, rows of any trailing shape."""
    padded = padded_sequences(np.array([5, 6, 7, 8, 9, 1]), [0, 2, 5, 6])
    np.testing.assert_array_equal(padded, [[5, 6, 0], [7, 8, 9], [1, 0, 0]])
    assert padded_sequences(np.ones((3, 2), np.float32), [0, 3]).shape == (1, 3, 2)


@pytest.mark.parametrize("model", MODELS)
def test_paddles_own_programs_train_on_padded_and_sequence_data(files, model):
    """Paddle's minimize() programs (its ClipGradByNorm, momentum, the LSTM's rnn_grad) from its startup: its 5 losses
    from the sentences padded batch by batch, and from the same padded once to the longest of all (padded.npz): the
    masks make the padding's width no matter (no fault)."""
    for data in ("data.npz", "padded.npz"):
        run = _train(files / model / "train.pb", files / model / "startup.pb", files / model, data, *TRAIN[model])
        np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6, err_msg=data)


@pytest.mark.parametrize("model", MODELS)
def test_lod_ids_of_a_trailing_unit_axis_train_alike(files, model):
    """Paddle's LoD ids are [T, 1], a token a row: fed to the [-1, -1] ids they were passed through unpadded (the
    TextCNN's conv2d then stopped at 'the dilated kernel (2) is larger than the padded input (1)'); now padded as the
    [T] rows are, to Paddle's 5 losses."""
    data = dict(np.load(files / model / "data.npz"))
    rows = "bag" if model == "fasttext" else "ids"
    np.savez(files / model / "column.npz", **{**data, rows: data[rows][:, None]})
    run = _train(files / model / "train.pb", files / model / "startup.pb", files / model, "column.npz", *TRAIN[model])
    np.testing.assert_allclose(step_losses(run), META[model]["losses"], rtol=1e-6)


@pytest.mark.parametrize("model", MODELS)
def test_check_agrees_with_central_differences(files, model):
    """gradc check on Paddle's trained weights and the first batch: every parameter's gradient agrees with float64
    central differences, through the -1e9 masks, the LSTM's sequence lengths and the weighted losses (no fault)."""
    run = gradc_cli("check", files / model / "forward.pb", "--params", files / model / "trained.npz", "--feed",
                    files / model / "first.npz", "--json")
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["problems"] == []


@pytest.mark.parametrize("model", MODELS)
def test_export_runs_a_batch_and_one_longer_sentence_to_paddles_logits(files, model):
    """gradc export of the trained compilation, run on the first batch (its sentences padded to its longest) and on
    one sentence of 20 tokens, longer than any trained on: Paddle's logits to 5e-7. Export without --input named
    only 'ids' of the two inputs it needs; now both, and the --input options that give them."""
    folder, tokens = files / model, TOKENS[model]
    paddle = np.load(folder / "outputs.npz")
    logits = f"{META[model]['logits']}=logits"
    params = folder / "trained.npz"
    refused = gradc_cli("export", folder / "forward.pb", "-o", folder / "exp", "--fetch", logits, "--params", params)
    assert refused.returncode == 1 and f"--input {tokens} --input lengths on the command line" in refused.stderr
    assert f"the fetches need '{tokens}' and 'lengths', which are neither fed" in refused.stderr
    exported = gradc_cli("export", folder / "forward.pb", "-o", folder / "exp", "--fetch", logits, "--params", params,
                         "--input", tokens, "--input", "lengths")
    assert exported.returncode == 0, exported.stderr
    for feed, key in (("first", "logits"), ("long", "long_logits")):
        run = gradc_cli("run", folder / "exp.pdmodel", "--params", folder / "exp.pdiparams", "--feed",
                        folder / f"{feed}.npz", "-o", folder / f"{feed}_out.npz")
        assert run.returncode == 0, run.stderr
        np.testing.assert_allclose(np.load(folder / f"{feed}_out.npz")["logits"], paddle[key], rtol=0, atol=5e-7)


def _host_f1(logits: np.ndarray, labels: np.ndarray) -> dict:
    """Host-side multi-label scores of logits above 0 against 0/1 labels, as scikit-learn's f1_score defines them."""
    predicted, truth = logits > 0, labels > 0.5
    tp, fp, fn = ((predicted & truth).sum(0), (predicted & ~truth).sum(0), (~predicted & truth).sum(0))
    each = [2 * t / (2 * t + p + n) if t + p + n else 0.0 for t, p, n in zip(tp, fp, fn)]
    return {"micro_precision": tp.sum() / (tp.sum() + fp.sum()), "micro_recall": tp.sum() / (tp.sum() + fn.sum()),
            "micro_f1": 2 * tp.sum() / (2 * tp.sum() + fp.sum() + fn.sum()), "macro_f1": float(np.mean(each)),
            "exact_match": float((predicted == truth).all(axis=1).mean()), "label_f1": each}


@pytest.mark.parametrize("batch", (7, 40))
def test_evaluate_gives_multi_label_f1(files, batch):
    """gradc evaluate of the fastText tagger (BCE with logits, 5 labels) reported its loss alone: no precision,
    recall or F1. Now where the accuracy would be, micro precision / recall / F1, macro F1, exact match and each
    label's F1 over the whole set, the host-side numbers of Paddle's own logits of the 40 sentences (micro F1 0.79),
    the same at any batch size."""
    folder = files / "fasttext"
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    folder / "data.npz", "--batch-size", batch, "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    paddle = np.load(folder / "outputs.npz")["all_logits"]
    expected = _host_f1(paddle, np.load(folder / "data.npz")["labels"])
    for key, value in expected.items():
        assert result[key] == pytest.approx(value, abs=1e-12), key
    assert 0 < result["macro_f1"] < 1 and "acc" not in result


def test_evaluate_of_single_label_models_stays_the_accuracy(files):
    """The TextCNN's loss reads a one-hot of its labels (label smoothing): the accuracy over its 40 sentences is
    numpy's of Paddle's logits, and no multi-label numbers appear (no fault)."""
    folder = files / "textcnn"
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    folder / "data.npz", "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    paddle = np.load(folder / "outputs.npz")["all_logits"]
    assert result["acc"] == pytest.approx(np.mean(paddle.argmax(1) == np.load(folder / "data.npz")["label"][:, 0]))
    assert "micro_f1" not in result


def test_train_stops_early_by_macro_f1(files, tmp_path):
    """train --eval --topk 1 reports each epoch's multi-label numbers (not the label_f1 list), --early-stop
    --monitor macro_f1 keeps the best epoch, whose macro F1 gradc evaluate gives again."""
    folder = files / "fasttext"
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "t.pb", "--optimizer", "adam").returncode == 0
    run = gradc_cli("train", tmp_path / "t.pb", "--startup", tmp_path / "t.startup.pb", "--params", folder /
                    "init.npz", "--data", folder / "data.npz", "--batch-size", 8, "--epochs", 3, "--eval", folder /
                    "data.npz", "--topk", 1, "--early-stop", 2, "--monitor", "macro_f1", "--save-params",
                    tmp_path / "kept.npz", "--json")
    assert run.returncode == 0, run.stderr
    epochs = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert sorted(epochs[0]) == ["exact_match", "macro_f1", META["fasttext"]["loss"], "micro_f1", "micro_precision",
                                 "micro_recall"]
    again = gradc_cli("evaluate", folder / "forward.pb", "--params", tmp_path / "kept.npz", "--data",
                      folder / "data.npz", "--json")
    assert json.loads(again.stdout)["macro_f1"] == pytest.approx(max(e["macro_f1"] for e in epochs), abs=1e-12)


@pytest.mark.parametrize("program, params", [("exp.pdmodel", "exp.pdiparams"), ("exp.json", "exp.pdiparams")])
def test_evaluate_scores_an_exported_tagger_against_multi_hot_labels(files, tmp_path, program, params):
    """The exported fastText tagger (no loss op; .pdmodel and PIR) evaluated on its data was refused: "'labels'
    (float32, 160 values) does not label the rows of class scores 'logits' [32, 5] (give integer class labels)". Labels
    of the output's shape are multi-hot: its logits scored at 0, the numbers of the training program's loss."""
    folder = files / "fasttext"
    exported = gradc_cli("export", folder / "forward.pb", "-o", tmp_path / program, "--fetch",
                         f"{META['fasttext']['logits']}=logits", "--params", folder / "trained.npz", "--input", "bag",
                         "--input", "lengths")
    assert exported.returncode == 0, exported.stderr
    run = gradc_cli("evaluate", tmp_path / program, "--params", tmp_path / params, "--data", folder / "data.npz",
                    "--batch-size", 16, "--json")
    assert run.returncode == 0, run.stderr
    expected = _host_f1(np.load(folder / "outputs.npz")["all_logits"], np.load(folder / "data.npz")["labels"])
    result = json.loads(run.stdout)
    for key, value in expected.items():
        assert result[key] == pytest.approx(value, abs=1e-12), key


def test_an_exported_sigmoid_output_is_scored_at_one_half(tmp_path):
    """An export ending in a sigmoid gives probabilities: a label is predicted above 0.5 (above 0 every one would be),
    the numbers of numpy's thresholding of gradc run's outputs."""
    import gradc

    net = gradc.ProgramBuilder(seed=3)
    probabilities = net.fc(net.data("x", [-1, 4]), 3, act="sigmoid")
    gradc.save(net.program, tmp_path / "tagger.pb")
    gradc.save(net.startup, tmp_path / "tagger.startup.pb")
    rng = np.random.default_rng(0)
    x, tags = rng.normal(size=(30, 4)).astype(np.float32), (rng.random((30, 3)) > 0.5).astype(np.float32)
    np.savez(tmp_path / "tags.npz", x=x, tags=tags)
    assert gradc_cli("export", tmp_path / "tagger.pb", "--startup", tmp_path / "tagger.startup.pb", "-o",
                     tmp_path / "tagger", "--input", "x", "--fetch", f"{probabilities}=p").returncode == 0
    run = gradc_cli("run", tmp_path / "tagger.pdmodel", "--params", tmp_path / "tagger.pdiparams", "--feed",
                    tmp_path / "tags.npz", "-o", tmp_path / "p.npz")
    assert run.returncode == 0, run.stderr
    logits = np.load(tmp_path / "p.npz")["p"] - 0.5   # above 0.5 as above 0
    run = gradc_cli("evaluate", tmp_path / "tagger.pdmodel", "--params", tmp_path / "tagger.pdiparams", "--data",
                    tmp_path / "tags.npz", "--json")
    assert run.returncode == 0, run.stderr
    result, expected = json.loads(run.stdout), _host_f1(logits, tags)
    assert result["micro_f1"] == pytest.approx(expected["micro_f1"]) and result["micro_precision"] < 1
    assert result["macro_f1"] == pytest.approx(expected["macro_f1"])


def test_f1_asked_of_a_multi_label_model_says_its_f1_comes_without_it(files):
    """--f1 of the fastText tagger said 'the program has no cross-entropy op whose labels the data holds', as if no
    F1 could be had; its multi-label scores, F1s among them, are reported without the option."""
    folder = files / "fasttext"
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    folder / "data.npz", "--f1")
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert (f"--f1 is a single-label classifier's F1 of each class; the multi-label loss of "
            f"'{META['fasttext']['logits']}' is scored without it (micro_f1, macro_f1") in run.stderr


def _host_class_f1(logits: np.ndarray, labels: np.ndarray) -> dict:
    """Host-side macro precision, recall and F1 of the best-scored class, over the classes labelled or predicted."""
    predicted, labels = logits.argmax(1), labels.reshape(-1)
    present = sorted(set(predicted) | set(labels))
    precision = [np.mean(labels[predicted == c] == c) if (predicted == c).any() else 0.0 for c in present]
    recall = [np.mean(predicted[labels == c] == c) if (labels == c).any() else 0.0 for c in present]
    f1 = [2 * np.sum((predicted == c) & (labels == c)) / (np.sum(predicted == c) + np.sum(labels == c))
          for c in present]
    return {"macro_precision": np.mean(precision), "macro_recall": np.mean(recall), "macro_f1": np.mean(f1)}


@pytest.mark.parametrize("model", ("textcnn", "bilstm"))
def test_evaluate_f1_of_each_class(files, model):
    """The class-weighted classifiers (4 classes, one weighted 0.5) needed each class's F1: gradc evaluate had the
    accuracy and the mIoU only (--f1: 'No such option'). --f1 gives macro precision, recall and F1 and each class's F1
    from the set's confusion matrix, the host-side numbers of Paddle's logits (TextCNN macro F1 0.238 at accuracy
    0.325)."""
    folder = files / model
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    folder / "data.npz", "--f1", "--batch-size", 16, "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    expected = _host_class_f1(np.load(folder / "outputs.npz")["all_logits"], np.load(folder / "data.npz")["label"])
    for key, value in expected.items():
        assert result[key] == pytest.approx(value, abs=1e-12), key
    assert len(result["class_f1"]) == 4 and "acc" in result


def test_train_watches_macro_f1_of_a_single_label_model(files, tmp_path):
    """train --eval --f1 reports each epoch's macro precision, recall and F1 (not the list by class); --monitor
    macro_f1 watches it."""
    folder = files / "textcnn"
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "t.pb", *COMPILE["textcnn"]).returncode == 0
    run = gradc_cli("train", tmp_path / "t.pb", "--startup", tmp_path / "t.startup.pb", "--params", folder /
                    "init.npz", "--data", folder / "data.npz", "--batch-size", 8, "--epochs", 2, "--eval", folder /
                    "data.npz", "--f1", "--early-stop", 2, "--monitor", "macro_f1", "--json")
    assert run.returncode == 0, run.stderr
    epochs = [line["eval"] for line in map(json.loads, run.stdout.splitlines()) if line["event"] == "epoch"]
    assert [sorted(epoch) for epoch in epochs] == [["macro_f1", "macro_precision", "macro_recall",
                                                     META["textcnn"]["loss"]]] * 2


@pytest.mark.parametrize("model", MODELS)
def test_paddles_pir_training_programs_train_on_sentences(files, model):
    """Each model minimized in PIR static mode (pd_op.conv1d's conv2d form, the dynamic arange of the masks, rnn with
    sequence lengths, the clipping and momentum ops): gradc trains Paddle's serialized program from its initial
    values on the data set of sentences, each batch padded to its longest, to its 5 PIR losses (1e-6) (no fault)."""
    run = gradc_cli("train", files / f"{model}_pir_train.json", "--startup", files / f"{model}_pir_startup.json",
                    "--params", files / f"{model}_pir_init.npz", "--data", files / model / "data.npz", "--batch-size",
                    8, "--fetch", "loss", "--json", "--log-every", 1, *TRAIN[model])
    losses = json.loads((WEEK / "pir_losses.json").read_text())[model]
    np.testing.assert_allclose(step_losses(run), losses, rtol=1e-6)


def test_an_id_out_of_range_is_named_by_its_sentence_and_token(files, tmp_path):
    """An id past the vocabulary in a data set of sentences was named by its place in the flat ids: 'holds the id 60
    (example 101)' of 40 sentences; now by the sentence and its token, before the first step."""
    folder = files / "textcnn"
    data = dict(np.load(folder / "data.npz"))
    offsets = data["ids@LOD0"]
    data["ids"] = data["ids"].copy()
    data["ids"][offsets[15] + 3] = 60   # the 16th sentence's 4th token
    np.savez(tmp_path / "bad.npz", **data)
    run = gradc_cli("train", folder / "train.pb", "--startup", folder / "startup.pb", "--data", tmp_path / "bad.npz",
                    "--batch-size", 8)
    assert run.returncode == 1 and "array 'ids' holds the id 60 (example 16, token 4), but block 0, op 0 " \
        "(lookup_table_v2) looks ids up in the 50 rows of 'embedding_0.w_0'" in run.stderr, run.stderr
