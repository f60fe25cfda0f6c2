"""What a new user's first day with gradc tripped over, on the classifier Paddle's examples write (the loss, then a
softmax for inference; tests/data/paddle/first_day, tools/paddle_first_day.py): each error says what to do."""

import json
import subprocess
import sys

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA
from gradc.errors import GradcNotice

FIRST_DAY = DATA / "first_day"
META = json.loads((FIRST_DAY / "meta.json").read_text())


def assert_one_line_error(result, *phrases, code=1):
    assert result.returncode == code, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradc: error: "), result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    for phrase in phrases:
        assert phrase in lines[0], lines[0]
    return lines[0]


def test_the_fixture_gives_paddles_loss():
    done = gradc_cli("run", FIRST_DAY / "forward.pb", "--startup", FIRST_DAY / "startup.pb", "--seed", META["seed"],
                     "--feed", FIRST_DAY / "feed.npz", "--fetch", META["loss"])
    assert done.returncode == 0, done.stderr
    assert abs(float(done.stdout.split("=")[-1]) - META["loss_value"]) < 1e-5


def test_the_lone_unread_scalar_is_picked_as_the_loss_with_a_note(tmp_path):
    """The last op is the softmax, and the one float scalar no op reads is the loss (mean_0 is read): gradc compiles
    what --loss would, and says which var it took, in one line."""
    note = (f"gradc: note: the loss is {META['loss']}, the one float scalar no op reads (the last op, softmax, "
            "writes none); name another with --loss (loss= in Python)")
    for source, loss in ((FIRST_DAY / "forward.pb", META["loss"]), (FIRST_DAY / "forward.json", "reduce_mean_1.tmp_0")):
        picked = gradc_cli("compile", source, "-o", tmp_path / f"picked{source.suffix}")
        assert picked.returncode == 0 and picked.stderr.splitlines() == [note.replace(META["loss"], loss)]
        named = gradc_cli("compile", source, "-o", tmp_path / f"named{source.suffix}", "--loss", loss)
        assert named.returncode == 0 and named.stderr == ""
        assert (tmp_path / f"picked{source.suffix}").read_bytes() == (tmp_path / f"named{source.suffix}").read_bytes()


def two_unread_scalars():
    """The first-day program with a second float scalar no op reads, written before the softmax."""
    program = gradc.load(FIRST_DAY / "forward.pb")
    block = program.global_block
    block.create_var("mean_0.doubled", shape=[], dtype=block.var(META["loss"]).dtype)
    block.ops.insert(len(block.ops) - 1, gradc.OpDesc("scale", {"X": ["mean_0.tmp_0"]}, {"Out": ["mean_0.doubled"]},
                                                      {"scale": 2.0}))
    program.mark_changed()
    return program


def test_two_unread_scalars_are_listed_not_picked(tmp_path):
    gradc.save(two_unread_scalars(), tmp_path / "two.pb")
    failed = assert_one_line_error(gradc_cli("compile", tmp_path / "two.pb", "-o", tmp_path / "t.pb"),
                                   "last op of block 0 (softmax) writes no float scalar", "--loss")
    assert failed.endswith(f"float scalars no op reads: {META['loss']}, mean_0.doubled; name it (--loss on the command "
                           "line, loss= in Python)")
    assert not (tmp_path / "t.pb").exists()


