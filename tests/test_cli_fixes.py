"""What a first trial of the CLI tripped over: plugins beside their helpers, several startups, check on a compiled
program, --pass optimizer, readable reprs and JSON, help on every option, unknown extensions, PIR files."""

import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.cli import cli
from test_cli import MLP, assert_clean_failure, gradc_process
from test_cli import gradc as run_gradc


def test_a_plugin_file_imports_the_modules_beside_it(tmp_path):
    (tmp_path / "helper_for_plugin.py").write_text("NAME = 'count-ops-beside'\n")
    (tmp_path / "plugin_file.py").write_text(
        "from gradc.passes import Pass, register_pass\nfrom helper_for_plugin import NAME\n\n"
        "@register_pass\nclass Count(Pass):\n    name = NAME\n\n    def apply(self, program):\n"
        "        return program.num_ops()\n")
    done = gradc_process("--plugin", "./plugin_file.py", "compile", MLP / "forward.pb", "-o", "t.pb", "--pass",
                         "count-ops-beside", cwd=tmp_path)   # a real start: the plugin's pass stays out of this process
    assert done.returncode == 0, done.stderr
    assert "count-ops-beside: 15" in done.stdout


def test_run_takes_several_startups(tmp_path):
    program = gradc.load(MLP / "forward.pb")
    startup = gradc.minimize(program, "mean_0.tmp_0", "adam", lr=0.01)
    gradc.save(program, tmp_path / "train.pb")
    gradc.save(startup, tmp_path / "opt.pb")
    done = run_gradc("run", tmp_path / "train.pb", "--startup", DATA.parent.parent.parent / "examples" / "mlp" /
                     "startup.pb", "--startup", tmp_path / "opt.pb", "--feed", MLP / "feed.npz", "--fetch",
                     "learning_rate_0")
    assert done.returncode == 0, done.stderr   # the second startup gives the learning rate the first does not
    assert "learning_rate_0: float32[] = 0.0099999998" in done.stdout


def test_check_of_a_compiled_program_checks_the_gradients_it_computes(tmp_path):
    """A compiled program without an optimizer was refused ("already a training program"); its own backward is what
    is checked now: a seed doubled in the file makes every gradient twice central differences'."""
    assert run_gradc("compile", MLP / "forward.pb", "-o", tmp_path / "c.pb").returncode == 0
    given = ("--feed", MLP / "feed.npz", "--params", MLP / "params.npz")
    done = run_gradc("check", tmp_path / "c.pb", *given)
    assert done.returncode == 0, done.stderr
    assert "has a backward: checking the gradients it computes" in done.stderr
    assert done.stdout.count(" ok\n") == 4
    program = gradc.load(tmp_path / "c.pb")
    seed = next(op for op in program.global_block.ops if op.output_names() == ["mean_0.tmp_0@GRAD"])
    seed.set_attr("value", 2.0)
    gradc.save(program, tmp_path / "doubled.pb")
    doubled = run_gradc("check", tmp_path / "doubled.pb", *given)
    assert doubled.returncode == 1 and doubled.stdout.count("MISMATCH") == 4
    assert doubled.stderr.splitlines()[-1] == ("gradc: error: gradients differ from central differences for "
                                               "fc_0.b_0, fc_0.w_0, fc_1.b_0, fc_1.w_0")


def test_check_refuses_optimizer_ops_without_a_backward(tmp_path):
    """An update op with no backward op before it (its grad fed): each forward run of the comparison would move the
    weight it differentiates. It was let through while only backward ops were looked for."""
    program = gradc.load(MLP / "forward.pb")
    block = program.global_block
    block.create_var("fed_grad", block.var("fc_0.w_0").shape)
    block.create_var("lr", [1])
    block.append_op("sgd", {"Param": ["fc_0.w_0"], "Grad": ["fed_grad"], "LearningRate": ["lr"]},
                    {"ParamOut": ["fc_0.w_0"]})
    gradc.save(program, tmp_path / "updates.pb")
    assert_clean_failure(run_gradc("check", tmp_path / "updates.pb", "--feed", MLP / "feed.npz", "--params",
                                   MLP / "params.npz"), "already a training program (it has optimizer ops",
                         "check the forward program")


def test_pass_optimizer_writes_its_startup_program(tmp_path):
    done = run_gradc("compile", MLP / "forward.pb", "-o", tmp_path / "t.pb", "--pass", "optimizer")
    assert done.returncode == 0, done.stderr
    startup = gradc.load(tmp_path / "t.startup.pb")
    assert [op.output("Out") for op in startup.global_block.ops] == [["learning_rate_0"]]
    assert "Program(" not in done.stdout


def test_reprs_and_json_read_as_a_person_expects(tmp_path):
    program = gradc.load(MLP / "forward.pb")
    assert repr(program.global_block.var("x")) == "VarDesc('x', shape=[32, 16], dtype=float32)"
    gradc.save(program, tmp_path / "p.pbjson")
    var = next(v for v in json.loads((tmp_path / "p.pbjson").read_text())["blocks"][0]["vars"] if v["name"] == "x")
    assert var["type"]["dense_tensor"]["tensor"]["dims"] == [32, 16]
    assert gradc.load(tmp_path / "p.pbjson").global_block.var("x").shape == [32, 16]


def test_every_option_says_what_it_does():
    for name, command in cli.commands.items():
        for param in command.params:
            if param.param_type_name == "option":
                assert param.help, f"gradc {name} {param.opts[0]} has no help text"


def test_convert_refuses_an_extension_it_does_not_know(tmp_path):
    assert_clean_failure(run_gradc("convert", MLP / "forward.pb", tmp_path / "p.yaml"),
                         "cannot tell the format of", "p.yaml")
    assert not (tmp_path / "p.yaml").exists()
    assert run_gradc("convert", MLP / "forward.pb", tmp_path / "p.yaml", "--format", "pbtxt").returncode == 0


def test_a_pir_json_named_pdmodel_is_read_as_pir(tmp_path):
    (tmp_path / "model.pdmodel").write_bytes((DATA / "pir" / "mlp" / "forward.json").read_bytes())
    program = gradc.load(tmp_path / "model.pdmodel")
    assert program.global_block.ops


@pytest.mark.parametrize("path", ["model.pdiparams", "model.pdparams"])
def test_train_save_params_then_export_reads_them(tmp_path, path):
    """--save-params in Paddle's formats holds exactly what an export of the whole model reads."""
    program = gradc.load(DATA / "export" / "model.pdmodel")
    scope = gradc.Scope()
    gradc.load_params(scope, DATA / "export" / "model.pdiparams", program)
    names = gradc.save_params(scope, tmp_path / path, program)
    assert names == sorted(n for n, v in program.global_block.vars.items() if v.persistable and n not in
                           ("feed", "fetch"))
    again = gradc.Scope()
    gradc.load_params(again, tmp_path / path, program)
    assert all(np.array_equal(again[n], scope[n]) for n in names)
    if path.endswith(".pdiparams"):
        assert (tmp_path / path).read_bytes() == (DATA / "export" / "model.pdiparams").read_bytes()
