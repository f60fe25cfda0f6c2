"""A sequence-labelling engineer's week (docs/tools.md): a BiLSTM-CRF named-entity tagger built with Paddle 3.3.1's
layers (tools/paddle_user_week28.py: Embedding, nn.LSTM direction="bidirect" given the lengths, emissions by Linear,
and the CRF's negative log-likelihood from Paddle's ops, as PaddleNLP writes it: 3.3.1 has no linear_chain_crf op),
the transitions trained by Adam with the rest, decoded by viterbi_decode and scored by chunk_eval (IOB), the decoder
saved and exported; each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week28"
META = json.loads((WEEK / "meta.json").read_text())
NAMES = META["names"]
LOSS, EMISSION, PATH, F1 = NAMES["loss"], NAMES["emission"], NAMES["path"], NAMES["F1-Score"]
PRECISION, RECALL = NAMES["Precision"], NAMES["Recall"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files as the user has them: the programs unpacked beside the arrays, and a batch of 4 sentences."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week28"))
    data = np.load(out / "data.npz")
    np.savez(out / "batch.npz", **{name: data[name][:4] for name in data.files})
    return out


def _lines(stdout: str, event: str) -> list[dict]:
    return [line for line in map(json.loads, stdout.splitlines()) if line["event"] == event]


def test_training_gives_paddles_losses_and_weights(files):
    """crf.pb compiled with Adam(0.05) and trained 3 epochs of 6 batches of 4 from Paddle's startup gives Paddle's 18
    losses (7.20 ... 0.113) to 1e-6 over the first epoch and 6e-5 after (float32 rounding, grown where the loss is
    small: 2e-5 on an AVX-512 machine, 3.1e-5 where numpy and OpenBLAS run their AVX2 kernels), and Paddle's
    trained weights, the CRF's transitions and (since week 33) the LSTM's flat buffer among them, to 5e-6 (no
    fault)."""
    compiled = gradc_cli("compile", files / "crf.pb", "-o", files / "crf_train.pb", "--optimizer", "adam",
                         "--lr", 0.05)
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", files / "crf_train.pb", "--startup", files / "crf_startup.pb", "--startup",
                    files / "crf_train.startup.pb", "--data", files / "data.npz", "--batch-size", 4, "--epochs", 3,
                    "--json", "--log-every", 1, "--save-params", files / "gradc_trained.npz")
    assert run.returncode == 0, run.stderr
    losses = [step["values"][LOSS] for step in _lines(run.stdout, "step")]
    np.testing.assert_allclose(losses[:6], META["losses"][:6], rtol=1e-6)
    np.testing.assert_allclose(losses, META["losses"], rtol=6e-5)
    paddle, params = np.load(files / "trained.npz"), np.load(files / "gradc_trained.npz")
    trained = [name for name in paddle.files if name in params.files]
    assert "crf.transitions" in trained and len(trained) == 13   # the LSTM's flat buffer lstm_0.w_0 among them
    for name in trained:
        np.testing.assert_allclose(params[name], paddle[name], atol=5e-6, err_msg=name)


def test_check_of_the_crf_gradient_with_respect_to_the_emissions_and_the_transitions(files):
    """Before, gradc check --wrt the emissions (the Linear's output, the CRF's input) failed: "no value for
    linear_0.tmp_1: give the parameters with --params ..., or feed them", which an intermediate var cannot be. Now an
    activation checked by name is perturbed as fed to the program without the op writing it: all 140 emissions and
    25 transitions agree with float64 central differences to 3e-9 (Paddle's float64 gradients of the same loss to
    1.7e-9: Paddle is right), and so does the BiLSTM's output (its rnn op writes states no later op reads)."""
    run = gradc_cli("check", files / "crf.pb", "--loss", LOSS, "--feed", files / "batch.npz", "--params",
                    files / "trained.npz", "--wrt", EMISSION, "--wrt", "crf.transitions", "--wrt", "lstm_0.tmp_0",
                    "--max-elements", 200, "--json")
    assert run.returncode == 0, run.stdout
    checked = {var["var"]: var for var in json.loads(run.stdout)["vars"]}
    assert [checked[name]["checked"] for name in (EMISSION, "crf.transitions", "lstm_0.tmp_0")] == [140, 25, 200]
    assert max(var["max_abs_error"] for var in checked.values()) < 1e-8
    assert max(META["paddle_float64_gradient_errors"].values()) < 1e-8


def test_the_decoded_tags_scores_and_chunk_f1_are_paddles(files):
    """decode.pb (viterbi_decode of the emissions, chunk_eval of the path) run on Paddle's trained weights gives
    Paddle's paths exactly, its path scores to 1e-5 relative, and its chunk counts and F1 (0.967: 29 of 30 chunks)
    exactly (no fault)."""
    slots = ["path", "scores", "Precision", "Recall", "F1-Score", "NumInferChunks", "NumLabelChunks",
             "NumCorrectChunks"]
    fetches = [arg for slot in slots for arg in ("--fetch", NAMES[slot])]
    run = gradc_cli("run", files / "decode.pb", "--params", files / "trained.npz", "--feed", files / "data.npz",
                    *fetches, "-o", files / "decoded.npz")
    assert run.returncode == 0, run.stderr
    decoded, paddle = np.load(files / "decoded.npz"), np.load(files / "paddle_decoded.npz")
    np.testing.assert_array_equal(decoded[PATH], paddle["path"])
    np.testing.assert_allclose(decoded[NAMES["scores"]], paddle["scores"], rtol=1e-5)
    for slot in slots[2:]:
        np.testing.assert_array_equal(decoded[NAMES[slot]], paddle[slot], err_msg=slot)
    assert paddle["NumCorrectChunks"][0] == 29 and paddle["NumLabelChunks"][0] == 30


