"""gradc evaluate and gradc.evaluate on the digits example: the numbers of gradc train --eval for the same parameters
and data (any form train reads), Paddle's Model.evaluate's loss and top-k accuracy, an exported model scored against
the data's labels, and the mistakes refused up front in one line."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from gradc.errors import GradcNotice
from gradc.layers import ProgramBuilder
from test_cli import assert_clean_failure
from test_training_loop import ACC, EXAMPLE, LOSS, digits


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One epoch on 128 examples with --eval on 100 others; the saved parameters and the exported model."""
    directory = tmp_path_factory.mktemp("evaluate")
    assert gradc_cli("compile", EXAMPLE / "forward.pb", "-o", directory / "train.pb", "--optimizer", "adam",
                     "--lr", "0.01").returncode == 0
    np.savez(directory / "train.npz", **digits(128))
    np.savez(directory / "test.npz", **digits(100, "test"))
    done = gradc_cli("train", directory / "train.pb", "--startup", EXAMPLE / "startup.pb", "--startup",
                     directory / "train.startup.pb", "--data", directory / "train.npz", "--eval",
                     directory / "test.npz", "--batch-size", "32", "--fetch", LOSS, "--fetch", ACC,
                     "--save-params", directory / "trained.npz")
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("epoch 1/1: train"))
    evaluated = dict(pair.split("=") for pair in line.split(" | eval ")[1].split(" (")[0].split())
    exported = gradc_cli("export", directory / "train.pb", "--params", directory / "trained.npz", "--input", "img",
                         "--fetch", "softmax_0.tmp_0", "-o", directory / "digits")
    assert exported.returncode == 0, exported.stderr
    return directory, {name: float(value) for name, value in evaluated.items()}


