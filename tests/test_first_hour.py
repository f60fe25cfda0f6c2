"""A new user's first hour, through the Python API and the CLI: each rough edge found, as the behaviour it has now."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA

MLP = DATA / "mlp"
EXAMPLES = DATA.parents[2] / "examples"


def _mlp_run(scope_values: dict):
    program = gradc.load(MLP / "forward.pb")
    scope = gradc.Scope()
    gradc.load_params(scope, MLP / "params.npz", program)
    for name, value in scope_values.items():
        scope[name] = value
    with np.load(MLP / "feed.npz") as feed:
        return gradc.Executor().run(program, dict(feed), fetch_list=["mean_0.tmp_0"], scope=scope), scope


@pytest.mark.parametrize("change, message", [
    (lambda w: w.astype("float64"), r"^scope value 'fc_0.w_0', read first by block 0, op 0 \(mul\), is float64, but "
                                    r"the program declares float32 \(convert it, e\.g\. with \.astype\('float32'\)\)$"),
    (lambda w: w[:8], r"^scope value 'fc_0.w_0', read first by block 0, op 0 \(mul\), has shape \[8, 32\], but the "
                      r"program declares \[16, 32\]$"),
    (lambda w: w.astype("int64"), r"^scope value 'fc_0.w_0', read first by block 0, op 0 \(mul\), is int64, but the "
                                  r"program declares float32"),
])
def test_a_scope_value_that_does_not_fit_its_var_is_refused_as_a_params_file_value_is(change, message):
    weights = np.load(MLP / "params.npz")["fc_0.w_0"]
    with pytest.raises(gradc.ExecutionError, match=message):
        _mlp_run({"fc_0.w_0": change(weights)})


def test_a_scope_value_is_checked_again_after_it_is_replaced_and_python_numbers_are_converted():
    with np.load(MLP / "params.npz") as params:
        bias = params["fc_0.b_0"]
    (loss,), scope = _mlp_run({"fc_0.b_0": bias.tolist()})
    assert scope["fc_0.b_0"].dtype == np.float32
    np.testing.assert_allclose(loss, np.load(MLP / "loss.npy"), rtol=1e-5)
    scope["fc_0.b_0"] = bias.astype("float64")
    with pytest.raises(gradc.ExecutionError,
                       match=r"scope value 'fc_0.b_0', read first by block 0, op 1 \(elementwise_add\), is float64"):
        gradc.Executor().run(gradc.load(MLP / "forward.pb"), dict(np.load(MLP / "feed.npz")),
                             fetch_list=["mean_0.tmp_0"], scope=scope)


def test_a_startup_program_may_overwrite_what_a_user_put_into_the_scope():
    scope = gradc.Scope()
    scope["fc_0.w_0"] = np.zeros((3, 3))
    gradc.Executor().run(gradc.load(EXAMPLES / "mlp" / "startup.pb"), scope=scope)
    assert scope["fc_0.w_0"].shape == (16, 32) and scope["fc_0.w_0"].dtype == np.float32


def one_line_error(result, *phrases) -> str:
    assert result.returncode == 1, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradc: error: "), result.stderr
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("compile_first, what", [
    (False, "a forward program: no backward, no optimizer"),
    (True, "it has a backward but no optimizer op"),
])
def test_train_refuses_a_program_nothing_of_which_updates_the_parameters(tmp_path, compile_first, what):
    """Before, gradc train ran step after step of a forward (or backward-only) program, the loss never moving."""
    program = MLP / "forward.pb"
    if compile_first:
        assert gradc_cli("compile", program, "-o", tmp_path / "train.pb").returncode == 0
        program = tmp_path / "train.pb"
    done = gradc_cli("train", program, "--feed", MLP / "feed.npz", "--params", MLP / "params.npz", "--steps", 3)
    one_line_error(done, f"{program}: no op of the program updates its parameters ({what})", "--optimizer adam")
    assert "step 1" not in done.stdout


def test_a_trainer_of_a_program_without_updates_warns():
    with pytest.warns(gradc.GradcWarning, match="no op of the program updates its parameters"):
        gradc.Trainer(gradc.load(MLP / "forward.pb"))


@pytest.fixture(scope="module")
def mlp_sgd(tmp_path_factory):
    """The MLP compiled with SGD (gradc compile --optimizer sgd), and the startup program that compile wrote."""
    train = tmp_path_factory.mktemp("mlp_sgd") / "train.pb"
    done = gradc_cli("compile", MLP / "forward.pb", "-o", train, "--optimizer", "sgd")
    assert done.returncode == 0, done.stderr
    return train


def test_a_checkpoint_dir_that_is_a_file_is_refused_before_the_first_step(tmp_path, mlp_sgd):
    """Before, the first epoch ran in full and then the save failed with 'File exists'."""
    taken = tmp_path / "ck"
    taken.write_text("mine")
    done = gradc_cli("train", mlp_sgd, "--startup", mlp_sgd.with_suffix(".startup.pb"), "--params", MLP / "params.npz",
                     "--feed", MLP / "feed.npz", "--steps", 2, "--checkpoint-dir", taken)
    one_line_error(done, f"cannot keep checkpoints in '{taken}': it is a file, not a directory")
    assert done.stdout == "" and taken.read_text() == "mine"


def test_a_saved_model_run_with_another_params_file_points_at_its_own_not_at_an_optimizers_startup():
    """Before, the batch-norm statistics a saved model lacked were blamed on a missing optimizer startup program."""
    pir = EXAMPLES / "pir"
    done = gradc_cli("run", pir / "model.json", "--params", pir / "params.npz", "--feed", pir / "input.npz")
    line = one_line_error(done, "no value for the persistable var(s) batch_norm1d_0.w_1",
                          f"{pir / 'model.pdiparams'}, beside the program, may be its parameters")
    assert "optimizer" not in line


@pytest.mark.parametrize("command", ["train", "evaluate"])
def test_eval_data_without_an_input_says_the_data_lacks_it_not_to_give_feed(tmp_path, mlp_sgd, command):
    """Before, the line told the user to pass --feed label, which gradc train reads as a batch file."""
    unlabelled = tmp_path / "x_only.npz"
    with np.load(MLP / "feed.npz") as feed:
        np.savez(unlabelled, x=feed["x"])
    if command == "train":
        args = ["--startup", mlp_sgd.with_suffix(".startup.pb"), "--data", MLP / "feed.npz", "--eval", unlabelled]
    else:
        args = ["--data", unlabelled]
    done = gradc_cli(command, mlp_sgd, "--params", MLP / "params.npz", *args)
    line = one_line_error(done, f"data '{unlabelled}': the fetches need 'label'", "the data has no array 'label'")
    assert "--feed" not in line


@pytest.mark.parametrize("option, name, said", [
    ("--input", "X", "input 'X' is not a var of block 0 of the program (did you mean 'x'?)"),
    ("--fetch", "fc_1.tmp", "fetch 'fc_1.tmp' is not a var of block 0 of the program (did you mean 'fc_1.tmp_1'?)"),
])
def test_export_names_which_option_holds_an_unknown_name_and_the_one_meant(tmp_path, option, name, said):
    names = {"--input": "x", "--fetch": "fc_1.tmp_1", option: name}
    done = gradc_cli("export", MLP / "forward.pb", "--params", MLP / "params.npz", "--input", names["--input"],
                     "--fetch", names["--fetch"], "-o", tmp_path / "model")
    one_line_error(done, said)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command, rows, batch, hint", [
    ("train", 32, 8, "(the program takes batches of exactly 32 examples: --batch-size 32, batch_size= in Python)"),
    ("train", 40, 8, "exactly 32 examples: --batch-size 32 and --drop-last; batch_size=, drop_last= in Python)"),
    ("train", 40, 32, "exactly 32 examples and the last batch has 8: --drop-last, drop_last=True in Python)"),
    ("evaluate", 40, 32, "exactly 32 examples and the last batch has 8: a number of examples that is a multiple of 32"),
])
def test_data_in_batches_a_program_of_a_fixed_batch_refuses_says_the_batch_size_it_takes(tmp_path, mlp_sgd, command,
                                                                                         rows, batch, hint):
    """The MLP was saved for batches of 32 (x: [32, 16]); before, the line said only that [8, 16] is not [32, 16]."""
    data = tmp_path / "data.npz"
    with np.load(MLP / "feed.npz") as feed:
        np.savez(data, **{name: np.concatenate([feed[name], feed[name]])[:rows] for name in ("x", "label")})
    startup = ["--startup", mlp_sgd.with_suffix(".startup.pb")] if command == "train" else []
    done = gradc_cli(command, mlp_sgd, *startup, "--params", MLP / "params.npz", "--data", data, "--batch-size", batch)
    one_line_error(done, f"data '{data}': feed var 'x', read first by block 0, op 0 (mul), "
                   "has shape [", "but block 0 declares [32, 16]", hint)


def test_ops_takes_a_pir_op_name_and_puts_the_same_name_in_another_case_first():
    """Before, 'gradc ops pd_op.relu' suggested prelu, and 'gradc ops Relu' listed elu and selu before relu."""
    done = gradc_cli("ops", "pd_op.matmul")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:2] == ["pd_op.matmul is Paddle 3's PIR name of matmul_v2 (gradc reads it as "
                                            "that op)", "matmul_v2"]
    one_line_error(gradc_cli("ops", "Relu"), "no op 'Relu' is registered (gradc ops lists them); did you mean relu?")


def test_executor_run_takes_the_path_of_a_feed_file_and_refuses_a_feed_that_is_no_dict():
    """gradc.train and gradc.evaluate take paths; before, Executor.run given one failed with an AttributeError."""
    program, scope = gradc.load(MLP / "forward.pb"), gradc.Scope()
    gradc.load_params(scope, MLP / "params.npz", program)
    (loss,) = gradc.Executor().run(program, feed=str(MLP / "feed.npz"), fetch_list=["mean_0.tmp_0"], scope=scope)
    np.testing.assert_allclose(loss, np.load(MLP / "loss.npy"), rtol=1e-5)
    with pytest.raises(gradc.ExecutionError, match="^the feed is a list: give a dict of var name -> array"):
        gradc.Executor().run(program, feed=[1, 2], scope=scope)


def test_fetching_a_gradient_of_a_program_without_a_backward_says_to_compile_it():
    done = gradc_cli("run", MLP / "forward.pb", "--feed", MLP / "feed.npz", "--params", MLP / "params.npz",
                     "--fetch", "fc_0.w_0@GRAD")
    one_line_error(done, "fetch var 'fc_0.w_0@GRAD' is not a var of block 0: no op writes it (the program has no "
                         "backward: gradc compile, or gradc.append_backward in Python, appends it)")


def test_export_to_a_directory_is_refused_with_the_prefix_to_give(tmp_path):
    """Before, -o DIR wrote DIR.pdmodel and DIR.pdiparams beside the directory (Paddle refuses such a path)."""
    done = gradc_cli("export", MLP / "forward.pb", "--params", MLP / "params.npz", "--input", "x", "--fetch",
                     "fc_1.tmp_1", "-o", tmp_path)
    one_line_error(done, f"cannot export to '{tmp_path}': it names a directory",
                   f"'{tmp_path / 'model'}' writes {tmp_path / 'model'}.pdmodel and {tmp_path / 'model'}.pdiparams")
    assert list(tmp_path.parent.glob(tmp_path.name + ".*")) == []


def test_save_params_with_an_extension_of_no_format_is_refused_before_training(tmp_path, mlp_sgd):
    """Before, --save-params trained.txt trained and then wrote an .npz under that name."""
    done = gradc_cli("train", mlp_sgd, "--startup", mlp_sgd.with_suffix(".startup.pb"), "--params",
                     MLP / "params.npz", "--feed", MLP / "feed.npz", "--steps", 1, "--save-params", tmp_path / "w.txt")
    one_line_error(done, f"cannot tell the format of '{tmp_path / 'w.txt'}' from its extension: use .npz")
    assert done.stdout == "" and list(tmp_path.iterdir()) == []


def test_info_calls_a_saved_program_whose_fetch_target_is_its_loss_a_forward_program():
    """examples/pir/forward.json fetches its loss; before, info called it an inference model to add a loss to."""
    done = gradc_cli("info", EXAMPLES / "pir" / "forward.json")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "kind: forward program with feed and fetch ops and a loss: gradc compile appends its backward"
    assert "loss: loss (gradc compile picks it by itself)" in lines
    saved = gradc_cli("info", EXAMPLES / "pir" / "model.json").stdout.splitlines()
    assert saved[1].startswith("kind: inference model (feed and fetch ops)")


def test_check_without_params_or_with_an_unknown_wrt_says_what_to_give():
    """Before: "no value for ['fc_0.b_0', ...]: feed them or give them as parameters", a Python list, for both."""
    feed = ["--feed", MLP / "feed.npz"]
    one_line_error(gradc_cli("check", MLP / "forward.pb", *feed), "no value for fc_0.b_0, fc_0.w_0, fc_1.b_0, "
                   "fc_1.w_0: give the parameters with --params (params= in Python), initialise them with --startup, "
                   "or feed them")
    one_line_error(gradc_cli("check", MLP / "forward.pb", *feed, "--params", MLP / "params.npz", "--wrt", "nope"),
                   "no var 'nope' in block 0 of the program to check the gradient of (--wrt, wrt= in Python)")


@pytest.mark.parametrize("command", ["run", "train", "evaluate", "export"])
def test_a_failing_startup_program_is_named(tmp_path, mlp_sgd, command):
    """A forward program given as --startup by mistake: before, its 'x is not fed' read as the main program's."""
    main = {"run": ["--feed", MLP / "feed.npz", "--fetch", "mean_0.tmp_0"], "train": ["--feed", MLP / "feed.npz"],
            "evaluate": ["--data", MLP / "feed.npz"], "export": ["--input", "x", "--fetch", "fc_1.tmp_1", "-o",
                                                                 tmp_path / "m"]}[command]
    done = gradc_cli(command, mlp_sgd, "--startup", MLP / "forward.pb", *main)
    one_line_error(done, f"startup program '{MLP / 'forward.pb'}': block 0, op 0 (mul) reads var 'x' (slot X), "
                         f"which is not fed")


