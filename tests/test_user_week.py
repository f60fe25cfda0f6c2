"""A Paddle 3 user's week (docs/tools.md, 'A Paddle 3 user's week'): each fault found, as the behaviour it has now."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA

MLP = DATA / "mlp"


def _export(directory, *inputs):
    return gradc_cli("export", MLP / "forward.pb", "--params", MLP / "params.npz", *inputs, "--fetch", "fc_1.tmp_1",
                     "-o", directory / "model")


def _usage_error(done) -> str:
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradc: error: "), done.stderr
    return lines[0]


def test_export_names_its_inputs_with_input_and_the_export_runs(tmp_path):
    """Before, export's --feed took var names where run, train and check take an .npz of values: --input now."""
    done = _export(tmp_path, "--input", "x")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "(inputs x; fetches fc_1.tmp_1)" in done.stdout
    program = gradc.load(tmp_path / "model.pdmodel")
    assert [op.output("Out") for op in program.global_block.ops if op.type == "feed"] == [["x"]]
    with np.load(MLP / "feed.npz") as feed:
        np.savez(tmp_path / "x.npz", x=feed["x"])
    ran = gradc_cli("run", tmp_path / "model.pdmodel", "--params", tmp_path / "model.pdiparams",
                    "--feed", tmp_path / "x.npz")
    assert ran.returncode == 0 and "fc_1.tmp_1: float32[32, 10]" in ran.stdout, ran.stdout + ran.stderr


def test_export_feed_name_still_works_with_a_one_line_note(tmp_path):
    (tmp_path / "new").mkdir(), (tmp_path / "old").mkdir()
    assert _export(tmp_path / "new", "--input", "x").returncode == 0
    done = _export(tmp_path / "old", "--feed", "x")
    assert done.returncode == 0
    assert done.stderr.strip().splitlines() == [
        "gradc: warning: export's --feed NAME is now --input NAME (--feed x still works; --feed takes an .npz in run, "
        "train and check)"]
    for name in ("model.pdmodel", "model.pdiparams"):
        assert (tmp_path / "old" / name).read_bytes() == (tmp_path / "new" / name).read_bytes()


def test_export_feed_of_an_npz_file_says_to_name_its_arrays_with_input(tmp_path):
    line = _usage_error(_export(tmp_path, "--feed", MLP / "feed.npz"))
    assert "export names the model's inputs, not a file of their values: for its arrays, --input x --input label" \
           in line, line
    assert list(tmp_path.iterdir()) == []


def test_export_with_both_spellings_is_a_usage_error(tmp_path):
    said = "give the model's inputs with --input alone (--feed is its old spelling)"
    assert said in _usage_error(_export(tmp_path, "--input", "x", "--feed", "x"))


def test_export_without_the_input_its_fetches_need_names_it_and_writes_nothing(tmp_path):
    """No --input is a model without inputs (a sampler: tests/test_user_week31.py); fetches that need one name it."""
    done = _export(tmp_path)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == ("gradc: error: the fetches need 'x', which is neither fed nor computed from the feeds (feed "
                           "it: --input x on the command line, feeds= in Python; or fetch something that does not "
                           "depend on it)\n")
    assert list(tmp_path.iterdir()) == []


def test_memory_counts_a_saved_models_fed_inputs_as_inputs(tmp_path):
    """Before, `gradc show --memory` of a .pdmodel said 'fed inputs 24 B' for a ResNet fed 36 KiB of images: a var
    a feed op writes was counted as a temporary, and only the labels --add-loss declares (no feed op) as fed."""
    from gradc.memory import estimate
    assert _export(tmp_path, "--input", "x").returncode == 0
    saved = gradc.load(tmp_path / "model.pdmodel")
    assert [op.type for op in saved.global_block.ops][0] == "feed"
    assert saved.global_block.var("x").shape == [32, 16]
    assert estimate(saved, batch_size=8)[0].inputs == 32 * 16 * 4   # x, float32
    assert estimate(gradc.load(MLP / "forward.pb"), batch_size=8)[0].inputs == 32 * 16 * 4 + 32 * 8   # x and label


