"""A user's whole training workflow on the command line (compile, train with evaluation, checkpoints, export, view)
and the mistakes made along it: each refused before it costs an epoch, in one line, with nothing half written."""

import json

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from test_cli import assert_clean_failure
from test_training_loop import EXAMPLE, digits

MLP = EXAMPLE.parent / "mlp"
LOSS = "mean_0.tmp_0"   # the loss of both examples


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    directory = tmp_path_factory.mktemp("workflow")
    done = gradc_cli("compile", EXAMPLE / "forward.pb", "-o", directory / "train.pb", "--optimizer", "adam",
                     "--lr", "0.01")
    assert done.returncode == 0, done.stderr
    np.savez(directory / "train.npz", **digits(64))
    np.savez(directory / "test.npz", **digits(20, "test"))
    return directory


def train(directory, *extra):
    return gradc_cli("train", directory / "train.pb", "--startup", EXAMPLE / "startup.pb", "--startup",
                     directory / "train.startup.pb", "--batch-size", "32", "--fetch", LOSS, *extra)


def refit(tmp_path, name, change, part="test", count=20):
    arrays = digits(count, part)
    change(arrays)
    np.savez(tmp_path / name, **arrays)
    return tmp_path / name


@pytest.mark.parametrize("change, phrase", [
    (lambda a: a.update(img=a["img"].astype(np.float64)), "'img', read first by block 0, "
     "op 0 (conv2d), is float64, but block 0 declares float32"),
    (lambda a: a.update(img=a["img"].reshape(len(a["img"]), 64)), "'img', read first by block 0, "
     "op 0 (conv2d), has shape [20, 64]"),
    (lambda a: a.update(image=a.pop("img")), "'image' is not a var of block 0"),
    (lambda a: a.pop("label"), "need 'label'"),
])
def test_eval_data_is_checked_before_the_first_epoch(compiled, tmp_path, change, phrase):
    bad = refit(tmp_path, "eval.npz", change)
    done = train(compiled, "--data", compiled / "train.npz", "--eval", bad, "--checkpoint-dir", tmp_path / "ckpt")
    assert_clean_failure(done, f"eval data '{bad}'", phrase)
    assert "epoch" not in done.stdout and not (tmp_path / "ckpt").exists()


@pytest.mark.parametrize("change, phrase", [
    (lambda a: a.pop("label"), "has no array 'label', which block 0, op 17 (accuracy) reads"),
    (lambda a: a.update(label=a["label"].astype(np.float32)), "'label', read first by block 0, "
     "op 17 (accuracy), is float32, but block 0 declares int64"),
])
def test_training_data_is_checked_before_the_first_step(compiled, tmp_path, change, phrase):
    bad = refit(tmp_path, "train.npz", change, "train", 40)
    done = train(compiled, "--data", bad, "--checkpoint-dir", tmp_path / "ckpt")
    assert_clean_failure(done, f"data '{bad}'", phrase)
    assert "step" not in done.stdout and not (tmp_path / "ckpt").exists()


def test_the_last_partial_batch_is_checked_too(compiled, tmp_path):
    program = tmp_path / "fixed.pb"
    fixed = gradc.load(compiled / "train.pb")
    for name in ("img", "label"):   # a program built for batches of exactly 32
        fixed.global_block.find_var(name).shape[0] = 32
    gradc.save(fixed, program)
    data = refit(tmp_path, "train.npz", lambda a: None, "train", 40)
    done = gradc_cli("train", program, "--startup", EXAMPLE / "startup.pb", "--startup", compiled / "train.startup.pb",
                     "--batch-size", "32", "--data", data)
    assert_clean_failure(done, "'img', read first by block 0, op 0 (conv2d), has shape [8, 1, 8, 8], but block 0 "
                         "declares "
                         "[32, 1, 8, 8]")
    assert "step" not in done.stdout
    assert train(compiled, "--data", data, "--drop-last").returncode == 0