def test_feed_errors_name_the_feed_file_and_the_programs_inputs(tmp_path):
    """The training batch (x and its labels y) given to the inference model runs it, saying y is left out; a slip of
    case, a missing input and a float64 array: each error names the file, the var and what the program takes."""
    with np.load(FIRST_DAY / "feed.npz") as batch:
        x = batch["x"]
    np.savez(tmp_path / "upper.npz", X=x)
    np.savez(tmp_path / "nothing.npz")
    np.savez(tmp_path / "wide.npz", x=x.astype("float64"))
    model = ("run", FIRST_DAY / "model.pdmodel", "--params", FIRST_DAY / "model.pdiparams", "--feed")
    with_labels = gradc_cli(*model, FIRST_DAY / "feed.npz")   # Paddle's executor leaves y out too
    assert with_labels.returncode == 0 and with_labels.stderr.splitlines() == [
        f"gradc: warning: feed '{FIRST_DAY / 'feed.npz'}' holds arrays the model does not take (y; its inputs: x): "
        f"left out, as Paddle's executor leaves them out"]
    assert_one_line_error(gradc_cli(*model, tmp_path / "upper.npz"), "upper.npz': feed var 'X'", "did you mean 'x'?")
    assert_one_line_error(gradc_cli(*model, tmp_path / "nothing.npz"),
                          "nothing.npz': feed var 'x' is missing: block 0, op 0 (feed) takes it")
    assert_one_line_error(gradc_cli(*model, tmp_path / "wide.npz"),
                          "wide.npz': feed var 'x', read first by block 0, op 1 (matmul_v2), is float64")
    np.savez(tmp_path / "x.npz", x=x)   # the training program without its labels
    assert_one_line_error(gradc_cli("run", FIRST_DAY / "forward.pb", "--startup", FIRST_DAY / "startup.pb", "--feed",
                                    tmp_path / "x.npz", "--fetch", META["loss"]),
                          "x.npz': block 0, op 5 (softmax_with_cross_entropy) reads var 'y' (slot Label), which is "
                          "not fed (the program's inputs: x, y)")


def test_training_data_errors_name_the_data_file(tmp_path):
    with np.load(FIRST_DAY / "feed.npz") as batch:
        x, y = batch["x"], batch["y"]
    np.savez(tmp_path / "wide.npz", x=x.astype("float64"), y=y)
    np.savez(tmp_path / "unlabelled.npz", x=x)
    assert gradc_cli("compile", FIRST_DAY / "forward.pb", "-o", tmp_path / "t.pb", "--loss", META["loss"],
                     "--optimizer", "sgd").returncode == 0
    train = ("train", tmp_path / "t.pb", "--startup", FIRST_DAY / "startup.pb", "--startup", tmp_path / "t.startup.pb")
    assert_one_line_error(gradc_cli(*train, "--data", tmp_path / "wide.npz"), "data '", "wide.npz': feed var 'x', "
                          "read first by block 0, op 0 (matmul_v2), is float64, but block 0 declares float32")
    assert_one_line_error(gradc_cli(*train, "--feed", tmp_path / "wide.npz"), "feed '", "wide.npz': feed var 'x'")
    assert_one_line_error(gradc_cli(*train, "--data", FIRST_DAY / "feed.npz", "--eval", tmp_path / "unlabelled.npz",
                                    "--fetch", META["loss"]),
                          "eval data '", "unlabelled.npz': the fetches need 'y'")


def test_values_no_params_file_or_startup_gives_are_listed_at_once(tmp_path):
    """Forgetting the startup program of the optimizer (or all of them) names every var without a value, the params
    file they are not in, and the startup program gradc compile wrote beside the training program."""
    assert gradc_cli("compile", FIRST_DAY / "forward.pb", "-o", tmp_path / "t.pb", "--loss", META["loss"],
                     "--optimizer", "adam").returncode == 0
    line = assert_one_line_error(gradc_cli("train", tmp_path / "t.pb", "--startup", FIRST_DAY / "startup.pb",
                                           "--feed", FIRST_DAY / "feed.npz"),
                                 "no value for the persistable var(s) learning_rate_0, linear_0.b_0_moment1_0",
                                 "(17 in all)", f"{tmp_path / 't.startup.pb'} initialises the optimizer's")
    assert "linear_0.w_0," not in line   # the startup program gave the parameters
    np.savez(tmp_path / "some.npz", **{"linear_0.w_0": np.zeros((16, 4), np.float32)})
    line = assert_one_line_error(gradc_cli("run", FIRST_DAY / "forward.pb", "--params", tmp_path / "some.npz",
                                           "--feed", FIRST_DAY / "feed.npz", "--fetch", META["loss"]),
                                 "no value for the persistable var(s) linear_1.w_0, linear_1.b_0, linear_0.b_0: not in "
                                 f"params '{tmp_path / 'some.npz'}'; give them with --params, or run the startup")
    assert "optimizer" not in line


