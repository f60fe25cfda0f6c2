"""A tabular data scientist's week (docs/tools.md): a wide-and-deep churn and spend model over a customer table built
with Paddle 3.3.1's layers (tools/paddle_user_week24.py: numeric columns standardised by a persistable mean and std,
a region id and a 64-bit hashed merchant id (modulo 1000 buckets) through embeddings, a TabNet-lite sigmoid feature
gate, a class-weighted binary cross-entropy (pos_weight) and a Huber loss, paddle.static.auc and accuracy), trained
by Paddle's Adam from CSV files with gradc's CLI: step by step against Paddle, early stopping on a validation CSV, the
CSV's bad cells, a seeded shuffle, and the export scoring a new CSV; each fault found, as the behaviour it has now."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked

WEEK = DATA / "user_week24"
META = json.loads((WEEK / "meta.json").read_text())
NAMES, STEPS = META["names"], META["steps"]
LOSS, AUC, ACCURACY = NAMES["loss"], NAMES["auc"], NAMES["accuracy"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The week's files unpacked, and model.pb compiled with Paddle's optimizer (Adam 0.01), the mean and std left
    out of training (a legacy .pb keeps no trainable=False)."""
    out = unpacked(WEEK, tmp_path_factory.mktemp("week24"))
    compiled = gradc_cli("compile", out / "model.pb", "-o", out / "train.pb", "--optimizer", "adam", "--lr", 0.01,
                         "--loss", LOSS, "--no-grad", "norm.*")
    assert compiled.returncode == 0, compiled.stderr
    return out


def _train(files, data, *options) -> tuple[list[dict], str]:
    """train.pb from Paddle's startup over ``data``, batches of 32, each step's loss, AUC and accuracy; the step
    values and the summary lines."""
    run = gradc_cli("train", files / "train.pb", "--startup", files / "startup.pb", "--startup",
                    files / "train.startup.pb", "--data", data, "--batch-size", 32, "--json", "--log-every", 1,
                    "--fetch", LOSS, "--fetch", AUC, "--fetch", ACCURACY, *options)
    assert run.returncode == 0, run.stderr
    lines = [json.loads(line) for line in run.stdout.splitlines()]
    return [line["values"] for line in lines if line["event"] == "step"], run.stderr


def test_the_default_loss_passes_over_the_metrics_constants(files):
    """paddle.static.auc leaves a fill_constant of its unused ins_tag_weight ([1, 1], 1.0) that no op reads, and
    accuracy's top_k_v2 is the last op before it. Before, gradc compile without --loss stopped: "cannot pick the loss
    by itself: ... float scalars no op reads: tmp_6, fill_constant_7.tmp_0". An op that reads nothing writes a
    constant, no loss: the loss is tmp_6, the weighted cross-entropy plus half the Huber loss, with the note (which
    named accuracy's top_k_v2 as the last op until week 47: now the last op before the metrics)."""
    run = gradc_cli("compile", files / "model.pb", "-o", files / "default.pb", "--optimizer", "adam", "--no-grad",
                    "norm.*")
    assert run.returncode == 0, run.stderr
    assert run.stderr.splitlines()[0] == (f"gradc: note: the loss is {LOSS}, the one float scalar no op reads (the "
                                          f"last op before the metrics (accuracy, auc), concat, writes none); name "
                                          f"another with --loss (loss= in Python)")


def test_hashed_ids_train_to_paddles_losses_auc_and_accuracy(files):
    """The merchant column holds 64-bit hashes (2**52 to 2**62) the program takes modulo 1000. Before, the CSV's
    cells were read through float64, which holds 53 bits: 249 of the 256 rows fell in another bucket, and the first
    loss was 2.69711 where Paddle's is 2.69938 (1.5% off over the 16 steps, the AUC 0.015). Now an int64 column is
    read as integers: 2 epochs of train.csv give Paddle's 16 losses to 1e-6, its cumulative AUC (the auc op's
    persistable counts) and accuracy exactly."""
    steps, _ = _train(files, files / "train.csv", "--epochs", 2, "--save-params", files / "two_epochs.npz")
    np.testing.assert_allclose([step[LOSS] for step in steps], STEPS["loss"], rtol=1e-6)
    np.testing.assert_allclose([step[AUC] for step in steps], STEPS["auc"], rtol=1e-12)
    assert [step[ACCURACY] for step in steps] == STEPS["accuracy"]
    trained, paddle = np.load(files / "two_epochs.npz"), np.load(files / "trained.npz")
    for name in paddle.files:
        np.testing.assert_allclose(trained[name], paddle[name], atol=1e-6, err_msg=name)