CONV = DATA / "conv"   # img -> conv2d -> batch_norm (training) -> relu -> max pool -> fc -> cross entropy, by Paddle


@pytest.fixture
def saved_conv(tmp_path):
    """The conv fixture's model as paddle.jit.save writes a layer in eval(): batch norm in test mode, global stats."""
    done = gradc_cli("export", CONV / "forward.pb", "--params", CONV / "params.npz", "--input", "img",
                     "--fetch", "fc_0.tmp_1", "-o", tmp_path / "model")
    assert done.returncode == 0, done.stderr
    saved = gradc.load(tmp_path / "model.pdmodel")
    norm = next(op for op in saved.global_block.ops if op.type == "batch_norm")
    norm.set_attr("use_global_stats", True, gradc.ir.AttrType.BOOLEAN)
    gradc.save(saved, tmp_path / "model.pdmodel")
    return tmp_path / "model"


def _train_mode_step(compiled, params):
    program = gradc.load(compiled)
    scope = gradc.Scope()
    gradc.load_params(scope, params, program)
    with np.load(CONV / "grads.npz") as grads:   # Paddle's, of the parameters (and of img, which fine-tuning skips)
        paddle = {name: grads[name] for name in grads.files if name != "img@GRAD"}
    values = gradc.Executor().run(program, dict(np.load(CONV / "feed.npz")), fetch_list=["mean_0.tmp_0", *paddle],
                                  scope=scope)
    return values[0], dict(zip(paddle, values[1:])), paddle


def test_a_saved_model_fine_tunes_in_test_mode_and_compile_says_so(saved_conv, tmp_path):
    """Before, a saved model fine-tuned with its batch norm frozen on running statistics without a word: a ResNet
    whose Paddle training (model.train()) went 1.61 -> 0.59 went 14.9 -> 50,766 in gradc."""
    done = gradc_cli("compile", saved_conv.with_suffix(".pdmodel"), "-o", tmp_path / "ft.pb",
                     "--add-loss", "cross-entropy")
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines() == [
        "gradc: note: 1 batch_norm train in test mode, as saved (dropout off, batch norm on its running statistics); "
        "--train-mode trains them as the model trains in Paddle (model.train())"]
    loss, _, _ = _train_mode_step(tmp_path / "ft.pb", saved_conv.with_suffix(".pdiparams"))
    assert abs(float(loss) - float(np.load(CONV / "loss.npy"))) > 0.1   # the running statistics, not the batch's


def test_train_mode_gives_paddles_training_loss_and_gradients_of_the_model_before_export(saved_conv, tmp_path):
    done = gradc_cli("compile", saved_conv.with_suffix(".pdmodel"), "-o", tmp_path / "ft.pb",
                     "--add-loss", "cross-entropy", "--train-mode")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "train mode: is_test turned off on 1 batch_norm" in done.stdout
    loss, grads, paddle = _train_mode_step(tmp_path / "ft.pb", saved_conv.with_suffix(".pdiparams"))
    np.testing.assert_allclose(loss, np.load(CONV / "loss.npy"), rtol=1e-5, atol=1e-6)
    assert set(grads) >= {"conv2d_0.w_0@GRAD", "batch_norm_0.w_0@GRAD", "fc_0.w_0@GRAD"}
    for name, grad in grads.items():
        np.testing.assert_allclose(grad, paddle[name], rtol=1e-5, atol=1e-6, err_msg=name)


def test_set_train_mode_in_python_turns_back_what_export_turned():
    program = gradc.training.inference_program(gradc.load(CONV / "forward.pb"), ["img"], ["fc_0.tmp_1"])
    assert gradc.training.finetune.test_mode_ops(program) == {"batch_norm": 1}
    assert gradc.set_train_mode(program) == {"batch_norm": 1}
    norm = next(op for op in program.global_block.ops if op.type == "batch_norm")
    assert norm.attrs["is_test"] is False and norm.attrs.get("use_global_stats", False) is False
    assert program.global_block.find_var(norm.output("SavedMean")[0]).shape == [4]