def test_view_without_output_writes_the_page_beside_the_program_and_says_where(tmp_path):
    program = tmp_path / "train.pb"
    program.write_bytes((EXAMPLE / "forward.pb").read_bytes())
    done = gradc_cli("view", program)
    assert done.returncode == 0, done.stderr
    page = tmp_path / "train.html"
    assert page.read_text().startswith("<!DOCTYPE html>")
    assert f"wrote {page} " in done.stdout and page.as_uri() in done.stdout


@pytest.fixture
def extra_params(tmp_path):
    with np.load(MLP / "params.npz") as given:
        values = dict(given)
    np.savez(tmp_path / "extra.npz", **values, fc_9_w_0=np.zeros(3, np.float32), linear_0_w_0=np.zeros(3, np.float32))
    return tmp_path / "extra.npz"


def test_params_the_program_does_not_have_are_named_in_a_warning(extra_params):
    done = gradc_cli("run", MLP / "forward.pb", "--params", extra_params, "--feed", MLP / "feed.npz", "--fetch", LOSS)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"gradc: warning: params '{extra_params}': 2 of its 6 values name no var of the program (fc_9_w_0, "
        f"linear_0_w_0); the program does not use them (--strict-params, strict=True in Python, refuses such a file)"]
    with pytest.warns(gradc.GradcWarning, match="fc_9_w_0, linear_0_w_0"):
        gradc.load_params(gradc.Scope(), extra_params, gradc.load(MLP / "forward.pb"))


@pytest.mark.parametrize("command", [
    ["run", MLP / "forward.pb", "--feed", MLP / "feed.npz", "--fetch", LOSS],
    ["export", MLP / "forward.pb", "--input", "x", "--fetch", "fc_1.tmp_1", "-o", "{tmp}/model"],
    ["train", "{sgd}", "--feed", MLP / "feed.npz", "--steps", "1"],
])
def test_strict_params_refuses_them(extra_params, tmp_path, tmp_path_factory, command):
    sgd = tmp_path_factory.mktemp("sgd") / "train.pb"   # a training program, outside the dir that must stay empty
    assert gradc_cli("compile", MLP / "forward.pb", "-o", sgd, "--optimizer", "sgd").returncode == 0
    done = gradc_cli(*[str(arg).format(tmp=tmp_path, sgd=sgd) for arg in command], "--params", extra_params,
                     "--strict-params")
    assert_clean_failure(done, f"params '{extra_params}'", "(fc_9_w_0, linear_0_w_0): is it another model's file?")
    assert list(tmp_path.iterdir()) == [extra_params]
    with pytest.raises(gradc.GradcError, match="another model's file"):
        gradc.load_params(gradc.Scope(), extra_params, gradc.load(MLP / "forward.pb"), strict=True)


def test_a_loss_of_one_value_per_example_compiles_with_a_warning_that_its_sum_is_differentiated(tmp_path):
    per_example = "softmax_with_cross_entropy_0.tmp_1"   # [-1, 1]: the digits net's loss before its mean
    done = gradc_cli("compile", EXAMPLE / "forward.pb", "-o", tmp_path / "train.pb", "--loss", per_example)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [f"gradc: warning: loss '{per_example}' has shape [-1, 1], one value per "
                                        f"example: its gradients are those of its sum over the batch, as in Paddle "
                                        f"(a mean of it averages them)"]
    done = gradc_cli("compile", EXAMPLE / "forward.pb", "-o", tmp_path / "mean.pb")
    assert done.returncode == 0 and done.stderr == ""


@pytest.fixture(scope="module")
def checkpoint(compiled):
    done = train(compiled, "--data", compiled / "train.npz", "--checkpoint-dir", compiled / "ckpt")
    assert done.returncode == 0, done.stderr
    return compiled / "ckpt" / "checkpoint-00000002.npz"