def test_saved_model_parameters_are_what_paddles_pdparams_holds(files):
    """Before, --save-params wrote 21 values: the model's 17 and the auc op's 4 running counts (_generated_var_0 to
    3), which paddle.static.save writes to .pdopt (they are no Parameter: Paddle 3.3.1's .pdparams of a program with
    an auc holds the parameters alone, checked by hand). Now the model's file holds the 17 trained.npz names, and
    a .pdopt the counts beside the optimizer's state."""
    _train(files, files / "train.csv", "--steps", 1, "--save-params", files / "one_step.npz")
    assert sorted(np.load(files / "one_step.npz").files) == sorted(np.load(files / "trained.npz").files)
    program = gradc.load(files / "train.pb")
    trainer = gradc.Trainer(program, [files / "startup.pb", files / "train.startup.pb"])
    saved = gradc.save_params(trainer.scope, files / "state.pdopt", program)
    counts = [f"_generated_var_{i}" for i in range(4)]
    assert set(counts) <= set(saved) and "deep1.w_0_moment1_0" in saved and "norm.mean" not in saved


def _with_cell(files, row: int, column: int, value: str) -> str:
    lines = (files / "train.csv").read_text().splitlines()
    cells = lines[row - 1].split(",")
    cells[column - 1] = value
    lines[row - 1] = ",".join(cells)
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("row, column, cell, said", [
    (5, 2, "", "the cell is empty (gradc reads no missing values: fill them in, as pandas' fillna does, or leave the "
               "row out)"),
    (7, 3, "n/a", "'n/a' is not a number"),
    (9, 1, "nan", "'nan' is not a finite number (gradc reads no missing or infinite values: a loss over them is nan)"),
    (9, 4, "-inf", "'-inf' is not a finite number (gradc reads no missing or infinite values: a loss over them is "
                   "nan)"),
    (11, 7, "nan", "'nan' is not a finite number (gradc reads no missing or infinite values: a loss over them is nan)"),
    (11, 7, "", "the cell is empty (gradc reads no missing values"),
    (12, 5, "2.5", "'2.5' is not a whole number, but var 'region' is int64"),
    (13, 6, str(2**64), f"'{2**64}' is out of int64's range"),
])
def test_a_bad_cell_is_one_error_naming_file_line_and_column(files, row, column, cell, said):
    """Before, a 'nan' or 'inf' cell was read as a number without a word (the first loss nan), a nan in the int64
    label column was refused as "column 'churn' holds fractions" naming no line, and an empty cell was "'' is not a
    number". Now each bad cell is one error line naming the file, its line and column and what is wrong."""
    bad = files / f"bad_{row}_{column}.csv"
    bad.write_text(_with_cell(files, row, column, cell))
    run = gradc_cli("train", files / "train.pb", "--startup", files / "startup.pb", "--startup",
                    files / "train.startup.pb", "--data", bad)
    name = (files / "train.csv").read_text().split("\n", 1)[0].split(",")[column - 1]
    assert run.returncode == 1 and run.stdout == ""
    assert run.stderr.startswith(f"gradc: error: data '{bad}', line {row}, column {column} ('{name}'): {said}")
    assert len(run.stderr.splitlines()) == 1


