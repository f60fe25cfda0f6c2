"""--json of gradc compile, precision and train (and the loss check --json names): strict JSON field by field on
good input, and on bad input an empty stdout, one `gradc: error:` line, exit 1 (2 for usage); train's JSON lines."""

import re
import signal

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.commands.train_report import JsonLinesReporter
from json_checks import document, refused, strict

MLP, FIRST_DAY, SGD = DATA / "mlp", DATA / "first_day", DATA / "train_sgd"
GIVEN = ("--feed", MLP / "feed.npz", "--params", MLP / "params.npz")
PARAMS = ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]


def test_compile_json_names_the_files_ops_loss_gradients_and_optimizer(tmp_path):
    out = tmp_path / "train.pb"
    doc = document(gradc_cli("compile", MLP / "forward.pb", "-o", out, "--optimizer", "adam", "--json"))
    startup = tmp_path / "train.startup.pb"
    assert (doc["program"], doc["output"], doc["startup"]) == (str(MLP / "forward.pb"), str(out), str(startup))
    assert (doc["ops_before"], doc["ops_after"]) == (7, gradc.load(out).num_ops())
    assert doc["ops_after"] == 7 + 8 + 4   # the forward, its backward (as backward.pb), an adam op per parameter
    assert gradc.load(startup).num_ops() > 0
    assert (doc["loss"], doc["optimizer"], doc["passes"], doc["notes"], doc["warnings"]) == (
        "mean_0.tmp_0", "adam", {}, [], [])
    assert doc["parameters"] == [{"parameter": name, "gradient": f"{name}@GRAD"} for name in PARAMS]
    text = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "text.pb", "--optimizer", "adam").stdout
    table = [line.split() for line in text.splitlines()[1:5]]
    assert table == [[p["parameter"], p["gradient"]] for p in doc["parameters"]]   # the text's table
    assert (tmp_path / "text.pb").read_bytes() == out.read_bytes()


def test_compile_json_gives_the_notes_the_warnings_and_a_pass_result(tmp_path):
    picked = gradc_cli("compile", FIRST_DAY / "forward.pb", "-o", tmp_path / "a.pb", "--recompute", "auto", "--json")
    note = ("the loss is mean_1.tmp_0, the one float scalar no op reads (the last op, softmax, writes none); name "
            "another with --loss (loss= in Python)")
    assert picked.returncode == 0 and picked.stderr == f"gradc: note: {note}\n"   # stderr shows it as without --json
    doc = strict(picked.stdout)
    assert (doc["loss"], doc["warnings"], doc["startup"], doc["optimizer"]) == (
        "mean_1.tmp_0", [{"kind": "note", "message": note}], None, None)
    text = gradc_cli("compile", FIRST_DAY / "forward.pb", "-o", tmp_path / "b.pb", "--recompute", "auto").stdout
    assert f"recompute: {doc['passes']['recompute']}" in text.splitlines() and list(doc["passes"]) == ["recompute"]
    model = DATA / "add_loss" / "mse_legacy.pdmodel"
    added = document(gradc_cli("compile", model, "-o", tmp_path / "c.pb", "--add-loss", "mse", "--json"))
    assert added["notes"] == ["marked 4 persistable vars parameters (the file marks none): linear_4.b_0, "
                              "linear_4.w_0, linear_5.b_0, linear_5.w_0",
                              "added the loss mean_0.tmp_0: mse of the output against the input label"]
    assert (added["loss"], added["ops_before"], len(added["parameters"])) == ("mean_0.tmp_0", 7, 4)
    frozen = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "d.pb", *[a for p in PARAMS
                                                                                  for a in ("--no-grad", p)], "--json")
    warned = strict(frozen.stdout)
    assert warned["parameters"] == [] and [w["kind"] for w in warned["warnings"]] == ["warning"]
    assert warned["warnings"][0]["message"].startswith("no parameter gets a gradient")
    assert frozen.stderr == f"gradc: warning: {warned['warnings'][0]['message']}\n"


def test_compile_json_of_bad_input_prints_nothing_and_writes_nothing(tmp_path):
    out = tmp_path / "out.pb"
    assert "'nowhere'" in refused(gradc_cli("compile", MLP / "forward.pb", "-o", out, "--loss", "nowhere", "--json"))
    assert "missing.pb" in refused(gradc_cli("compile", tmp_path / "missing.pb", "-o", out, "--json"))
    assert "already has backward ops" in refused(gradc_cli("compile", MLP / "backward.pb", "-o", out, "--optimizer",
                                                           "sgd", "--json"))
    assert not out.exists() and not (tmp_path / "out.startup.pb").exists()
    assert "--json" in refused(gradc_cli("compile", MLP / "forward.pb", "-o", "-", "--json"), code=2)


