"""gradc evaluate --threshold (and train --eval --threshold): a multi-label model's labels were a yes above a fixed 0.5
(probabilities) or 0 (logits); now above the user's T, in the scores' own terms, checked against numpy's thresholding
of the same scores."""

import json

import numpy as np
import pytest

from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked


def _micro_f1(scores: np.ndarray, labels: np.ndarray, threshold: float) -> float:
    predicted, truth = scores > threshold, labels > 0.5
    tp, fp, fn = (predicted & truth).sum(), (predicted & ~truth).sum(), (~predicted & truth).sum()
    return 2 * tp / (2 * tp + fp + fn)


@pytest.fixture(scope="module")
def tagger(tmp_path_factory):
    """An exported tagger whose sigmoid gives probabilities, its 30 examples' 0/1 tags, and gradc run's outputs."""
    import gradc

    out = tmp_path_factory.mktemp("threshold")
    net = gradc.ProgramBuilder(seed=3)
    probabilities = net.fc(net.data("x", [-1, 4]), 3, act="sigmoid")
    gradc.save(net.program, out / "tagger.pb")
    gradc.save(net.startup, out / "tagger.startup.pb")
    rng = np.random.default_rng(0)
    x, tags = rng.normal(size=(30, 4)).astype(np.float32), (rng.random((30, 3)) > 0.5).astype(np.float32)
    np.savez(out / "tags.npz", x=x, tags=tags)
    assert gradc_cli("export", out / "tagger.pb", "--startup", out / "tagger.startup.pb", "-o", out / "tagger",
                     "--input", "x", "--fetch", f"{probabilities}=p").returncode == 0
    run = gradc_cli("run", out / "tagger.pdmodel", "--params", out / "tagger.pdiparams", "--feed", out / "tags.npz",
                    "-o", out / "p.npz")
    assert run.returncode == 0, run.stderr
    return out, np.load(out / "p.npz")["p"], tags


def _evaluate(folder, *extra):
    return gradc_cli("evaluate", folder / "tagger.pdmodel", "--params", folder / "tagger.pdiparams", "--data",
                     folder / "tags.npz", "--json", *extra)


def test_a_probability_threshold_moves_the_f1(tagger):
    folder, probabilities, tags = tagger
    default, raised = _evaluate(folder), _evaluate(folder, "--threshold", 0.7)
    assert default.returncode == 0 and raised.returncode == 0, default.stderr + raised.stderr
    at_half, at_seven = json.loads(default.stdout)["micro_f1"], json.loads(raised.stdout)["micro_f1"]
    assert at_half == pytest.approx(_micro_f1(probabilities, tags, 0.5))
    assert at_seven == pytest.approx(_micro_f1(probabilities, tags, 0.7))
    assert at_seven != pytest.approx(at_half)


def test_a_logit_threshold_may_be_any_finite_number(tmp_path):
    """The fastText tagger's loss takes logits: --threshold 1.5 (no probability) cuts Paddle's logits there."""
    folder = unpacked(DATA / "user_week52", tmp_path, ("fasttext",)) / "fasttext"
    runs = {t: gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                         folder / "data.npz", "--json", "--threshold", t) for t in (0.0, 1.5)}
    logits, labels = np.load(folder / "outputs.npz")["all_logits"], np.load(folder / "data.npz")["labels"]
    for threshold, run in runs.items():
        assert run.returncode == 0, run.stderr
        assert json.loads(run.stdout)["micro_f1"] == pytest.approx(_micro_f1(logits, labels, threshold), abs=1e-12)
    assert _micro_f1(logits, labels, 1.5) != pytest.approx(_micro_f1(logits, labels, 0.0))


@pytest.mark.parametrize("value, says", [("1.5", "are probabilities: give a value strictly between 0 and 1"),
                                         ("0", "are probabilities: give a value strictly between 0 and 1"),
                                         ("nan", "give a finite number"), ("inf", "give a finite number"),
                                         ("half", "'half' is not a valid float")])
def test_a_bad_threshold_is_a_usage_error_of_one_line(tagger, value, says):
    run = _evaluate(tagger[0], "--threshold", value)
    assert run.returncode == 2 and says in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("gradc: error: ") and run.stdout == ""