PIR = DATA.parents[2] / "examples" / "pir"   # an inference model paddle.jit.save wrote in PIR mode


def test_a_pir_saved_model_leaves_out_a_test_sets_labels_as_a_pdmodel_does(tmp_path):
    """Before, `gradc run model.json --feed test.npz` refused the labels ('feed var 'label' is not declared'), where
    the same model as a .pdmodel left them out with a warning, and Paddle's executor runs both."""
    with np.load(PIR / "input.npz") as inputs:
        np.savez(tmp_path / "test.npz", **inputs, label=np.zeros((len(inputs["x"]), 1), "int64"))
    plain = gradc_cli("run", PIR / "model.json", "--params", PIR / "model.pdiparams", "--feed", PIR / "input.npz",
                      "--out", tmp_path / "plain.npz")
    labelled = gradc_cli("run", PIR / "model.json", "--params", PIR / "model.pdiparams",
                         "--feed", tmp_path / "test.npz", "--out", tmp_path / "labelled.npz")
    assert plain.returncode == 0 and labelled.returncode == 0, labelled.stderr
    assert labelled.stderr.strip().splitlines() == [
        f"gradc: warning: feed '{tmp_path / 'test.npz'}' holds arrays the model does not take (label; its inputs: x): "
        f"left out, as Paddle's executor leaves them out"]
    with np.load(tmp_path / "plain.npz") as want, np.load(tmp_path / "labelled.npz") as got:
        assert want.files == got.files and all(np.array_equal(want[n], got[n]) for n in want.files)


def test_run_writes_out_before_a_pipe_reader_that_stops_early_ends_it(tmp_path):
    """Before, `gradc run ... --out results.npz | head -1` lost results.npz: the listing came first, and the closed
    pipe ended the command before the file was written."""
    import subprocess
    import sys
    command = [sys.executable, "-m", "gradc", "run", PIR / "model.json", "--params", PIR / "model.pdiparams",
               "--feed", PIR / "input.npz", "--out", tmp_path / "cut.npz"]
    reader = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    reader.stdout.close()   # the reader has gone before the first line
    assert reader.wait(timeout=120) in (0, 1) and b"Traceback" not in reader.stderr.read()
    whole = gradc_cli("run", *command[4:-1], tmp_path / "whole.npz")
    assert whole.returncode == 0, whole.stderr
    with np.load(tmp_path / "whole.npz") as want, np.load(tmp_path / "cut.npz") as got:
        assert want.files == got.files and all(np.array_equal(want[n], got[n]) for n in want.files)


EXAMPLE_MLP = DATA.parents[2] / "examples" / "mlp"   # forward.pb and the startup.pb that initialises it


def test_check_takes_startup_programs_as_run_train_and_view_do():
    """Before, `gradc check forward.pb --startup startup.pb` was 'No such option', so a model without a parameter
    file (a fresh one, as `gradc run` runs it) could not be checked."""
    done = gradc_cli("check", EXAMPLE_MLP / "forward.pb", "--startup", EXAMPLE_MLP / "startup.pb",
                     "--feed", EXAMPLE_MLP / "feed.npz", "--directions", "2")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["fc_0.b_0", "fc_0.w_0", "fc_1.b_0", "fc_1.w_0"]
    assert all(line.endswith(" ok") for line in lines[:-1])
    assert lines[-1] == "4 var(s) checked: compiled gradients agree with central differences (loss mean_0.tmp_0)"


def test_view_of_a_training_program_without_its_startup_names_the_option(tmp_path):
    """Before: '... which has no value: ... load it (gradc.load_params, --params) or run the startup program first in
    the same scope', the Python API's words, for a CLI whose option is --startup."""
    compiled = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "train.pb", "--optimizer", "adam")
    assert compiled.returncode == 0, compiled.stderr
    args = ["view", tmp_path / "train.pb", "-o", tmp_path / "page.html", "--feed", MLP / "feed.npz",
            "--params", MLP / "params.npz"]
    done = gradc_cli(*args)
    assert done.returncode == 1 and not (tmp_path / "page.html").exists()
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradc: error: no value for the persistable var(s) "), lines
    assert f"(--startup, repeatable; {tmp_path / 'train.startup.pb'} initialises the optimizer's)" in lines[0]
    assert gradc_cli(*args, "--startup", tmp_path / "train.startup.pb").returncode == 0