def test_check_json_names_the_loss_it_picked():
    startup = ("--startup", FIRST_DAY / "startup.pb", "--feed", FIRST_DAY / "feed.npz", "--max-elements", "3")
    picked = gradc_cli("check", FIRST_DAY / "forward.pb", *startup, "--json")
    assert picked.returncode == 0 and picked.stderr.startswith("gradc: note: the loss is mean_1.tmp_0")
    doc = strict(picked.stdout)
    assert (doc["loss"], doc["ok"], len(doc["vars"])) == ("mean_1.tmp_0", True, 4)
    named = document(gradc_cli("check", FIRST_DAY / "forward.pb", *startup, "--loss", "mean_0.tmp_0", "--json"))
    assert named["loss"] == "mean_0.tmp_0" and named["vars"] != doc["vars"]


def test_precision_json_gives_the_texts_rows_and_eps():
    doc = document(gradc_cli("precision", MLP / "forward.pb", *GIVEN, "--top", "4", "--json"))
    text = gradc_cli("precision", MLP / "forward.pb", *GIVEN, "--top", "4").stdout.splitlines()
    assert doc["program"] == str(MLP / "forward.pb") and doc["eps"] == float(np.finfo(np.float32).eps)
    assert len(doc["rows"]) == 4 and all(row["eps"] == doc["eps"] for row in doc["rows"])
    for row, line in zip(doc["rows"], text[1:5]):
        op, kind, output, dtype, error, inputs, growth, own = line.split()
        assert (row["op"], row["type"], row["output"], row["dtype"]) == (int(op), kind, output, dtype)
        assert (f"{row['error']:.1e}", f"{row['inputs']:.1e}", f"{row['growth']:.3g}", f"{row['own']:.1e}") == (
            error, inputs, growth, own)
        assert row["growth"] == pytest.approx(row["error"] / max(row["inputs"], row["eps"]))
    assert doc["rows"][0]["error"] >= doc["rows"][-1]["error"] > 0   # worst first


def test_precision_json_of_bad_input_prints_nothing():
    assert "no value" in refused(gradc_cli("precision", MLP / "forward.pb", "--feed", MLP / "feed.npz", "--json"))


def lines(done, code: int = 0) -> list[dict]:
    """gradc train --json: every stdout line one strict JSON object."""
    assert done.returncode == code, done.stderr
    return [strict(line) for line in done.stdout.splitlines()]


def sgd(*args):
    return gradc_cli("train", SGD / "train.pb", "--startup", SGD / "startup.pb", "--params", SGD / "params.npz", *args)


def test_train_json_streams_paddles_losses_then_the_end(tmp_path):
    saved = tmp_path / "model.npz"
    records = lines(sgd("--feed", SGD / "feed.npz", "--steps", "3", "--log-every", "2", "--save-params", saved,
                        "--json"))
    step, last, end = records
    assert [(r["event"], r["step"], r["epoch"], r["batch"]) for r in (step, last)] == [("step", 2, None, None),
                                                                                       ("step", 3, None, None)]
    paddle = np.load(SGD / "losses.npy")   # Paddle's three SGD steps on this batch
    assert [step["values"]["mean_1.tmp_0"], last["values"]["mean_1.tmp_0"]] == pytest.approx(paddle[1:], rel=1e-5)
    assert (end["event"], end["steps"], end["epochs"], end["examples"], end["eval"]) == ("end", 3, None, 24, {})
    assert end["last"] == last["values"] and 0 < end["seconds"] < 60
    assert (end["saved_params"], end["plot"], end["checkpoint_dir"]) == (str(saved), None, None) and saved.exists()
    assert (end["stopped_early"], end["kept_epoch"], end["interrupted"]) == (False, None, False)


@pytest.fixture
def twice(tmp_path):
    """The fixture's batch of 8 twice: two batches an epoch (the program takes batches of exactly 8)."""
    with np.load(SGD / "feed.npz") as feed:
        arrays = {name: np.concatenate([feed[name], feed[name]]) for name in feed.files}
    np.savez(tmp_path / "two.npz", **arrays)
    arrays["x"][12, 0] = np.nan   # in the second batch
    np.savez(tmp_path / "nan.npz", **arrays)
    return tmp_path