def test_evaluate_refuses_a_label_no_class_scores_are_scored_against():
    """Before, --label naming the model's features printed the loss and no accuracy, without a word."""
    done = gradc_cli("evaluate", MLP / "forward.pb", "--params", MLP / "params.npz", "--data", MLP / "feed.npz",
                     "--label", "x")
    one_line_error(done, "evaluation: --label x: no class scores of the program are scored against it (the labels its "
                         "classification ops read: label)")
    scored = gradc_cli("evaluate", MLP / "forward.pb", "--params", MLP / "params.npz", "--data", MLP / "feed.npz",
                       "--label", "label")
    assert scored.returncode == 0 and "acc: 0.0625" in scored.stdout.splitlines()


def test_compile_warns_when_no_parameter_gets_a_gradient(tmp_path):
    """Before, --param fc_0.w_0 --no-grad fc_0.w_0 wrote a backward with an empty table and not a word more."""
    done = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "t.pb", "--param", "fc_0.w_0", "--no-grad",
                     "fc_0.w_0")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == ["gradc: warning: no parameter gets a gradient: each is stop_gradient, in the "
                                        "no-grad set (--no-grad), or on no path to the loss; training this program "
                                        "would change nothing"]
    assert "0 parameter gradients" in done.stdout
    assert gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "u.pb").stderr == ""