def test_a_finished_run_resumed_says_there_is_nothing_to_train_and_keeps_its_time(compiled, checkpoint):
    done = train(compiled, "--data", compiled / "train.npz", "--resume", checkpoint.parent)
    assert done.returncode == 0, done.stderr
    first, summary = done.stdout.splitlines()
    assert first == "nothing to train: the resumed run has done 1 epoch (2 steps), all that --epochs asks for " \
                    "(give more to train on)"
    assert summary.startswith("done: 1 epoch, 2 steps, 64 examples in ")
    # the time counts the first run's (its checkpoint's) and the resumed one's, not only the resumed one's nothing
    kept = json.loads(checkpoint.with_suffix(".json").read_text())["history"]["seconds"]
    rate = float(summary.split(" s (")[1].split(" ex/s")[0].replace(",", ""))
    assert 0.0 < kept and 0.0 < rate <= round(64 / kept)


def resumed_from(compiled, tmp_path, change):
    """A whole checkpoint (its state file holding the changed arrays' sha256), as another program would write it."""
    directory = tmp_path / "ckpt"
    with np.load(compiled / "ckpt" / "checkpoint-00000002.npz") as saved:
        values = dict(saved)
    change(values)
    state = json.loads((compiled / "ckpt" / "checkpoint-00000002.json").read_text())
    del state["format"], state["arrays_sha256"]
    gradc.training.save_checkpoint(directory, values, state)
    return train(compiled, "--data", compiled / "train.npz", "--epochs", "2", "--resume", directory)


@pytest.mark.parametrize("change, phrase", [
    (lambda v: v.update(fc_9_w_0=v.pop("linear_0.w_0")),
     "it holds values for vars this program does not have fc_9_w_0; it was written by another program"),
    (lambda v: v.pop("linear_0.b_0_moment1_0"), "it holds no value for linear_0.b_0_moment1_0"),
    # the names that tell which model it is first: parameters, then others, then made-up ones
    (lambda v: v.update({"@LR_DECAY_COUNTER@": np.zeros(1), "fc_9_w_0": v.pop("linear_0.w_0")}),
     "it holds values for vars this program does not have fc_9_w_0, @LR_DECAY_COUNTER@; it was written by another"),
    (lambda v: (v.pop("linear_0.b_0_moment1_0"), v.pop("linear_0.w_0")),
     "it holds no value for linear_0.w_0, linear_0.b_0_moment1_0; it was written by another program"),
    (lambda v: v.update({"conv2d_0.w_0": v["conv2d_0.w_0"][:, :, :2]}), "'conv2d_0.w_0', read first by block 0, op 0 "
     "(conv2d), has shape [16, 1, 2, 3], but the program declares [16, 1, 3, 3]; it was written by another program"),
    (lambda v: v.update({"linear_0.w_0": v["linear_0.w_0"].astype(np.float64)}), "'linear_0.w_0', read first by "
     "block 0, op 13 (matmul_v2), is float64, but the program declares float32; it was written by another program"),
])
def test_a_checkpoint_of_another_program_is_refused(compiled, checkpoint, tmp_path, change, phrase):
    done = resumed_from(compiled, tmp_path, change)
    assert_clean_failure(done, "cannot resume from ", phrase)
    assert done.stdout == "" and len(list((tmp_path / "ckpt").iterdir())) == 2


def write_csv(path, arrays):
    """The digits as a CSV: 64 columns named img (one example's 1x8x8 pixels), one named label."""
    table = np.column_stack([arrays["img"].reshape(len(arrays["img"]), -1), arrays["label"]])
    np.savetxt(path, table, delimiter=",", header=",".join(["img"] * 64 + ["label"]), comments="", fmt="%.9g")
    return path