@pytest.mark.parametrize("size", ["inf", "nan", "1X", "1e3", "-1"])
def test_max_memory_that_is_not_a_size_is_a_usage_error_naming_the_units(size):
    """Before: 'inf' was an internal error (OverflowError), 'nan' and '1X' Python's float() message."""
    line = _usage_error(gradc_cli("--max-memory", size, "info", MLP / "forward.pb"))
    assert f"--max-memory: '{size}' is not a size: a number of bytes, or with K, M, G or T (e.g. 512M, 4G)" in line


@pytest.mark.parametrize("size, limit", [("512M", 512 << 20), ("4gb", 4 << 30), ("0.5K", 512), ("1000", 1000)])
def test_max_memory_sizes(size, limit):
    from gradc.limits import parse_bytes
    assert parse_bytes(size) == limit


def test_a_pdmodel_whose_batch_norm_lost_its_reserve_space_fine_tunes_as_pir(tmp_path):
    """Before: 'cannot write as PIR: ... var 'batch_norm2d_0.w_1.reservespace' is not a tensor of a dtype PIR has'
    for a ResNet paddle.jit.save wrote in legacy mode (its batch_norm ops have no ReserveSpace): gradc gave the output
    back without a dtype, so neither `compile -o train.json` nor the export of the fine-tuned model could be PIR."""
    saved = gradc.load(DATA / "export" / "model.pdmodel")
    for op in saved.global_block.ops:
        if op.type == "batch_norm":
            del saved.global_block.vars[op.outputs.pop("ReserveSpace")[0]]
    gradc.save(saved, tmp_path / "model.pdmodel")
    for output in ("train.pb", "train.json"):
        done = gradc_cli("compile", tmp_path / "model.pdmodel", "-o", tmp_path / output, "--add-loss", "cross-entropy")
        assert done.returncode == 0, done.stderr
    legacy, pir = gradc.load(tmp_path / "train.pb"), gradc.load(tmp_path / "train.json")
    norm = next(op for op in legacy.global_block.ops if op.type == "batch_norm")
    assert legacy.global_block.var(norm.output("ReserveSpace")[0]).dtype == gradc.VarType.FP32   # as X, as Paddle
    with np.load(DATA / "export" / "feed.npz") as feed:
        images = feed[feed.files[0]]
    feed = {"img": images, "label": np.arange(len(images)).reshape(-1, 1) % 2}
    losses = []
    for program in (legacy, pir):
        scope = gradc.Scope()
        gradc.load_params(scope, DATA / "export" / "model.pdiparams", program)
        losses.append(gradc.Executor().run(program, feed, fetch_list=["mean_0.tmp_0", "conv2d_0.w_0@GRAD"],
                                           scope=scope))
    for legacy_value, pir_value in zip(*losses):
        np.testing.assert_allclose(pir_value, legacy_value, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("optimizer, said", [("sgd", "(initialises the sgd learning rate)"),
                                             ("adam", "(initialises the adam learning rate and accumulators)")])
def test_compile_says_what_the_startup_program_initialises(tmp_path, optimizer, said):
    """Before, plain SGD's startup was said to initialise 'the sgd learning rate and accumulators': it has none."""
    done = gradc_cli("compile", MLP / "forward.pb", "-o", tmp_path / "train.pb", "--optimizer", optimizer)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == f"wrote {tmp_path / 'train.startup.pb'} {said}"


EXPORT = DATA / "export"   # a model Paddle's save_inference_model wrote (.pdmodel, .pdiparams)


def test_paddle_1x_combined_params_under_another_name_are_read(tmp_path):
    """Before: 'cannot read params '__params__': not an .npz archive', for the names Paddle 1.x gave a model's files
    (save_inference_model(dirname, ..., params_filename='__params__'), `model` / `params` in PaddleOCR's releases)."""
    import shutil
    shutil.copy(EXPORT / "model.pdmodel", tmp_path / "__model__")
    shutil.copy(EXPORT / "model.pdiparams", tmp_path / "__params__")
    runs = [gradc_cli("run", tmp_path / "__model__", "--params", tmp_path / "__params__", "--feed",
                      EXPORT / "feed.npz", "--out", tmp_path / "old.npz"),
            gradc_cli("run", EXPORT / "model.pdmodel", "--params", EXPORT / "model.pdiparams", "--feed",
                      EXPORT / "feed.npz", "--out", tmp_path / "new.npz")]
    assert [done.returncode for done in runs] == [0, 0], runs[0].stderr
    with np.load(tmp_path / "old.npz") as old, np.load(tmp_path / "new.npz") as new:
        assert old.files == new.files and all(np.array_equal(old[n], new[n]) for n in new.files)


@pytest.mark.parametrize("given, said", [
    ("model.json", "it is a program file, not parameters (paddle.jit.save and save_inference_model write the values "
                   "beside it, in a .pdiparams file)"),
    ("model.pdiparams.info", "Paddle's .pdiparams.info holds no values (give the .pdiparams file beside it)"),
])
def test_a_program_or_pdiparams_info_given_as_params_is_named_for_what_it_is(tmp_path, given, said):
    """Before, both were 'not an .npz archive (no zip directory)'."""
    (tmp_path / given).write_bytes((PIR / "model.json").read_bytes() if given.endswith(".json") else b"\x00\x01info")
    done = gradc_cli("run", PIR / "model.json", "--params", tmp_path / given, "--feed", PIR / "input.npz")
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        f"gradc: error: cannot read params '{tmp_path / given}': {said}"]


