"""The CLI as a user runs it: one clear line and exit code 1 on bad input, no traceback, no output file. The same
main() runs in this process (cli_inprocess) where the test is about what a command does; the tests of a bad or
missing file, a plugin and what a command imports start a real interpreter, as a user's shell does."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import gradc as package
import gradc.executor as executor_package
import gradc.training as training_package
from cli_inprocess import gradc_cli as gradc
from fixtures import DATA

MLP = DATA / "mlp"


def gradc_process(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "gradc", *map(str, args)], capture_output=True, text=True, cwd=cwd)


def assert_clean_failure(result, *phrases):
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gradc: error: "), result.stderr
    for phrase in phrases:
        assert phrase in lines[0]


@pytest.fixture
def bad_files(tmp_path):
    data = (MLP / "forward.pb").read_bytes()
    (tmp_path / "truncated.pb").write_bytes(data[: len(data) // 2])
    (tmp_path / "random.pb").write_bytes(np.random.default_rng(3).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    return tmp_path


@pytest.mark.parametrize("name", ["truncated.pb", "random.pb"])
def test_bad_program_files(bad_files, name):
    out = bad_files / "out.pb"
    assert_clean_failure(gradc_process("compile", bad_files / name, "-o", out), name, "not a readable ProgramDesc")
    assert not out.exists()


def test_unknown_loss(tmp_path):
    out = tmp_path / "out.pb"
    assert_clean_failure(gradc("compile", MLP / "forward.pb", "-o", out, "--loss", "nope"),
                         "loss 'nope'", "candidates: mean_0.tmp_0")
    assert not out.exists()


def test_op_without_grad_maker(tmp_path):
    program = tmp_path / "custom.pbtxt"
    text = gradc("convert", MLP / "forward.pb", program)
    assert text.returncode == 0
    program.write_text(program.read_text().replace('type: "relu"', 'type: "my_relu"'))
    out = tmp_path / "out.pb"
    assert_clean_failure(gradc("compile", program, "-o", out), "no grad maker", "block 0, op 2 (my_relu)")
    assert not out.exists()


def test_existing_output_survives_a_failed_compile(tmp_path, bad_files):
    out = tmp_path / "train.pb"
    out.write_bytes(b"the user's previous result")
    assert_clean_failure(gradc("compile", bad_files / "random.pb", "-o", out))
    assert out.read_bytes() == b"the user's previous result"


def test_missing_feed_var_at_run(tmp_path):
    assert_clean_failure(gradc("run", MLP / "forward.pb", "--params", MLP / "params.npz", "--fetch", "mean_0.tmp_0"),
                         "op 0 (mul)", "reads var 'x'")


def test_bad_npz(tmp_path):
    bad = tmp_path / "feed.npz"
    bad.write_bytes(b"not a zip")
    assert_clean_failure(gradc("run", MLP / "forward.pb", "--feed", bad), "cannot read feed")


def test_missing_file():
    assert_clean_failure(gradc_process("show", "/nonexistent/program.pb"), "cannot read")


def test_compile_run_show_convert(tmp_path):
    train = tmp_path / "train.pb"
    compiled = gradc("compile", MLP / "forward.pb", "-o", train, "--param", "fc_0.w_0", "--no-grad", "x")
    assert compiled.returncode == 0, compiled.stderr
    assert re.search(r"^fc_0.w_0 +fc_0.w_0@GRAD$", compiled.stdout, re.M) and "fc_1.w_0" not in compiled.stdout
    out = tmp_path / "r.npz"
    ran = gradc("run", train, "--feed", MLP / "feed.npz", "--params", MLP / "params.npz",
                "--fetch", "mean_0.tmp_0", "--fetch", "fc_0.w_0@GRAD", "--out", out)
    assert ran.returncode == 0, ran.stderr
    with np.load(out) as results, np.load(MLP / "grads.npz") as grads:
        np.testing.assert_allclose(results["fc_0.w_0@GRAD"], grads["fc_0.w_0@GRAD"], rtol=1e-5, atol=1e-6)
    shown = gradc("show", train)
    assert "fc_0.w_0@GRAD : DENSE_TENSOR float32[16, 32]" in shown.stdout and "mul_grad" in shown.stdout
    text = tmp_path / "train.pbtxt"
    assert gradc("convert", train, text).returncode == 0
    assert 'type: "mul_grad"' in text.read_text()


def test_run_with_startup_program():
    ran = gradc("run", MLP / "forward.pb", "--startup", MLP / "startup.pb", "--feed", MLP / "feed.npz",
                "--fetch", "mean_0.tmp_0")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("mean_0.tmp_0: float32[] = ")


def test_ops_lists_grad_and_kernel_columns():
    listed = gradc("ops")
    assert listed.returncode == 0
    rows = {line.split()[0]: line.split()[1:] for line in listed.stdout.splitlines()[1:-1]}
    assert rows["relu"] == ["relu_grad", "yes"]
    assert rows["scale"] == ["composite", "yes"]
    assert rows["fill_constant"] == ["none", "yes"]
    assert all(columns[-1] == "yes" for columns in rows.values()), "every registered op has a kernel"


def _edited_program(tmp_path, edit):
    """The mlp forward program as text, changed by ``edit`` (text -> text)."""
    text = tmp_path / "edited.pbtxt"
    assert gradc("convert", MLP / "forward.pb", text).returncode == 0
    text.write_text(edit(text.read_text()))
    return text


def test_missing_var(tmp_path):
    program = _edited_program(tmp_path, lambda t: t.replace('arguments: "fc_0.tmp_0"', 'arguments: "ghost"', 1))
    assert_clean_failure(gradc("compile", program, "-o", tmp_path / "o.pb"),
                         "block 0, op 0 (mul) writes var 'ghost'", "not declared")


def test_shape_mismatch(tmp_path):
    program = _edited_program(tmp_path, lambda t: t.replace("dims: 16\n", "dims: 17\n", 1))
    assert_clean_failure(gradc("compile", program, "-o", tmp_path / "o.pb"), "block 0, op 0 (mul)", "[17")


def test_block_cycle(tmp_path):
    program = _edited_program(tmp_path, lambda t: t.replace("parent_idx: -1", "parent_idx: 0", 1))
    assert_clean_failure(gradc("show", program), "block 0 must have parent_idx -1")


def test_unknown_op_at_run_time(tmp_path):
    program = _edited_program(tmp_path, lambda t: t.replace('type: "relu"', 'type: "relu_v9"'))
    assert_clean_failure(gradc("run", program, "--feed", MLP / "feed.npz", "--params", MLP / "params.npz",
                               "--fetch", "mean_0.tmp_0"), "no kernel", "block 0, op 2 (relu_v9)")


@pytest.mark.parametrize("case", ["cond", "while_loop"])
def test_control_flow_fixtures_through_the_cli(case, tmp_path):
    fixture = DATA / case
    train, out = tmp_path / "train.pb", tmp_path / "r.npz"
    assert gradc("compile", fixture / "forward.pb", "-o", train).returncode == 0
    with np.load(fixture / "grads.npz") as grads:
        names = list(grads.files)
        expected = {name: grads[name] for name in names}
    fetches = [arg for name in names for arg in ("--fetch", name)]
    ran = gradc("run", train, "--feed", fixture / "feed.npz", "--params", fixture / "params.npz", "--out", out,
                *fetches)
    assert ran.returncode == 0, ran.stderr
    with np.load(out) as results:
        for name in names:
            np.testing.assert_allclose(results[name], expected[name], rtol=1e-5, atol=1e-6)


def test_outputs_get_ordinary_permissions(tmp_path):
    out = tmp_path / "train.pb"
    assert gradc("compile", MLP / "forward.pb", "-o", out).returncode == 0
    umask = os.umask(0)
    os.umask(umask)
    assert out.stat().st_mode & 0o777 == 0o666 & ~umask


def test_unwritable_output_fails_before_any_work(tmp_path):
    startup = tmp_path / "s.pb"
    assert_clean_failure(gradc("compile", MLP / "forward.pb", "-o", tmp_path / "missing" / "t.pb",
                               "--optimizer", "adam", "--startup-out", startup),
                         "cannot write", "no such directory")
    assert not startup.exists()
    assert_clean_failure(gradc("run", MLP / "forward.pb", "--feed", MLP / "feed.npz", "--params", MLP / "params.npz",
                               "--fetch", "mean_0.tmp_0", "--out", tmp_path / "missing" / "r.npz"), "cannot write")


def test_check_confirms_a_programs_gradients():
    result = gradc("check", MLP / "forward.pb", "--feed", MLP / "feed.npz", "--params", MLP / "params.npz",
                   "--max-elements", "5")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(" ok") == 4 and "4 var(s) checked" in result.stdout


def test_check_catches_a_broken_kernel(tmp_path):
    """A plugin swaps relu_grad for one without the mask; check names the parameters it corrupts."""
    (tmp_path / "broken_relu.py").write_text(
        "from gradc.executor import KERNELS\n"
        "KERNELS['relu_grad'] = lambda k: {'X@GRAD': k.x('Out@GRAD')}\n")
    result = subprocess.run([sys.executable, "-m", "gradc", "--plugin", "broken_relu", "check", str(MLP / "forward.pb"),
                             "--feed", str(MLP / "feed.npz"), "--params", str(MLP / "params.npz"),
                             "--max-elements", "5"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert result.returncode == 1
    assert "fc_0.w_0" in result.stderr and "fc_1.w_0" not in result.stderr
    assert "MISMATCH" in result.stdout and "Traceback" not in result.stderr


def test_ops_describes_one_op():
    """gradc ops TYPE: the definition (slots with flags, typed attributes), its grad op, its kernel."""
    shown = gradc("ops", "concat")
    assert shown.returncode == 0
    assert "inputs:  X[], AxisTensor?" in shown.stdout and "axis: INT = 0" in shown.stdout
    assert "grad: concat_grad(X[], AxisTensor?, Out@GRAD) -> X@GRAD[]?" in shown.stdout
    unknown = gradc("ops", "no_such_op")
    assert unknown.returncode == 1 and unknown.stderr.strip() == (
        "gradc: error: no op 'no_such_op' is registered (gradc ops lists them)")


PIR = DATA / "pir"


def test_paddle3_pir_models_run_compile_and_convert(tmp_path):
    """model.json (Paddle 3's default save) runs with its .pdiparams; a PIR training program compiles; convert
    writes PIR for .json and protobuf JSON for .pbjson, and both load back with the same results."""
    model = PIR / "inference"
    ran = gradc("run", model / "model.json", "--params", model / "model.pdiparams", "--feed", model / "feed.npz",
                "--out", tmp_path / "out.npz")
    assert ran.returncode == 0, ran.stderr
    with np.load(tmp_path / "out.npz") as out:
        np.testing.assert_allclose(out[out.files[0]], np.load(model / "expected.npy"), rtol=1e-5, atol=1e-6)
    compiled = gradc("compile", PIR / "mlp" / "forward.json", "-o", tmp_path / "train.pb", "--loss", "loss")
    assert compiled.returncode == 0, compiled.stderr
    for target in ("again.json", "again.pbjson"):
        converted = gradc("convert", model / "model.json", tmp_path / target)
        assert converted.returncode == 0, converted.stderr
        rerun = gradc("run", tmp_path / target, "--params", model / "model.pdiparams", "--feed", model / "feed.npz",
                      "--out", tmp_path / f"{target}.npz")
        assert rerun.returncode == 0, rerun.stderr
        with np.load(tmp_path / f"{target}.npz") as out:
            np.testing.assert_allclose(out[out.files[0]], np.load(model / "expected.npy"), rtol=1e-5, atol=1e-6)
    assert (tmp_path / "again.json").read_bytes().startswith(b'{"base_code":{"magic":"pir"')
    assert b'"blocks"' in (tmp_path / "again.pbjson").read_bytes()


COMPILER_COMMANDS = [("compile", "{mlp}/forward.pb", "-o", "{tmp}/train.pb", "--optimizer", "adam"),
                     ("convert", "{mlp}/forward.pb", "{tmp}/forward.json"), ("compile", "{tmp}/forward.json", "-o",
                     "{tmp}/from_pir.pb"), ("show", "{tmp}/train.pb"), ("verify", "{tmp}/train.pb"),
                     ("diff", "{tmp}/train.pb", "{tmp}/train.pb"), ("view", "{tmp}/train.pb", "-o", "{tmp}/train.html"),
                     ("ops", "relu"), ("ops",)]


def test_compiler_commands_start_without_numpy(tmp_path):
    """compile, convert, show, verify, diff, view (without values) and ops never compute, so they do not pay for
    numpy's (or the executor's) import at start-up; run does, and numpy's warnings are off there unless --debug."""
    script = ("import sys\nfrom gradc.cli import cli\n"
              "for args in sys.argv[1:]:\n"
              "    cli.main(args.split('|'), standalone_mode=False)\n"
              "print(sorted(m for m in ('numpy', 'gradc.executor.executor', 'gradc.pir.export')\n"
              "             if m in sys.modules))\n")
    commands = ["|".join(arg.format(mlp=MLP, tmp=tmp_path) for arg in command) for command in COMPILER_COMMANDS]
    started = subprocess.run([sys.executable, "-c", script, *commands], capture_output=True, text=True)
    assert started.returncode == 0, started.stderr
    assert started.stdout.strip().splitlines()[-1] == "['gradc.pir.export']", started.stdout   # convert wrote PIR
    script = ("import sys\nfrom gradc.cli import cli\ncli.main(sys.argv[1:], standalone_mode=False)\n"
              "import numpy\nprint(sorted(numpy.geterr().values()))\n")
    ran = subprocess.run([sys.executable, "-c", script, "run", MLP / "forward.pb", "--feed", MLP / "feed.npz",
                          "--params", MLP / "params.npz"], capture_output=True, text=True)
    assert ran.returncode == 0 and ran.stdout.strip().splitlines()[-1] == "['ignore', 'ignore', 'ignore', 'ignore']"