def test_a_csv_data_set_trains_as_its_arrays_do(compiled, tmp_path):
    train_csv = write_csv(tmp_path / "train.csv", digits(64))
    test_csv = write_csv(tmp_path / "test.csv", digits(20, "test"))
    from_csv = train(compiled, "--data", train_csv, "--eval", test_csv, "--shuffle")
    from_npz = train(compiled, "--data", compiled / "train.npz", "--eval", compiled / "test.npz", "--shuffle")
    assert from_csv.returncode == 0, from_csv.stderr
    means = [done.stdout.splitlines()[-2].split(" (")[0] for done in (from_csv, from_npz)]   # train and eval means
    assert means[0] == means[1] and "| eval mean_0.tmp_0=" in means[0]
    history = gradc.train(compiled / "train.pb", train_csv, [EXAMPLE / "startup.pb", compiled / "train.startup.pb"],
                          batch_size=32, shuffle=True, eval_data=test_csv)
    assert history.epochs[-1]["eval"][LOSS] == pytest.approx(float(from_npz.stdout.split("eval mean_0.tmp_0=")[1]
                                                                   .split()[0]), rel=1e-5)


@pytest.mark.parametrize("text, phrase", [
    ("img,label\n1,2\n", "1 column(s) 'img' do not make one example of var 'img', declared [-1, 1, 8, 8]"),
    ("pixel,label\n1,2\n", "column 'pixel' names no var of the program (its inputs: img, label)"),
    (",".join(["img"] * 64 + ["label"]) + "\n" + ",".join(["0"] * 64 + ["1.5"]) + "\n",
     "line 2, column 65 ('label'): '1.5' is not a whole number, but var 'label' is int64"),
    (",".join(["img"] * 64 + ["label"]) + "\n" + ",".join(["0"] * 63 + ["x", "1"]) + "\n",
     "line 2, column 64 ('img'): 'x' is not a number"),
    (",".join(["img"] * 64 + ["label"]) + "\n" + ",".join(["0"] * 64) + "\n",
     "line 2: 64 values, but the header names 65 columns"),
    ("", "give a header line naming each column's feed var"),
])
def test_a_csv_that_does_not_fit_is_refused_naming_the_line_and_column(compiled, tmp_path, text, phrase):
    (tmp_path / "bad.csv").write_text(text)
    assert_clean_failure(train(compiled, "--data", tmp_path / "bad.csv"), f"data '{tmp_path / 'bad.csv'}'", phrase)


def test_early_stop_ends_training_when_the_eval_loss_stops_going_down(compiled, tmp_path):
    frozen = tmp_path / "frozen.pb"   # a learning rate of 0: every epoch evaluates to the same loss
    assert gradc_cli("compile", EXAMPLE / "forward.pb", "-o", frozen, "--optimizer", "sgd", "--lr", "0").returncode == 0
    done = gradc_cli("train", frozen, "--startup", EXAMPLE / "startup.pb", "--startup", tmp_path / "frozen.startup.pb",
                     "--data", compiled / "train.npz", "--eval", compiled / "test.npz", "--epochs", "10",
                     "--early-stop", "2", "--batch-size", "32")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines if line.startswith("epoch") and "train" in line] == \
        ["epoch 1/10", "epoch 2/10", "epoch 3/10"]
    assert lines[-3].startswith(f"stopped early: eval {LOSS} has not improved on epoch 1's ")
    assert lines[-3].endswith(" for 2 epochs (--early-stop)")
    assert lines[-2].startswith(f"kept the parameters of epoch 1, the best by eval {LOSS}=")   # equal is no better
    assert lines[-1].startswith("done: 3 epochs, 6 steps")
    assert_clean_failure(train(compiled, "--data", compiled / "train.npz", "--early-stop", "2"),
                         "early stopping watches the evaluation")


def out_of_range(row, value):
    def change(arrays):
        arrays["label"][row] = value
    return change