def _one_file_per_var(directory):
    """EXPORT's parameters as Paddle 1.x's save_inference_model without params_filename writes them: a file per
    persistable var, named after it, each one tensor of the combined format (cut out of the combined file)."""
    from gradc.io.pdiparams import _Reader, persistable_names
    data = (EXPORT / "model.pdiparams").read_bytes()
    reader = _Reader(data, "model.pdiparams")
    directory.mkdir()
    for name in persistable_names(gradc.load(EXPORT / "model.pdmodel")):
        start = reader.offset
        reader.tensor(name)
        (directory / name).write_bytes(data[start:reader.offset])
    assert reader.offset == len(data)
    return directory


def test_a_directory_of_one_file_per_parameter_is_read_as_paddle_1x_writes_it(tmp_path):
    """Before: 'cannot read params 'model': Is a directory'. Paddle 3.3.1's own paddle.static.save_vars files of the
    legacy ResNet-18 gave its outputs too (by hand, 2026-12-01)."""
    separate = _one_file_per_var(tmp_path / "model")
    runs = [gradc_cli("run", EXPORT / "model.pdmodel", "--params", params, "--feed", EXPORT / "feed.npz",
                      "--out", tmp_path / f"{kind}.npz")
            for kind, params in (("separate", separate), ("combined", EXPORT / "model.pdiparams"))]
    assert [done.returncode for done in runs] == [0, 0], runs[0].stderr
    with np.load(tmp_path / "separate.npz") as got, np.load(tmp_path / "combined.npz") as want:
        assert got.files == want.files and all(np.array_equal(got[n], want[n]) for n in want.files)
    compiled = gradc_cli("compile", EXPORT / "model.pdmodel", "-o", tmp_path / "ft.pb", "--add-loss", "cross-entropy",
                         "--optimizer", "adam")
    assert compiled.returncode == 0, compiled.stderr
    with np.load(EXPORT / "feed.npz") as feed:
        images = feed[feed.files[0]]
    np.savez(tmp_path / "data.npz", img=images, label=np.zeros((len(images), 1), "int64"))
    trained = gradc_cli("train", tmp_path / "ft.pb", "--startup", tmp_path / "ft.startup.pb", "--params", separate,
                        "--data", tmp_path / "data.npz", "--epochs", "1")
    assert trained.returncode == 0, trained.stderr


