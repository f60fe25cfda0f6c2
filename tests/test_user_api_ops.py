"""Legacy op types a Paddle 3.3.1 user writes from public Python APIs in legacy static mode that gradc did not know
(tools/paddle_user_api_ops.py writes the programs): py_func (paddle.static.py_func), which gradc runs with the
Python functions registered under the program's ids, and whose backward it compiles as Paddle does."""

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from fixtures import DATA, unpacked
from gradc import register_py_func

OPS = DATA / "user_api_ops"
PADDLE = np.load(OPS / "py_func.npz")
# the functions paddle.static.py_func registered in Paddle's process, under the same ids (tools/paddle_user_api_ops.py)
PY_FUNCS = {0: np.tanh, 1: lambda y, dy: dy * (1 - y * y), 2: lambda a, b: (a * b, a + b),
            3: lambda a, b, prod, total, dprod, dtotal: (dprod * b + dtotal, dprod * a + dtotal)}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    out = unpacked(OPS, tmp_path_factory.mktemp("user_api_ops"))
    np.savez(out / "feed.npz", x=PADDLE["x"], w=PADDLE["w"])
    return out


@pytest.fixture
def registered():
    """Paddle's functions for one test (the CLI runs in this process), forgotten after it."""
    for callable_id, fn in PY_FUNCS.items():
        register_py_func(callable_id, fn)
    yield
    for callable_id in PY_FUNCS:
        register_py_func(callable_id, None)


def _run(program, out) -> dict:
    run = gradc_cli("run", program, "--feed", out.parent / "feed.npz", "--fetch", "x@GRAD",
                    "--fetch", "w@GRAD", "--fetch", "mean_0.tmp_0", "-o", out)
    assert run.returncode == 0, run.stderr
    return np.load(out)


def test_paddles_py_func_program_runs_to_paddles_gradients(files, registered):
    """Paddle's program (two py_funcs, their two backward py_funcs, one with a skipped input) run by gradc."""
    ours = _run(files / "py_func_paddle.pb", files / "paddle_run.npz")
    np.testing.assert_allclose(ours["mean_0.tmp_0"], PADDLE["loss"], rtol=1e-12, atol=1e-12)
    for grad in ("x@GRAD", "w@GRAD"):
        np.testing.assert_allclose(ours[grad], PADDLE[grad], rtol=1e-12, atol=1e-12, err_msg=grad)


def test_gradc_compiles_py_funcs_backward_as_paddle_does(files, registered):
    """The backward py_funcs read X, Out and Out@GRAD less backward_skip_vars: gradc's compilation of the forward is
    Paddle's program, op for op, and runs to Paddle's numbers."""
    compiled = files / "py_func_gradc.pb"
    assert gradc_cli("compile", files / "py_func.pb", "-o", compiled, "--wrt", "x", "--wrt", "w").returncode == 0
    same = gradc_cli("diff", compiled, files / "py_func_paddle.pb")
    assert same.returncode == 0, same.stdout
    ours = _run(compiled, files / "gradc_run.npz")
    for grad in ("x@GRAD", "w@GRAD"):
        np.testing.assert_allclose(ours[grad], PADDLE[grad], rtol=1e-12, atol=1e-12, err_msg=grad)


def test_a_py_func_whose_function_is_not_registered_is_refused_in_one_line(files):
    run = gradc_cli("run", files / "py_func_paddle.pb", "--feed", files / "feed.npz", "--fetch", "x@GRAD")
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert "block 0, op 1 (py_func)" in run.stderr and "gradc.register_py_func(0, fn)" in run.stderr


def test_a_function_returning_too_few_values_is_named(files, registered):
    """A Python function returning one value for the two vars of Out is an error naming the op and the function."""
    register_py_func(2, lambda a, b: a * b)
    run = gradc_cli("run", files / "py_func_paddle.pb", "--feed", files / "feed.npz", "--fetch", "x@GRAD")
    assert run.returncode == 1 and run.stderr.count("\n") == 1
    assert "op 2 (py_func)" in run.stderr and "Python function 2 returned 1 value(s) for the 2 var(s)" in run.stderr


def test_a_py_func_without_backward_on_the_loss_path_is_refused(files, tmp_path):
    """Paddle's backward writes no grad before a py_func given no backward_func (gradients() returns none): gradc
    refuses to compile such a program rather than give zeros, naming the op."""
    program = gradc.load(files / "py_func.pb")
    program.global_block.ops[1].set_attr("backward_callable_id", -1)
    gradc.save(program, tmp_path / "no_backward.pb")
    compiled = gradc_cli("compile", tmp_path / "no_backward.pb", "-o", tmp_path / "out.pb", "--wrt", "x")
    assert compiled.returncode == 1 and compiled.stderr.count("\n") == 1
    assert "op 1 (py_func)" in compiled.stderr and "no backward function" in compiled.stderr
    assert not (tmp_path / "out.pb").exists()