def test_a_run_imports_only_what_it_uses():
    """`gradc run` imports no protobuf (the program and a .pdiparams are read plainly), no numpy.random (nothing
    random), no trainer, checkpoints, gradient check or profiler, and none of the compiler's passes: of a program
    with .npz params, and of Paddle's inference model; of Paddle 3's PIR inference model, none of the compiler."""
    unused = ["numpy.random", "gradc.training.trainer", "gradc.training.checkpoint", "gradc.gradcheck",
              "gradc.profile", "tracemalloc", "json", "gradc.backward", "gradc.optimizers", "gradc.passes"]
    script = ("import sys\nfrom gradc.cli import cli\ncli.main(sys.argv[2:], standalone_mode=False)\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] == 'google' or m in sys.argv[1].split()))\n")
    ran = subprocess.run([sys.executable, "-c", script, " ".join(unused), "run", MLP / "forward.pb", "--feed",
                          MLP / "feed.npz", "--params", MLP / "params.npz", "--fetch", "mean_0.tmp_0"],
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.strip().splitlines()
    assert lines[0].startswith("mean_0.tmp_0: float32[] = ") and lines[-1] == "[]", ran.stdout
    model = DATA / "inference"   # Paddle's save_inference_model: its params are a .pdiparams
    ran = subprocess.run([sys.executable, "-c", script, " ".join(unused), "run", model / "model.pdmodel", "--params",
                          model / "model.pdiparams", "--feed", model / "feed.npz"], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().splitlines()[-1] == "[]", ran.stdout
    pir = DATA / "pir" / "inference"   # Paddle 3's PIR JSON reads with json, and still without the compiler
    ran = subprocess.run([sys.executable, "-c", script, "gradc.backward gradc.optimizers gradc.passes", "run",
                          pir / "model.json", "--params", pir / "model.pdiparams", "--feed", pir / "feed.npz"],
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().splitlines()[-1] == "[]", ran.stdout


def test_the_commands_that_read_programs_import_none_of_the_compiler(tmp_path):
    """verify, show and diff load and check a program: the backward, the optimizers and the passes stay unimported."""
    script = ("import sys\nfrom gradc.cli import cli\n"
              "for args in sys.argv[1:]:\n"
              "    cli.main(args.split('|'), standalone_mode=False)\n"
              "print(sorted({m.split('.')[1] for m in sys.modules if m.startswith('gradc.') and m.split('.')[1] in "
              "('backward', 'optimizers', 'passes', 'layers')}))\n")
    commands = [f"verify|{MLP / 'forward.pb'}", f"show|{MLP / 'forward.pb'}",
                f"diff|{MLP / 'forward.pb'}|{MLP / 'forward.pb'}"]
    ran = subprocess.run([sys.executable, "-c", script, *commands], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().splitlines()[-1] == "[]", ran.stdout


def test_a_compile_imports_only_the_passes_it_runs(tmp_path):
    """A compile without --amp, --optimizer, --recompute or --accumulate imports the verify and backward passes only
    (the mixed-precision pass and the rest are imported when named); --pass still finds every built-in pass."""
    script = ("import sys\nfrom gradc.cli import cli\n"
              "cli.main(sys.argv[1:], standalone_mode=False)\n"
              "print(sorted(m.split('.')[2] for m in sys.modules if m.startswith('gradc.passes.')))\n")
    ran = subprocess.run([sys.executable, "-c", script, "compile", MLP / "forward.pb", "-o", tmp_path / "train.pb"],
                         capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.strip().splitlines()[-1] == "['backward', 'base', 'verify']", ran.stdout
    ran = subprocess.run([sys.executable, "-c", script, "compile", MLP / "forward.pb", "-o", tmp_path / "fp64.pb",
                          "--pass", "float64"], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    assert "precision" in ran.stdout.strip().splitlines()[-1], ran.stdout


def test_export_is_the_function_however_its_module_is_imported():
    """``gradc.export`` and ``gradc.training.export`` are the function, imported first or not (its module is
    gradc.training.inference: a module of the function's name would put itself in the function's place)."""
    script = ("import gradc.training.inference as module\nimport gradc\nfrom gradc.training import export\n"
              "print(export is gradc.export is gradc.training.export is module.export)\n")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert ran.stdout.strip() == "True", ran.stderr


@pytest.mark.parametrize("package", [package, executor_package, training_package],
                         ids=["gradc", "gradc.executor", "gradc.training"])
def test_every_public_name_resolves_and_the_lazy_ones_are_declared_for_type_checkers(package):
    assert set(package.__all__) <= set(dir(package))   # before any is read: an editor completes them
    assert all(getattr(package, name) is not None for name in package.__all__)
    tree = ast.parse(Path(package.__file__).read_text())
    checked = next(node for node in tree.body if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING")
    declared = {alias.name for node in checked.body for alias in node.names}
    assert declared == set(package._ON_FIRST_USE)