def test_a_directory_without_the_programs_parameter_files_is_refused_in_one_line(tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "fc_0.w_0").write_bytes(b"")
    done = gradc_cli("run", EXPORT / "model.pdmodel", "--params", tmp_path / "other", "--feed", EXPORT / "feed.npz")
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        f"gradc: error: params '{tmp_path / 'other'}': no file in the directory is named after a persistable var of "
        f"the program (Paddle 1.x writes one per var): it belongs to another program"]


def test_a_paddle_1x_model_directory_given_as_the_program_points_at_its_model_file(tmp_path):
    """Before: "cannot read 'model': Is a directory", with no hint, for the directory Paddle 1.x's
    load_inference_model(dirname) takes (its program is dirname/__model__)."""
    import shutil
    (tmp_path / "model").mkdir()
    shutil.copy(EXPORT / "model.pdmodel", tmp_path / "model" / "__model__")
    done = gradc_cli("info", tmp_path / "model")
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        f"gradc: error: cannot read '{tmp_path / 'model'}': Is a directory (a program is named by its file, not by "
        f"Paddle's path prefix or its directory: {tmp_path / 'model' / '__model__'}?)"]


def test_train_lr_overrides_the_compiled_rate_as_compiling_with_it_would(tmp_path):
    """Before: "No such option '--lr'. (Did you mean one of: '--help', '--lr-var', '--plot'?)": compile takes --lr,
    train did not (--lr-schedule 0.05 was the way, which nothing said)."""
    def steps(compiled_lr, *train_options):
        out = tmp_path / f"train_{compiled_lr}.pb"
        assert gradc_cli("compile", MLP / "forward.pb", "-o", out, "--optimizer", "sgd", "--lr", compiled_lr
                         ).returncode == 0
        done = gradc_cli("train", out, "--startup", out.with_suffix(".startup.pb"), "--params", MLP / "params.npz",
                         "--feed", MLP / "feed.npz", "--steps", "3", *train_options)
        assert done.returncode == 0, done.stderr
        return [line for line in done.stdout.splitlines() if line.startswith("step ")]
    overridden, compiled = steps("0.5", "--lr", "0.05"), steps("0.05")
    assert len(compiled) == 3 and overridden == compiled and len(set(compiled)) == 3
    line = _usage_error(gradc_cli("train", tmp_path / "train_0.05.pb", "--feed", MLP / "feed.npz", "--lr", "0.1",
                                  "--lr-schedule", "0.1"))
    assert "give --lr (one rate) or --lr-schedule (a rate per step), not both" in line


def test_a_loss_appended_by_hand_without_its_var_is_said_to_be_undeclared():
    """Before: "loss 'total' must be a float var", for an op a user appended to a loaded program (a penalty added to
    the loss) without declaring its output."""
    program = gradc.load(MLP / "forward.pb")
    block = program.global_block
    block.append_op("scale", {"X": ["mean_0.tmp_0"]}, {"Out": ["total"]}, {"scale": 2.0})
    with pytest.raises(gradc.GradError) as refused:
        gradc.append_backward(program, loss="total")
    assert str(refused.value) == (
        f"loss 'total' (block 0, written by op {len(block.ops) - 1}, scale) is not declared: declare it with "
        f"block.create_var(name, shape, dtype) (gradc.verify(program) lists every undeclared var)")
    block.create_var("total", [], gradc.VarType.FP32)
    assert sorted(param for param, _ in gradc.append_backward(program, loss="total")) == sorted(
        name for name, var in block.vars.items() if var.is_parameter)


def test_set_train_mode_read_first_leaves_gradc_add_loss_the_function():
    """gradc.add_loss was a module after anything imported gradc.training.add_loss (set_train_mode's module, first):
    the module of that name shadowed the function in gradc.training. The module is training/finetune.py now."""
    import subprocess
    import sys
    script = ("import gradc; gradc.set_train_mode; import gradc.training.finetune; "
              "print(callable(gradc.add_loss), gradc.add_loss is gradc.training.finetune.add_loss)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["True", "True"], done.stderr