def evaluate_json(*args):
    done = gradc_cli("evaluate", *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_evaluate_gives_the_numbers_train_eval_printed(trained):
    directory, printed = trained
    results = evaluate_json(directory / "train.pb", "--params", directory / "trained.npz", "--data",
                            directory / "test.npz", "--fetch", ACC)
    assert results["examples"] == 100 and results["loss_var"] == LOSS
    assert float(f"{results['loss']:.6g}") == printed[LOSS]
    assert float(f"{results[ACC]:.6g}") == printed[ACC]
    assert results["acc"] == pytest.approx(results[ACC], abs=1e-7)   # the op's is float32


def test_params_split_over_two_files_give_the_numbers_of_one(trained, tmp_path):
    """evaluate, export and view take --params again and again (each kept only the last file: a model missing half
    its weights, or one file silently ignored)."""
    directory, _ = trained
    values = dict(np.load(directory / "trained.npz"))
    names = sorted(values)
    np.savez(tmp_path / "a.npz", **{name: values[name] for name in names[::2]})
    np.savez(tmp_path / "b.npz", **{name: values[name] for name in names[1::2]})
    split = ("--params", tmp_path / "a.npz", "--params", tmp_path / "b.npz")
    data = ("--data", directory / "test.npz")
    whole = evaluate_json(directory / "train.pb", "--params", directory / "trained.npz", *data)
    assert evaluate_json(directory / "train.pb", *split, *data) == whole
    exported = gradc_cli("export", directory / "train.pb", *split, "--input", "img", "--fetch", "softmax_0.tmp_0",
                         "-o", tmp_path / "split")
    assert exported.returncode == 0 and "no --params" not in exported.stderr, exported.stderr
    assert (tmp_path / "split.pdiparams").read_bytes() == (directory / "digits.pdiparams").read_bytes()
    viewed = gradc_cli("view", tmp_path / "split.pdmodel", *split, "--feed", directory / "test.npz", "-o",
                       tmp_path / "v.html")   # the test set's labels left out, as run leaves them (view refused them)
    assert viewed.returncode == 0 and "holds arrays the model does not take (label" in viewed.stderr, viewed.stderr


def test_the_python_api_equals_the_trainers_evaluation_bit_for_bit():
    program = gradc.load(EXAMPLE / "forward.pb")
    startup = gradc.minimize(program, optimizer="adam", lr=0.01)
    trainer = gradc.Trainer(program, [EXAMPLE / "startup.pb", startup], fetch=[LOSS, ACC])
    history = trainer.fit(digits(64), batch_size=32, eval_data=digits(50, "test"))
    results = gradc.evaluate(program, digits(50, "test"), scope=trainer.scope, batch_size=32, fetch=[ACC],
                             topk=(1, 2))
    assert results[LOSS] == results["loss"] == history.epochs[-1]["eval"][LOSS]
    assert results[ACC] == history.epochs[-1]["eval"][ACC]
    assert results["acc_top1"] == pytest.approx(results[ACC], abs=1e-7) and results["acc_top2"] >= results["acc_top1"]


def test_every_data_form_and_batch_size_gives_the_same_means(trained, tmp_path):
    directory, _ = trained
    arrays = digits(100, "test")
    (tmp_path / "npy").mkdir()
    for name, value in arrays.items():
        np.save(tmp_path / "npy" / f"{name}.npy", value)
    header = ",".join(["img"] * 64 + ["label"])
    rows = [",".join([*(f"{v:.9g}" for v in img.reshape(-1)), str(int(label[0]))])
            for img, label in zip(arrays["img"], arrays["label"])]
    (tmp_path / "test.csv").write_text("\n".join([header, *rows]) + "\n")
    program = ("evaluate_json", directory / "train.pb", "--params", directory / "trained.npz", "--data")
    whole = evaluate_json(*program[1:], directory / "test.npz", "--batch-size", "100")
    for data, batch in ((tmp_path / "npy", "7"), (tmp_path / "test.csv", "32"), (directory / "test.npz", "1")):
        results = evaluate_json(*program[1:], data, "--batch-size", batch)
        assert results["loss"] == pytest.approx(whole["loss"], rel=1e-6)
        assert results["acc"] == whole["acc"]
    exported = evaluate_json(directory / "digits.pdmodel", "--params", directory / "digits.pdiparams", "--data",
                             tmp_path / "test.csv")   # its label column names no var of the model: the labels
    assert exported["acc"] == whole["acc"]


def test_an_exported_model_is_scored_against_the_datas_labels_at_top_k(trained):
    directory, printed = trained
    model = (directory / "digits.pdmodel", "--params", directory / "digits.pdiparams", "--data", directory / "test.npz")
    results = evaluate_json(*model, "--topk", "1,3")
    assert "loss" not in results and results["examples"] == 100
    scope = gradc.Scope()
    gradc.load_params(scope, directory / "digits.pdiparams", gradc.load(directory / "digits.pdmodel"))
    arrays = digits(100, "test")
    probabilities, = gradc.Executor().run(gradc.load(directory / "digits.pdmodel"), {"img": arrays["img"]},
                                          ["softmax_0.tmp_0"], scope)
    best = np.argsort(-probabilities, axis=1)
    for k in (1, 3):
        expected = np.mean([label in row[:k] for row, label in zip(best, arrays["label"][:, 0])])
        assert results[f"acc_top{k}"] == pytest.approx(expected, abs=1e-12)
    assert float(f"{results['acc_top1']:.6g}") == printed[ACC]
    # the option repeated gives both ks (it kept the last: acc_top3 alone)
    assert evaluate_json(*model, "--topk", 1, "--topk", 3) == results
    text = gradc_cli("evaluate", *model)
    assert text.stdout.splitlines() == ["examples: 100", "loss: none (the program computes no loss; an exported "
                                        "model ends at its outputs)", f"acc: {results['acc_top1']:.6g}"]


def test_bad_labels_and_missing_values_are_refused_in_one_line(trained, tmp_path):
    directory, _ = trained
    arrays = digits(100, "test")
    arrays["label"][41] = 12
    np.savez(tmp_path / "bad.npz", **arrays)
    model = (directory / "digits.pdmodel", "--params", directory / "digits.pdiparams", "--data")
    assert_clean_failure(gradc_cli("evaluate", *model, tmp_path / "bad.npz"),
                         f"data '{tmp_path / 'bad.npz'}': array 'label' holds the label 12 (example 42), but the "
                         "model's output 'softmax_0.tmp_0' scores 10 classes: a label is 0 to 9")
    assert_clean_failure(gradc_cli("evaluate", directory / "train.pb", "--params", directory / "trained.npz",
                                   "--data", tmp_path / "bad.npz"),
                         "holds the label 12 (example 42), but block 0, op 18 (softmax_with_cross_entropy) has 10 "
                         "classes")
    np.savez(tmp_path / "images.npz", img=arrays["img"])
    assert_clean_failure(gradc_cli("evaluate", *model, tmp_path / "images.npz"),
                         "the model's class scores (softmax_0.tmp_0) need labels to score; it holds only what the "
                         "model reads (img)")
    assert_clean_failure(gradc_cli("evaluate", directory / "train.pb", "--data", directory / "test.npz"),
                         "no value for the persistable var(s) conv2d_0.w_0", "give them with --params")
    assert_clean_failure(gradc_cli("evaluate", *model, directory / "test.npz", "--topk", "1,11"),
                         "top-11 accuracy of 10 classes ('softmax_0.tmp_0'): every example would count as right")
    usage = gradc_cli("evaluate", *model, directory / "test.npz", "--topk", "0")
    assert usage.returncode == 2 and "'--topk': '0': each k is 1 or more" in usage.stderr


def test_a_misspelt_fetch_is_a_usage_error_naming_the_var_meant(trained):
    """A --fetch naming no var of the program was dropped in silence: the loss and accuracy printed without it."""
    directory, _ = trained
    done = gradc_cli("evaluate", directory / "train.pb", "--params", directory / "trained.npz", "--data",
                     directory / "test.npz", "--fetch", ACC + "2")
    assert done.returncode == 2 and "Traceback" not in done.stderr and not done.stdout, done.stderr
    assert f"--fetch '{ACC}2': not a var of the program (did you mean '{ACC}'?)" in done.stderr
    with pytest.raises(gradc.errors.GradcError, match=f"--fetch '{ACC}2': not a var"):
        gradc.evaluate(directory / "train.pb", digits(10, "test"), directory / "trained.npz", fetch=[ACC + "2"])


def test_train_eval_keeps_the_mask_array_the_program_does_not_read(trained, tmp_path):
    """train --eval --mask M: M, no var of the program, was left out as unread and then refused as missing ('the data
    has no such array (it holds img, label)'), where evaluate --mask M scored with it."""
    directory, _ = trained
    arrays = digits(100, "test")
    counted = np.ones_like(arrays["label"])
    counted[:50] = 0
    np.savez(tmp_path / "masked.npz", counted=counted, **arrays)
    done = gradc_cli("train", directory / "train.pb", "--startup", EXAMPLE / "startup.pb", "--startup",
                     directory / "train.startup.pb", "--data", directory / "train.npz", "--eval",
                     tmp_path / "masked.npz", "--mask", "counted", "--topk", "1", "--save-params",
                     tmp_path / "trained.npz")
    assert done.returncode == 0, done.stderr
    line = next(line for line in done.stdout.splitlines() if line.startswith("epoch 1/1: train"))
    printed = float(line.split(" acc=")[1].split()[0])
    masked = evaluate_json(directory / "train.pb", "--params", tmp_path / "trained.npz", "--data",
                           tmp_path / "masked.npz", "--mask", "counted")
    np.savez(tmp_path / "counted.npz", **{name: value[50:] for name, value in arrays.items()})
    counted_only = evaluate_json(directory / "train.pb", "--params", tmp_path / "trained.npz", "--data",
                                 tmp_path / "counted.npz")
    assert printed == float(f"{masked['acc']:.6g}") and masked["acc"] == counted_only["acc"]
    misspelt = gradc_cli("train", directory / "train.pb", "--startup", EXAMPLE / "startup.pb", "--startup",
                         directory / "train.startup.pb", "--data", directory / "train.npz", "--eval",
                         tmp_path / "masked.npz", "--mask", "countd", "--topk", "1")
    assert_clean_failure(misspelt, "--mask countd: the data has no such array (it holds counted, img, label; did "
                                   "you mean 'counted'?)")


def test_an_accuracy_over_no_counted_label_is_undefined_and_early_stopping_does_not_keep_it(trained, tmp_path):
    """Every label masked out: the accuracy, mIoU and macro F1 were 0 (0 of 0 right), and --json wrote NaN, which
    strict JSON has no literal for; early stopping on a NaN kept epoch 1's parameters as the best for good (a NaN
    compares false with every value) and stopped the run. Now: nan with one note, "nan" in JSON, no NaN a best."""
    directory, _ = trained
    arrays = digits(100, "test")
    np.savez(tmp_path / "none.npz", counted=np.zeros_like(arrays["label"]), **arrays)
    model = (directory / "train.pb", "--params", directory / "trained.npz", "--data", tmp_path / "none.npz",
             "--mask", "counted")
    text = gradc_cli("evaluate", *model, "--topk", "1,2", "--miou", "--f1")
    assert text.returncode == 0, text.stderr
    for key in ("acc_top1", "acc_top2", "miou", "macro_f1"):
        assert f"\n{key}: nan\n" in text.stdout
    assert "no label is counted (each masked out, or its ignore_index): acc_top1, acc_top2, miou" in text.stderr
    done = gradc_cli("evaluate", *model, "--miou", "--json")
    assert done.returncode == 0, done.stderr
    strict = json.loads(done.stdout, parse_constant=lambda literal: pytest.fail(f"{literal} in --json"))
    assert strict["acc"] == strict["miou"] == "nan" and strict["class_iou"] == [None] * 10
    run = gradc_cli("train", directory / "train.pb", "--startup", EXAMPLE / "startup.pb", "--startup",
                    directory / "train.startup.pb", "--data", directory / "train.npz", "--eval", tmp_path / "none.npz",
                    "--mask", "counted", "--topk", "1", "--epochs", 3, "--early-stop", 1, "--monitor", "acc")
    assert run.returncode == 0, run.stderr
    assert "stopped early" not in run.stdout and "kept the parameters" not in run.stdout
    assert "done: 3 epochs" in run.stdout and run.stderr.count("no label is counted") == 1, run.stderr


def test_nan_class_scores_are_no_right_answer(trained, tmp_path):
    """A NaN bias makes every score NaN: no class scores above a NaN, so each example counted as right (acc 1.0 beside
    a NaN loss). Now the accuracy is undefined, with a note naming the rows."""
    directory, _ = trained
    values = dict(np.load(directory / "trained.npz"))
    values["linear_0.b_0"] = np.full_like(values["linear_0.b_0"], np.nan)
    np.savez(tmp_path / "diverged.npz", **values)
    done = gradc_cli("evaluate", directory / "train.pb", "--params", tmp_path / "diverged.npz", "--data",
                     directory / "test.npz", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["acc"] == "nan"
    assert "the scores of 100 of the 100 counted rows hold NaN: acc undefined (nan)" in done.stderr


def test_a_loss_reading_a_target_the_program_updates_in_place_later_is_left_out_as_unfed():
    """--ranking on data without the loss's target 't', which an op after the loss scales in place (t.scale_()): that
    later op was counted as computing 't', so the loss was kept and the evaluation failed "the fetches need 't'";
    it is left out with its note, as a target no op writes."""
    net = ProgramBuilder()
    x, target = net.data("x", [-1, 5], "float32"), net.data("t", [-1, 5], "float32")
    scores = net.op("scale", {"X": x}, {"scale": 2.0})[0]
    loss = net.op("reduce_mean", {"X": net.op("elementwise_sub", {"X": scores, "Y": target})[0]},
                  {"reduce_all": True})[0]
    net.block.append_op("scale", {"X": [target]}, {"Out": [target]}, {"scale": 0.5})
    data = {"x": np.random.default_rng(0).normal(size=(4, 5)).astype(np.float32), "next": np.array([0, 1, 2, 3])}
    with pytest.warns(GradcNotice, match=f"the loss '{loss}' needs 't', which the data does not hold"):
        result = gradc.evaluate(net.program, data, ranking=f"{scores},next")
    assert result["unfed_losses"] == {loss: "t"} and result["hit@1"] == np.mean(np.argmax(data["x"], 1) == [0, 1, 2, 3])


def test_an_exported_regression_is_not_scored_as_multi_label(tmp_path):
    """An export's [N, 1] output and float targets of its shape beyond 0 and 1 are a regression's, not yes/no labels:
    refused as before the multi-label scores, where it reported a micro F1 of the targets above 0.5 against the
    outputs above 0."""
    net = ProgramBuilder(seed=3)
    prediction = net.fc(net.data("x", [-1, 4]), 1)
    gradc.save(net.program, tmp_path / "reg.pb")
    gradc.save(net.startup, tmp_path / "reg.startup.pb")
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "reg.npz", x=rng.normal(size=(30, 4)).astype(np.float32),
             y=rng.normal(size=(30, 1)).astype(np.float32))
    assert gradc_cli("export", tmp_path / "reg.pb", "--startup", tmp_path / "reg.startup.pb", "-o", tmp_path / "reg",
                     "--input", "x", "--fetch", f"{prediction}=pred").returncode == 0
    run = gradc_cli("evaluate", tmp_path / "reg.pdmodel", "--params", tmp_path / "reg.pdiparams", "--data",
                    tmp_path / "reg.npz", "--json")
    assert run.returncode == 1 and run.stdout == "", run.stdout
    assert "'y' (float32, 30 values) does not label the rows of class scores 'pred' [30, 1]" in run.stderr


def test_a_binary_classifiers_squeezed_logits_are_one_label_an_example(tmp_path):
    """F.binary_cross_entropy_with_logits of logits [N] (squeezed) against labels [N]: each example one yes/no label.
    The batch's N was taken for N labels of one example: a last batch of another size failed ('operands could not
    be broadcast together with shapes (3,8) (3,6)'), and exact_match and macro_f1 changed with the batch size."""
    net = ProgramBuilder(seed=3)
    x, y = net.data("x", [-1, 4]), net.data("y", [-1], "float32")
    logit = net.op("reshape2", {"X": net.fc(x, 1)}, {"shape": [-1]})[0]
    net.op("reduce_mean", {"X": net.op("sigmoid_cross_entropy_with_logits", {"X": logit, "Label": y})[0]},
           {"reduce_all": True})
    rng = np.random.default_rng(0)
    data = {"x": rng.normal(size=(30, 4)).astype(np.float32), "y": (rng.random(30) > 0.5).astype(np.float32)}
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    params = {name: scope.find(name) for name in ("fc_0.w_0", "fc_0.b_0")}
    np.savez(tmp_path / "params.npz", **params)
    predicted = (data["x"] @ params["fc_0.w_0"] + params["fc_0.b_0"]).reshape(-1) > 0
    truth = data["y"] > 0.5
    hits = np.sum(predicted & truth)
    for batch_size in (8, 30):
        result = gradc.evaluate(net.program, data, tmp_path / "params.npz", batch_size=batch_size)
        assert result["exact_match"] == pytest.approx(np.mean(predicted == truth))
        assert result["micro_f1"] == result["macro_f1"] == pytest.approx(2 * hits / (predicted.sum() + truth.sum()))
        assert len(result["label_f1"]) == 1


def test_multi_label_scores_leave_out_the_labels_the_loss_ignores(tmp_path):
    """sigmoid_cross_entropy_with_logits leaves out a label equal to its ignore_index (-100): the loss does not count
    it, and nor do the multi-label scores, which counted it a 'no' (a false alarm where the logit was above 0)."""
    net = ProgramBuilder(seed=3)
    x, tags = net.data("x", [-1, 4]), net.data("tags", [-1, 3], "float32")
    logits = net.fc(x, 3)
    net.op("reduce_mean", {"X": net.op("sigmoid_cross_entropy_with_logits", {"X": logits, "Label": tags})[0]},
           {"reduce_all": True})
    rng = np.random.default_rng(1)
    data = {"x": rng.normal(size=(40, 4)).astype(np.float32),
            "tags": np.where(rng.random((40, 3)) < 0.3, -100, rng.random((40, 3)) > 0.5).astype(np.float32)}
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    np.savez(tmp_path / "params.npz", **{name: scope.find(name) for name in ("fc_0.w_0", "fc_0.b_0")})
    kept = data["tags"] != -100
    predicted = (data["x"] @ scope.find("fc_0.w_0") + scope.find("fc_0.b_0") > 0) & kept
    truth = (data["tags"] > 0.5) & kept
    hits, alarms, misses = (np.sum(a & b) for a, b in ((predicted, truth), (predicted, ~truth), (~predicted, truth)))
    result = gradc.evaluate(net.program, data, tmp_path / "params.npz", batch_size=16)
    assert result["micro_precision"] == pytest.approx(hits / (hits + alarms))
    assert result["micro_recall"] == pytest.approx(hits / (hits + misses))
    # an example whose every label is ignored is no example of the match
    assert result["exact_match"] == pytest.approx(np.mean((predicted == truth).all(axis=1)[kept.any(axis=1)]))


@pytest.mark.parametrize("labels, scored", [("slice", True), ("fill_any_like", False)])
def test_computed_labels_count_when_their_values_are_the_datas(labels, scored):
    """Labels the program cuts from a fed var (a caption shifted) are scored; labels of the batch's shape alone, as
    zeros_like(ids) (the positive at column 0 of an InfoNCE), are not the data's, as an arange over the batch is not:
    they gave an accuracy."""
    net = ProgramBuilder(seed=1)
    logits, ids = net.fc(net.data("x", [-1, 4]), 3), net.data("ids", [-1, 2], "int64")
    source = net.op("fill_any_like", {"X": ids}, {"value": 0.0, "dtype": 3})[0] if labels == "fill_any_like" else ids
    net.cross_entropy_loss(logits, net.op("slice", {"Input": source}, {"axes": [1], "starts": [1], "ends": [2]})[0])
    rng = np.random.default_rng(0)
    data = {"x": rng.normal(size=(10, 4)).astype(np.float32), "ids": rng.integers(0, 3, (10, 2))}
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    result = gradc.evaluate(net.program, data, scope=scope)
    assert ("acc" in result) == scored
    if scored:
        predicted = np.argmax(data["x"] @ scope.find("fc_0.w_0") + scope.find("fc_0.b_0"), axis=1)
        assert result["acc"] == pytest.approx(np.mean(predicted == data["ids"][:, 1]))


def test_a_scalar_written_in_place_is_averaged_as_it_is_fetched():
    """A loss scaled in place (scale with Out = X, as an in-place API writes it): the search for a sum of a masked
    mean and other terms followed the op back to itself ('internal error: RecursionError')."""
    net = ProgramBuilder(seed=1)
    x = net.data("x", [-1, 2])
    loss = net.mean(net.fc(x, 1))
    net.block.append_op("scale", {"X": [loss]}, {"Out": [loss]}, {"scale": 2.0, "bias": 0.0})
    data = {"x": np.random.default_rng(0).normal(size=(6, 2)).astype(np.float32)}
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    result = gradc.evaluate(net.program, data, scope=scope, batch_size=4)
    outputs = data["x"] @ scope.find("fc_0.w_0") + scope.find("fc_0.b_0")
    assert result["loss"] == pytest.approx((2 * outputs[:4].mean() * 4 + 2 * outputs[4:].mean() * 2) / 6, rel=1e-6)