def test_a_threshold_without_multi_label_scores_is_refused(tmp_path):
    """The TextCNN is single-label (softmax cross-entropy): a threshold would change nothing, and says so."""
    folder = unpacked(DATA / "user_week52", tmp_path, ("textcnn",)) / "textcnn"
    run = gradc_cli("evaluate", folder / "forward.pb", "--params", folder / "trained.npz", "--data",
                    folder / "data.npz", "--threshold", 0.3)
    assert run.returncode == 2 and "--threshold 0.3: no multi-label scores to cut" in run.stderr, run.stderr
    assert run.stderr.count("\n") == 1


def test_train_eval_takes_the_threshold_evaluate_takes(tmp_path):
    """gradc train --eval scored a multi-label model only at the fixed cut (and only with --topk); --threshold T now
    gives each epoch's micro F1 at T, evaluate's of the same trained values."""
    folder = unpacked(DATA / "user_week52", tmp_path, ("fasttext",)) / "fasttext"
    assert gradc_cli("compile", folder / "forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "sgd", "--lr",
                     0.05).returncode == 0
    trained = gradc_cli("train", tmp_path / "train.pb", "--startup", tmp_path / "train.startup.pb", "--params",
                        folder / "init.npz", "--data", folder / "data.npz", "--eval", folder / "data.npz",
                        "--batch-size", 8, "--threshold", -0.3, "--json", "--save-params", tmp_path / "out.npz")
    assert trained.returncode == 0, trained.stderr
    epoch = json.loads(trained.stdout.splitlines()[-1])["eval"]
    evaluated = {t: json.loads(gradc_cli("evaluate", folder / "forward.pb", "--params", tmp_path / "out.npz",
                                         "--data", folder / "data.npz", "--json", *t).stdout) for t in
                 (("--threshold", -0.3), ())}
    assert epoch["micro_f1"] == pytest.approx(evaluated[("--threshold", -0.3)]["micro_f1"])
    assert epoch["micro_f1"] != pytest.approx(evaluated[()]["micro_f1"])


@pytest.mark.parametrize("extra, says", [(("--threshold", "nan"), "nan: give a finite number"),
                                         (("--threshold", "0.4"), "--threshold: only with --eval")])
def test_a_bad_train_threshold_is_a_usage_error_of_one_line(tmp_path, extra, says):
    folder = unpacked(DATA / "user_week52", tmp_path, ("fasttext",)) / "fasttext"
    run = gradc_cli("train", folder / "forward.pb", "--params", folder / "init.npz", "--data", folder / "data.npz",
                    *extra)
    assert run.returncode == 2 and says in run.stderr and run.stderr.count("\n") == 1, run.stderr


def test_a_sigmoid_output_behind_an_exports_scale_by_one_is_probabilities(tmp_path):
    """Paddle 2's save_inference_model writes each output through scale(1.0) (save_infer_model/scale_0.tmp_0): the
    sigmoid's probabilities were taken for logits, cut at 0, every label a yes (micro recall 1.0). An op in place on
    the way (an assign) reads the value before it."""
    import gradc

    net = gradc.ProgramBuilder(seed=3)
    probabilities = net.op("scale", {"X": net.fc(net.data("x", [-1, 4]), 3, act="sigmoid")}, {"scale": 1.0},
                           names=["save_infer_model/scale_0.tmp_0"])[0]
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    rng = np.random.default_rng(0)
    data = {"x": rng.normal(size=(30, 4)).astype(np.float32), "tags": (rng.random((30, 3)) > 0.5).astype(np.float32)}
    inference = net.program   # no loss: scored as an export's output, which its fetch op names
    inference.global_block.append_op("assign", {"X": [probabilities]}, {"Out": [probabilities]})   # in place
    inference.global_block.append_op("fetch", {"X": [probabilities]}, {"Out": ["fetch"]}, {"col": 0})
    result = gradc.evaluate(inference, data, scope=scope, label="tags")
    outputs = 1 / (1 + np.exp(-(data["x"] @ scope.find("fc_0.w_0") + scope.find("fc_0.b_0"))))
    assert result["micro_f1"] == pytest.approx(_micro_f1(outputs, data["tags"], 0.5))
    with pytest.raises(gradc.GradcError, match="are probabilities"):
        gradc.evaluate(inference, data, scope=scope, label="tags", threshold=1.5)