@pytest.mark.parametrize("option", ["--data", "--eval"])
@pytest.mark.parametrize("value, row", [(10, 35), (-3, 3)])
def test_a_label_out_of_range_is_refused_before_the_first_step(compiled, tmp_path, option, value, row):
    bad = refit(tmp_path, "bad.npz", out_of_range(row, value), "train", 64)
    done = train(compiled, "--data", bad if option == "--data" else compiled / "train.npz", "--eval", bad,
                 "--checkpoint-dir", tmp_path / "ckpt")
    assert_clean_failure(done, f"data '{bad}': array 'label' holds the label {value} (example {row + 1}), but "
                         "block 0, op 18 (softmax_with_cross_entropy) has 10 classes (the last dim of "
                         "'linear_0.tmp_1'): a label is 0 to 9, or -100 (its ignore_index) to leave an example out")
    assert "step" not in done.stdout and not (tmp_path / "ckpt").exists()
    ignored = refit(tmp_path, "ignored.npz", out_of_range(row, -100), "train", 64)
    assert train(compiled, "--data", ignored).returncode == 0


def test_a_csv_label_out_of_range_names_its_column(compiled, tmp_path):
    rows = [",".join(["img"] * 64 + ["label"])] + [",".join(["0"] * 64 + [label]) for label in ("1", "7", "12")]
    (tmp_path / "bad.csv").write_text("\n".join(rows) + "\n")
    assert_clean_failure(train(compiled, "--data", tmp_path / "bad.csv"),
                         f"data '{tmp_path / 'bad.csv'}': column 'label' holds the label 12 (example 3)", "10 classes")


def test_an_op_failing_on_a_batch_names_the_data_step_epoch_and_batch(compiled, tmp_path):
    unshaped = tmp_path / "unshaped.pb"   # the logits' class count unknown: only the kernel finds the bad label
    program = gradc.load(compiled / "train.pb")
    program.global_block.find_var("linear_0.tmp_1").shape[-1] = -1
    gradc.save(program, unshaped)
    bad = refit(tmp_path, "train.npz", out_of_range(35, 10), "train", 64)
    run = ("train", unshaped, "--startup", EXAMPLE / "startup.pb", "--startup", compiled / "train.startup.pb",
           "--batch-size", "32", "--fetch", LOSS)
    assert_clean_failure(gradc_cli(*run, "--data", bad), f"data '{bad}', step 2 (epoch 1, batch 2): block 0, op ",
                         "(softmax_with_cross_entropy): Label holds 10")
    assert_clean_failure(gradc_cli(*run, "--data", compiled / "train.npz", "--eval", bad),
                         f"eval data '{bad}', evaluation batch 2: block 0, op ")


def test_a_run_ending_in_nan_says_how_to_find_where_it_started(compiled, tmp_path):
    def one_nan_pixel(arrays):
        arrays["img"][3, 0, 0, 0] = np.nan
    done = train(compiled, "--data", refit(tmp_path, "train.npz", one_nan_pixel, "train", 64))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == ("a fetched value is NaN or Inf: --check-nan stops at the first op that "
                                            "writes one and names it")
    assert "NaN" not in train(compiled, "--data", compiled / "train.npz").stdout


def test_eval_data_is_evaluated_when_steps_end_the_run_within_an_epoch(compiled):
    done = train(compiled, "--data", compiled / "train.npz", "--eval", compiled / "test.npz", "--steps", "1")
    assert done.returncode == 0, done.stderr
    summary = done.stdout.splitlines()[-1]
    assert summary.startswith("done: 1/2 steps of epoch 1, 1 step, 32 examples") and f"; eval {LOSS}=" in summary
    history = gradc.train(compiled / "train.pb", compiled / "train.npz", [EXAMPLE / "startup.pb",
                          compiled / "train.startup.pb"], steps=1, eval_data=compiled / "test.npz")
    assert history.last_eval[LOSS] == pytest.approx(float(summary.split(f"eval {LOSS}=")[1]), rel=1e-5)


def test_a_checkpoint_whose_arrays_were_swapped_or_damaged_is_refused(compiled, tmp_path):
    directory = tmp_path / "ckpt"
    assert train(compiled, "--data", compiled / "train.npz", "--checkpoint-dir", directory, "--checkpoint-every",
                 "1").returncode == 0
    newest, older = directory / "checkpoint-00000002.npz", directory / "checkpoint-00000001.npz"
    newest.write_bytes(older.read_bytes())   # a readable archive of the same program, but another step's
    done = train(compiled, "--data", compiled / "train.npz", "--epochs", "2", "--resume", directory)
    assert_clean_failure(done, f"checkpoint '{newest.with_suffix('.json')}': 'checkpoint-00000002.npz' is not the "
                               f"file written with it (its sha256 differs)")