def test_export_to_a_json_name_writes_pir(tmp_path):
    """-o model.json without --format: Paddle 3's PIR JSON, not a .pdmodel beside a name the user did not ask for."""
    done = gradc_cli("export", FIRST_DAY / "forward.pb", "--startup", FIRST_DAY / "startup.pb", "--input", "x",
                     "--fetch", META["softmax"], "-o", tmp_path / "model.json")
    assert done.returncode == 0, done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model.json", "model.pdiparams"]
    assert json.loads((tmp_path / "model.json").read_text())["base_code"]["magic"] == "pir"
    with np.load(FIRST_DAY / "feed.npz") as batch:
        np.savez(tmp_path / "x.npz", x=batch["x"])
    ran = gradc_cli("run", tmp_path / "model.json", "--params", tmp_path / "model.pdiparams", "--feed",
                    tmp_path / "x.npz")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith(f"{META['softmax']}: float32[4, 4] mean=0.25 ")


def test_a_slip_in_a_command_or_op_name_suggests_the_name():
    assert_one_line_error(gradc_cli("comple", FIRST_DAY / "forward.pb"), "No such command 'comple'. Did you mean "
                          "'compile'?", code=2)
    assert_one_line_error(gradc_cli("ops", "matmul_v3"), "no op 'matmul_v3' is registered", "did you mean matmul_v2")


def test_run_says_what_it_fetched_or_why_nothing():
    """A training program has no fetch ops: without --fetch a run printed nothing at all."""
    run = ("run", FIRST_DAY / "forward.pb", "--startup", FIRST_DAY / "startup.pb", "--feed", FIRST_DAY / "feed.npz")
    done = gradc_cli(*run)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"ran {FIRST_DAY / 'forward.pb'} (9 ops); nothing fetched: name the values to print with " \
                          f"--fetch NAME (repeatable; gradc show lists the vars)\n"
    assert_one_line_error(gradc_cli(*run, "--fetch", "mean_1.tmp"), "fetch var 'mean_1.tmp' is not a var of block "
                          "0: no op writes it (did you mean 'mean_1.tmp_0'?)")


def test_a_json_file_that_is_no_program_says_what_it_holds(tmp_path):
    (tmp_path / "list.json").write_text("[1, 2]")
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "magicless.json").write_text('{"base_code": 1}')
    out = tmp_path / "out.pb"
    assert_one_line_error(gradc_cli("compile", tmp_path / "list.json", "-o", out),
                          "list.json: not a program: the JSON holds a list, not an object")
    assert_one_line_error(gradc_cli("compile", tmp_path / "empty.json", "-o", out), "empty.json: not a program: a "
                          "JSON object with neither the base_code and program of Paddle 3's PIR JSON nor the blocks")
    assert_one_line_error(gradc_cli("compile", tmp_path / "magicless.json", "-o", out),
                          "magicless.json: not a PIR program")
    assert not out.exists()


def test_the_pdiparams_of_another_model_is_said_to_be_so():
    """A smaller model's .pdiparams ends where a var starts: not 'truncated in the version of' that var."""
    other = gradc_cli("run", DATA / "export" / "model.pdmodel", "--params", FIRST_DAY / "model.pdiparams")
    assert_one_line_error(other, "model.pdiparams: holds 4 values, but the program has 10 persistable vars "
                          "('conv2d_0.b_0' is the first without one): the file belongs to another program")