def test_a_pandas_csv_with_its_index_crlf_lines_and_quoted_names_trains_as_the_plain_one(files):
    """What DataFrame.to_csv writes by default: its index as a first column with no name. Before, gradc train stopped:
    "column '' names no var of the program". Now an unnamed column is left out with a note saying why; quoted names,
    CRLF line ends and the columns in another order read as train.csv does: the same 8 losses bit for bit."""
    header, *rows = (files / "train.csv").read_text().splitlines()
    order = [6, 7, 5, 4, 0, 1, 2, 3]   # churn, spend, merchant, region, num x 4
    names = header.split(",")
    lines = [",".join(['""'] + [f'"{names[i]}"' for i in order])]
    lines += [",".join([str(index)] + [row.split(",")[i] for i in order]) for index, row in enumerate(rows)]
    (files / "pandas.csv").write_bytes("\r\n".join(lines).encode() + b"\r\n")
    plain, _ = _train(files, files / "train.csv")
    steps, stderr = _train(files, files / "pandas.csv")
    assert [step[LOSS] for step in steps] == [step[LOSS] for step in plain]
    assert (f"gradc: note: data '{files / 'pandas.csv'}': column 1 left out: no name in the header (pandas' to_csv "
            f"writes its index so; index=False leaves it out)") in stderr


def test_a_seeded_shuffle_repeats_and_another_seed_draws_another_order(files):
    """--shuffle --seed 5 twice gives the same 16 losses bit for bit; seed 6, and no shuffle, other ones (no
    fault)."""
    runs = [[step[LOSS] for step in _train(files, files / "train.csv", "--epochs", 2, *options)[0]]
            for options in (("--shuffle", "--seed", 5), ("--shuffle", "--seed", 5), ("--shuffle", "--seed", 6), ())]
    assert runs[0] == runs[1]
    assert runs[0] != runs[2] and runs[0] != runs[3] and runs[2] != runs[3]


def test_early_stopping_on_the_validation_auc_keeps_the_best_epoch(files):
    """--eval valid.csv --early-stop 2 --monitor the AUC: the run stops and keeps the best epoch's parameters, and
    gradc evaluate of them on valid.csv gives that epoch's AUC (the set's, its counts from zero, not training's),
    which is the ROC area of the probabilities the exported model scores (gradc run --feed valid.csv, below) to 2e-3
    (the auc op's 4095 thresholds). The early stop and the evaluation: no fault."""
    run = gradc_cli("train", files / "train.pb", "--startup", files / "startup.pb", "--startup",
                    files / "train.startup.pb", "--data", files / "train.csv", "--eval", files / "valid.csv",
                    "--batch-size", 32, "--epochs", 30, "--shuffle", "--seed", 3, "--fetch", LOSS, "--fetch", AUC,
                    "--early-stop", 2, "--monitor", AUC, "--save-params", files / "best.npz")
    assert run.returncode == 0, run.stderr
    kept = next(line for line in run.stdout.splitlines() if line.startswith("kept the parameters of epoch"))
    best = float(kept.rsplit("=", 1)[1])
    assert "stopped early" in run.stdout
    evaluated = gradc_cli("evaluate", files / "train.pb", "--params", files / "best.npz", "--data",
                          files / "valid.csv", "--fetch", AUC, "--json")
    assert evaluated.returncode == 0, evaluated.stderr
    assert json.loads(evaluated.stdout)[AUC] == pytest.approx(best, rel=1e-5)
    probability = _scores(files, files / "best.npz", files / "valid.csv", "best")["probability"].ravel()
    labels = np.loadtxt(files / "valid.csv", delimiter=",", skiprows=1, usecols=6)
    positive, negative = probability[labels == 1], probability[labels == 0]
    roc = ((positive[:, None] > negative).mean() + 0.5 * (positive[:, None] == negative).mean())
    assert roc == pytest.approx(best, abs=2e-3)


def _scores(files, params, data, name: str) -> dict:
    """train.pb exported with ``params`` (inputs num, region, merchant; the churn probability and the spend) and
    run with gradc run --feed ``data``."""
    exported = files / f"{name}.pdmodel"
    run = gradc_cli("export", files / "train.pb", "--params", params, "--input", "num", "--input", "region",
                    "--input", "merchant", "--fetch", f"{NAMES['probability']}=probability", "--fetch",
                    f"{NAMES['spend']}=predicted_spend", "-o", exported)
    assert run.returncode == 0, run.stderr
    run = gradc_cli("run", exported, "--params", exported.with_suffix(".pdiparams"), "--feed", data, "-o",
                    files / f"{name}_scores.npz")
    assert run.returncode == 0, run.stderr
    return dict(np.load(files / f"{name}_scores.npz"))