def test_checkpoints_reach_the_disk_before_training_goes_on(tmp_path, monkeypatch):
    synced = []
    real_fsync = __import__("os").fsync
    monkeypatch.setattr("os.fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    gradc.training.save_checkpoint(tmp_path, {"w": np.ones(3, np.float32)}, {"epoch": 0, "batch": 1, "step": 1})
    assert len(synced) == 4   # each of the two files, and the directory after each rename
    values, state, _ = gradc.training.load_checkpoint(tmp_path)
    assert state["step"] == 1 and values["w"].tolist() == [1, 1, 1]


def test_training_a_per_example_loss_warns_that_nothing_is_reported_by_default(tmp_path):
    per_example = "softmax_with_cross_entropy_0.tmp_1"
    assert gradc_cli("compile", EXAMPLE / "forward.pb", "-o", tmp_path / "train.pb", "--loss", per_example,
                     "--optimizer", "sgd").returncode == 0
    np.savez(tmp_path / "data.npz", **digits(32))
    done = gradc_cli("train", tmp_path / "train.pb", "--startup", EXAMPLE / "startup.pb", "--startup",
                     tmp_path / "train.startup.pb", "--data", tmp_path / "data.npz")
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("gradc: warning: no value to report: the program has no scalar loss gradc can pick")
    assert done.stdout.splitlines()[-1].startswith("done: 1 epoch, 1 step, 32 examples in ")
    assert "last step" not in done.stdout


def test_an_exported_model_runs_on_a_test_set_with_its_labels_as_in_paddle(compiled, tmp_path):
    assert gradc_cli("export", compiled / "train.pb", "--startup", EXAMPLE / "startup.pb", "--input", "img", "--fetch",
                     "softmax_0.tmp_0", "-o", tmp_path / "model").returncode == 0
    done = gradc_cli("run", tmp_path / "model.pdmodel", "--params", tmp_path / "model.pdiparams", "--feed",
                     compiled / "test.npz")
    assert done.returncode == 0 and done.stdout.startswith("softmax_0.tmp_0: float32[20, 10] mean=0.1")
    assert done.stderr == (f"gradc: warning: feed '{compiled / 'test.npz'}' holds arrays the model does not take "
                           f"(label; its inputs: img): left out, as Paddle's executor leaves them out\n")


def test_an_embedding_id_out_of_range_is_refused_before_the_first_step(tmp_path):
    fixture = DATA / "layers" / "embedding_padding_idx"   # lookup_table_v2 of 10 rows, padding_idx 0
    assert gradc_cli("compile", fixture / "forward.pb", "-o", tmp_path / "t.pb", "--optimizer", "sgd").returncode == 0
    with np.load(fixture / "feed.npz") as feed:
        arrays = dict(feed)
    arrays["ids"][1, 3] = 10
    np.savez(tmp_path / "bad.npz", **arrays)
    run = ("train", tmp_path / "t.pb", "--startup", tmp_path / "t.startup.pb", "--params", fixture / "params.npz",
           "--batch-size", "2", "--data")
    assert_clean_failure(gradc_cli(*run, tmp_path / "bad.npz"),
                         f"data '{tmp_path / 'bad.npz'}': array 'ids' holds the id 10 (example 2), but block 0, op 0 "
                         "(lookup_table_v2) looks ids up in the 10 rows of 'embedding_0.w_0': an id is 0 to 9")
    arrays["ids"][1, 3] = 9
    np.savez(tmp_path / "good.npz", **arrays)
    assert gradc_cli(*run, tmp_path / "good.npz").returncode == 0