def test_train_json_gives_each_step_and_epoch_as_the_text_does(twice):
    args = ("--data", twice / "two.npz", "--batch-size", "8", "--epochs", "3", "--eval", SGD / "feed.npz",
            "--log-every", "1", "--checkpoint-dir", twice / "ck")
    records = lines(sgd(*args, "--json"))
    text = sgd(*args[:-2]).stdout
    steps = [r for r in records if r["event"] == "step"]
    epochs = [r for r in records if r["event"] == "epoch"]
    assert [(r["step"], r["epoch"], r["batch"]) for r in steps] == [(1, 1, 1), (2, 1, 2), (3, 2, 1), (4, 2, 2),
                                                                    (5, 3, 1), (6, 3, 2)]
    logged = [float(value) for value in re.findall(r"step \d/2: mean_1.tmp_0=(\S+)", text)]
    assert [r["values"]["mean_1.tmp_0"] for r in steps] == pytest.approx(logged, rel=1e-5)
    means = [(float(a), float(b)) for a, b in re.findall(r"train mean_1.tmp_0=(\S+) \| eval mean_1.tmp_0=(\S+)", text)]
    assert [(r["epoch"], r["step"]) for r in epochs] == [(1, 2), (2, 4), (3, 6)]
    assert [(r["train"]["mean_1.tmp_0"], r["eval"]["mean_1.tmp_0"]) for r in epochs] == [
        pytest.approx(pair, rel=1e-5) for pair in means]
    assert records[2] == epochs[0] and records[-1]["event"] == "end"   # each epoch after its steps, the end last
    end = records[-1]
    assert (end["steps"], end["epochs"], end["examples"], end["checkpoint_dir"]) == (6, 3, 48, str(twice / "ck"))
    assert end["eval"] == epochs[-1]["eval"] and end["last"] == steps[-1]["values"]
    assert any((twice / "ck").iterdir())


def test_train_json_says_an_early_stop_and_the_epoch_kept(twice):
    records = lines(sgd("--data", twice / "two.npz", "--batch-size", "8", "--epochs", "6", "--eval",
                        SGD / "feed.npz", "--early-stop", "1", "--lr", "3", "--json"))
    epochs, end = [r for r in records if r["event"] == "epoch"], records[-1]
    assert (end["stopped_early"], end["kept_epoch"], end["epochs"]) == (True, 1, 2)
    assert epochs[1]["eval"]["mean_1.tmp_0"] > epochs[0]["eval"]["mean_1.tmp_0"] == end["eval"]["mean_1.tmp_0"]


def test_train_json_stopped_by_an_error_has_no_end_line(twice):
    stopped = sgd("--data", twice / "nan.npz", "--batch-size", "8", "--log-every", "1", "--check-nan", "--json")
    assert stopped.returncode == 1 and stopped.stderr.startswith("gradc: error: step 2: ")
    assert len(stopped.stderr.splitlines()) == 1
    assert [r["event"] for r in lines(stopped, 1)] == ["step"]   # step 1 came before the error; no "end"
    unchecked = lines(sgd("--data", twice / "nan.npz", "--batch-size", "8", "--log-every", "1", "--json"))
    assert unchecked[1]["values"] == {"mean_1.tmp_0": "nan"} and unchecked[-1]["last"] == {"mean_1.tmp_0": "nan"}


def test_train_json_stopped_by_ctrl_c_ends_with_an_interrupted_end_line(twice, monkeypatch):
    logged = JsonLinesReporter.step

    def ctrl_c_at_step_3(self, step, epoch, batch, values):
        logged(self, step, epoch, batch, values)
        if step == 3:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(JsonLinesReporter, "step", ctrl_c_at_step_3)
    monkeypatch.chdir(twice)
    stopped = sgd("--data", twice / "two.npz", "--batch-size", "8", "--epochs", "3", "--log-every", "1",
                  "--save-params", "kept.npz", "--json")
    records = lines(stopped, 130)   # the exit code of the text's Ctrl-C
    assert [r["event"] for r in records] == ["step", "step", "epoch", "step", "end"]
    end = records[-1]
    assert (end["interrupted"], end["steps"], end["epochs"], end["examples"]) == (True, 3, 1, 24)
    assert end["last"] == records[3]["values"] and end["eval"] == {} and 0 < end["seconds"] < 60
    assert (end["checkpoint_dir"], end["saved_params"], end["plot"]) == ("train.interrupted", "kept.npz", None)
    assert (twice / "kept.npz").exists() and any((twice / "train.interrupted").iterdir())
    said = stopped.stderr.splitlines()
    assert len(said) == 2 and said[1].startswith("gradc: interrupted after step 3 (epoch 2, batch 1); checkpoint "
                                                 "saved in train.interrupted")
    monkeypatch.setattr(JsonLinesReporter, "step", logged)
    resumed = lines(sgd("--data", twice / "two.npz", "--batch-size", "8", "--epochs", "3", "--resume",
                        "train.interrupted", "--json"))[-1]
    assert (resumed["interrupted"], resumed["steps"], resumed["epochs"]) == (False, 6, 3)


def test_train_json_of_bad_input_prints_nothing(tmp_path):
    assert "missing.npz" in refused(sgd("--feed", tmp_path / "missing.npz", "--json"))
    assert "--json" in refused(sgd("--feed", SGD / "feed.npz", "--save-params", "-", "--json"), code=2)