def test_the_exported_model_scores_a_new_csv_as_paddles_predictor(files):
    """Before, gradc run --feed new.csv said "cannot read feed 'new.csv': not an .npz archive": a table to score had
    to be turned into an .npz first. Now --feed reads a .csv as --data does: the export of train.pb with Paddle's
    trained weights scores new.csv's 40 rows (their hashed ids whole) as Paddle's Predictor does, to 1e-6; Paddle's
    own saved scorer run by gradc on it gives the same; valid.csv's label columns are left out with a warning."""
    scores, paddle = _scores(files, files / "trained.npz", files / "new.csv", "scorer"), np.load(files / "scores.npz")
    np.testing.assert_allclose(scores["probability"], paddle["probability"], atol=1e-6)
    np.testing.assert_allclose(scores["predicted_spend"], paddle["spend"], atol=1e-5, rtol=1e-6)
    run = gradc_cli("run", files / "score.pdmodel", "--params", files / "trained.npz", "--feed", files / "new.csv",
                    "-o", files / "paddle_scorer.npz")
    assert run.returncode == 0, run.stderr
    probability, spend = np.load(files / "paddle_scorer.npz").values()
    np.testing.assert_allclose(probability, paddle["probability"], atol=1e-6)
    np.testing.assert_allclose(spend, paddle["spend"], atol=1e-5, rtol=1e-6)
    run = gradc_cli("run", files / "scorer.pdmodel", "--params", files / "scorer.pdiparams", "--feed",
                    files / "valid.csv")
    assert run.returncode == 0, run.stderr
    assert "holds arrays the model does not take (churn, spend; its inputs: " in run.stderr


def test_a_label_column_named_as_an_exported_output_is_left_out_as_the_other_labels(files):
    """Exported with its probability named after the label (--fetch ...=churn), the model declares a var 'churn'.
    Before, gradc run --feed valid.csv fed valid.csv's churn column into it without a word (the warning named spend
    alone); now a column naming a var the saved model writes is left out with the warning, as one it does not
    declare is, and the probabilities are those of the model named otherwise."""
    run = gradc_cli("export", files / "train.pb", "--params", files / "trained.npz", "--input", "num", "--input",
                    "region", "--input", "merchant", "--fetch", f"{NAMES['probability']}=churn", "-o",
                    files / "churn.pdmodel")
    assert run.returncode == 0, run.stderr
    run = gradc_cli("run", files / "churn.pdmodel", "--params", files / "churn.pdiparams", "--feed",
                    files / "valid.csv", "-o", files / "churn_scores.npz")
    assert run.returncode == 0, run.stderr
    assert "holds arrays the model does not take (churn, spend; its inputs: " in run.stderr
    scores = _scores(files, files / "trained.npz", files / "valid.csv", "valid")
    np.testing.assert_array_equal(np.load(files / "churn_scores.npz")["churn"], scores["probability"])


def test_check_of_the_embedding_tables_draws_looked_up_rows(files):
    """gradc check of the loss over valid.csv's first 8 rows (--feed a .csv) with --max-elements 50: before, the 50
    elements drawn of merchant.emb (8000) and merchant.wide (1000) all fell in rows no example looks up, zero both
    ways, and the check reported max |compiled - numeric| 0.00e+00 having checked nothing. Now at least half of an
    element draw has a nonzero computed gradient where there are as many (the 8 looked-up rows): both tables are
    checked there and agree with central differences (every other parameter too)."""
    (files / "batch.csv").write_text("\n".join((files / "valid.csv").read_text().splitlines()[:9]) + "\n")
    run = gradc_cli("check", files / "model.pb", "--loss", LOSS, "--feed", files / "batch.csv", "--params",
                    files / "trained.npz", "--startup", files / "startup.pb", "--max-elements", 50, "--json")
    assert run.returncode == 0, run.stdout
    checked = {var["var"]: var for var in json.loads(run.stdout)["vars"]}
    assert len(checked) == 15 and all(var["max_abs_error"] < 1e-8 for var in checked.values())
    assert all(checked[table]["checked"] == 50 and checked[table]["max_abs_error"] > 0
               for table in ("merchant.emb", "merchant.wide"))