def test_subpackages_read_as_attributes_after_a_bare_import():
    """README's own-op example calls gradc.gradcheck.check_op after `import gradc`: in a fresh interpreter that was
    an AttributeError (the README test runs its examples in one process, where another had imported it)."""
    code = ("import gradc\nassert callable(gradc.gradcheck.check_op) and callable(gradc.optimizers.Adam)\n"
            "assert not hasattr(gradc, 'no_such_module')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_executor_says_how_a_parameter_gets_its_value():
    """Python: running the program without loading the parameters into the scope passed (or without a scope)."""
    program = gradc.load(FIRST_DAY / "forward.pb")
    with np.load(FIRST_DAY / "feed.npz") as batch:
        feed = dict(batch)
    with pytest.raises(gradc.ExecutionError, match=r"op 0 \(matmul_v2\) reads var 'linear_1.w_0' \(slot Y\), which "
                       r"has no value: a persistable var .* load it \(gradc.load_params, --params\) or run the "
                       r"startup program first in the same scope"):
        gradc.Executor().run(program, feed, [META["loss"]], gradc.Scope())


def test_show_leaves_paddles_bookkeeping_attributes_out_unless_asked():
    """Every op of a Paddle program carries op_namescope, op_device, use_mkldnn, ...: they buried the attributes
    that differ."""
    plain = gradc_cli("show", FIRST_DAY / "forward.pb")
    full = gradc_cli("show", FIRST_DAY / "forward.pb", "--all-attrs")
    assert plain.returncode == full.returncode == 0
    matmul = "    [0] matmul_v2(X=['x'], Y=['linear_1.w_0']) -> Out=['linear_0.tmp_0']\n"
    assert f"{matmul}         force_fp32_output=False, op_role=0, op_role_var=[], trans_x=False, trans_y=False\n" \
        in plain.stdout
    assert "use_mkldnn" not in plain.stdout and "op_namescope" not in plain.stdout
    assert "use_mkldnn=False" in full.stdout and "op_namescope='/'" in full.stdout


def test_compiling_an_inference_model_says_it_has_no_loss(tmp_path):
    assert_one_line_error(gradc_cli("compile", FIRST_DAY / "model.pdmodel", "-o", tmp_path / "t.pb"),
                          f"no fetch target ({META['softmax']}) is a float scalar: a saved inference model has no loss")


def test_info_says_what_a_program_takes_and_gives():
    """The first question about a downloaded model: what do I feed it, what comes out, where is the loss."""
    model = gradc_cli("info", FIRST_DAY / "model.pdmodel")
    assert model.returncode == 0, model.stderr
    assert model.stdout.splitlines()[:7] == [
        f"{FIRST_DAY / 'model.pdmodel'}: legacy ProgramDesc (binary), 1 block(s), 8 ops",
        "kind: inference model (feed and fetch ops): run it, score it on labelled data (gradc evaluate), or fine-tune "
        "it with a loss added (gradc compile --add-loss cross-entropy|mse|ctc)",
        "inputs:", "  x  float32[-1, 8]", "outputs (fetch ops):", f"  {META['softmax']}  float32[-1, 4]",
        "persistable vars (the values --params gives): 4 (212 values)"]
    forward = gradc_cli("info", FIRST_DAY / "forward.json")
    assert forward.returncode == 0, forward.stderr
    lines = forward.stdout.splitlines()
    assert lines[0].endswith("forward.json: Paddle 3 PIR JSON, 1 block(s), 9 ops")
    assert lines[2:5] == ["inputs:", "  x  float32[-1, 8]", "  y  int64[-1, 1]"]
    assert "parameters: 4 (212 values)" in lines
    assert ("loss: reduce_mean_1.tmp_0 (gradc compile picks it by itself: the one float scalar no op reads)"
            in lines)
    assert lines[-1] == ("op types in block 0: matmul_v2 2, elementwise_add 2, reduce_mean 2, relu 1, "
                         "softmax_with_cross_entropy 1, softmax 1")


def test_info_of_a_training_program_names_its_loss(tmp_path):
    assert gradc_cli("compile", FIRST_DAY / "forward.pb", "-o", tmp_path / "t.pb", "--loss", META["loss"],
                     "--optimizer", "adam").returncode == 0
    done = gradc_cli("info", tmp_path / "t.pb")
    assert done.returncode == 0, done.stderr
    assert "kind: training program (9 backward, 4 optimizer ops)" in done.stdout
    assert f"loss: {META['loss']} (its op's op_role marks it the loss)" in done.stdout
    assert "parameters: 4 (212 values); other persistable vars: 17 (optimizer state 17)" in done.stdout


def test_optimizer_settings_without_an_optimizer_or_with_a_slip_are_refused(tmp_path):
    """--lr without --optimizer was dropped without a word (the output had no updates); --opt betaa1=... was a Python
    TypeError about Adam.__init__."""
    compile_ = ("compile", FIRST_DAY / "forward.pb", "-o", tmp_path / "t.pb", "--loss", META["loss"])
    assert_one_line_error(gradc_cli(*compile_, "--lr", "0.5"), "--lr: only with --optimizer")
    assert_one_line_error(gradc_cli(*compile_, "--gamma", "0.5"), "--gamma: only with --optimizer")
    assert_one_line_error(gradc_cli(*compile_, "--optimizer", "adam", "--opt", "betaa1=0.5"),
                          "--opt betaa1: adam has no argument 'betaa1' (did you mean beta1?)")
    assert_one_line_error(gradc_cli(*compile_, "--optimizer", "sgd", "--opt", "zzz=1"),
                          "--opt zzz: sgd has no argument 'zzz' (it takes learning_rate, weight_decay, grad_clip, "
                          "multi_precision)")
    assert not list(tmp_path.iterdir())
    done = gradc_cli(*compile_, "--optimizer", "sgd", "--lr", "0.5")
    assert done.returncode == 0, done.stderr
    assert gradc.load(tmp_path / "t.startup.pb").global_block.ops[0].attrs["value"] == 0.5


def test_the_python_api_names_its_own_keyword_for_the_loss():
    program = gradc.load(FIRST_DAY / "forward.pb")
    with pytest.warns(GradcNotice, match=rf"the loss is {META['loss']}, .*loss= in Python"):
        gradc.append_backward(program)
    assert f"{META['loss']}@GRAD" in program.global_block.vars
    with pytest.raises(gradc.GradcError, match=r"loss= in Python"):
        gradc.append_backward(two_unread_scalars())


def test_info_json_gives_the_same_facts_as_data():
    """--json: one JSON object for scripts, with every parameter and op type (the text lists twelve of each)."""
    text = gradc_cli("info", FIRST_DAY / "forward.json")
    done = gradc_cli("info", FIRST_DAY / "forward.json", "--json")
    assert done.returncode == 0, done.stderr
    facts = json.loads(done.stdout)
    assert facts["format"] == "Paddle 3 PIR JSON" and (facts["blocks"], facts["ops"]) == (1, 9)
    assert facts["inputs"] == [{"name": "x", "dtype": "float32", "shape": [-1, 8]},
                               {"name": "y", "dtype": "int64", "shape": [-1, 1]}]
    assert facts["parameters_marked"] and len(facts["parameters"]) == 4 and facts["parameter_values"] == 212
    assert (facts["loss"], facts["loss_found"]) == (
        "reduce_mean_1.tmp_0", "gradc compile picks it by itself: the one float scalar no op reads")
    assert facts["op_types"] == {"matmul_v2": 2, "elementwise_add": 2, "reduce_mean": 2, "relu": 1,
                                 "softmax_with_cross_entropy": 1, "softmax": 1}
    assert f"kind: {facts['kind']}" in text.stdout.splitlines()
    model = json.loads(gradc_cli("info", FIRST_DAY / "model.pdmodel", "--json").stdout)
    assert not model["parameters_marked"] and model["loss"] is None
    assert model["outputs"] == [{"name": META["softmax"], "dtype": "float32", "shape": [-1, 4]}]