def test_evaluate_gives_the_chunk_f1_of_the_whole_set(files):
    """Before, gradc evaluate --batch-size 4 of the decoder's F1 gave the mean of the 6 batches' F1s, 0.972222, where
    the set's (Paddle's chunk_eval of all 24 sentences, as its ChunkEvaluator sums the counts) is 0.966667; and
    without --loss it said "the program computes no loss", of a program that computes one. Now a chunk_eval op's
    precision, recall and F1 are those of the chunk counts summed over every batch, Paddle's, at any batch size; and
    the loss not found is said to be so, and why."""
    paddle = np.load(files / "paddle_decoded.npz")
    for batch_size in (4, 5, 24):
        run = gradc_cli("evaluate", files / "decode.pb", "--data", files / "data.npz", "--params",
                        files / "trained.npz", "--batch-size", batch_size, "--loss", LOSS, "--fetch", F1, "--fetch",
                        PRECISION, "--fetch", RECALL, "--json")
        assert run.returncode == 0, run.stderr
        results = json.loads(run.stdout)
        for name, slot in ((F1, "F1-Score"), (PRECISION, "Precision"), (RECALL, "Recall")):
            assert results[name] == pytest.approx(float(paddle[slot][0]), rel=1e-6), (batch_size, slot)
    run = gradc_cli("evaluate", files / "decode.pb", "--data", files / "data.npz", "--params", files / "trained.npz",
                    "--fetch", F1)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[1] == (
        f"loss: none (not found: the last op writes several float scalars ({F1}, {PRECISION}, {RECALL}); name it "
        f"with --loss)")


def test_training_the_decoding_program_reports_the_chunk_f1_of_each_epoch(files):
    """decode.pb compiled with --loss (the decoder's ops get no gradient) and trained as crf.pb is, with --eval of the
    same sentences: before, the F1 after each epoch was the mean of the 6 eval batches' (0.114, 0.931, 0.972); now it
    is the set's (0.125, 0.933, 0.967), after the third Paddle's decoder's."""
    compiled = gradc_cli("compile", files / "decode.pb", "-o", files / "decode_train.pb", "--loss", LOSS,
                         "--optimizer", "adam", "--lr", 0.05)
    assert compiled.returncode == 0, compiled.stderr
    run = gradc_cli("train", files / "decode_train.pb", "--startup", files / "crf_startup.pb", "--startup",
                    files / "decode_train.startup.pb", "--data", files / "data.npz", "--batch-size", 4, "--epochs",
                    3, "--eval", files / "data.npz", "--fetch", F1, "--json")
    assert run.returncode == 0, run.stderr
    scores = [epoch["eval"][F1] for epoch in _lines(run.stdout, "epoch")]
    assert scores[-1] == pytest.approx(float(np.load(files / "paddle_decoded.npz")["F1-Score"][0]), rel=1e-6)
    assert scores[0] < 0.5 < scores[-1]


@pytest.mark.parametrize("model, params", [("decoder.pdmodel", "trained.npz"),
                                           ("decoder_pir.json", "decoder_pir.pdiparams")])
def test_the_saved_decoder_runs_as_the_predictor_runs_it(files, model, params):
    """Paddle's save_inference_model of the decoder (words, lengths -> path), and PIR's jit.save of it in dygraph
    (decoding by paddle.text.ViterbiDecoder, whose transitions it saves as generated_tensor_0), run by gradc give the
    Predictor's paths exactly (no fault)."""
    run = gradc_cli("run", files / model, "--params", files / params, "--feed", files / "data.npz", "-o",
                    files / f"{model}.out.npz")
    assert run.returncode == 0, run.stderr
    (path,) = np.load(files / f"{model}.out.npz").values()
    np.testing.assert_array_equal(path, np.load(files / "paddle_decoded.npz")["predictor_path"])
    if model.endswith(".json"):
        np.testing.assert_array_equal(path, np.load(files / "predictor_pir.npz")["path"])


@pytest.mark.parametrize("suffix", ["pdmodel", "json"])
def test_gradc_export_of_the_decoder_gives_the_predictors_paths(files, suffix):
    """gradc export of decode.pb's decoder (legacy .pdmodel and PIR .json: inputs words and lengths, the path
    fetched) run by gradc gives the Predictor's paths exactly (Paddle's Predictor runs both exports to the same
    paths: docs/tools.md; no fault)."""
    exported = files / f"decoder_export.{suffix}"
    run = gradc_cli("export", files / "decode.pb", "-o", exported, "--input", "words", "--input", "lengths",
                    "--fetch", f"{PATH}=path", "--params", files / "trained.npz")
    assert run.returncode == 0, run.stderr
    run = gradc_cli("run", exported, "--params", exported.with_suffix(".pdiparams"), "--feed", files / "data.npz",
                    "-o", files / f"exported_{suffix}.npz")
    assert run.returncode == 0, run.stderr
    np.testing.assert_array_equal(np.load(files / f"exported_{suffix}.npz")["path"],
                                  np.load(files / "paddle_decoded.npz")["predictor_path"])
