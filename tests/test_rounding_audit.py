"""gradc.rounding_audit and `gradc precision`: where a float32 program loses precision against its float64 run."""

import numpy as np
from click.testing import CliRunner

import gradc
from fixtures import DATA
from gradc import optimizers
from gradc.cli import cli
from gradc.executor import KERNELS
from gradc.rounding_audit import audit

MLP = DATA.parents[2] / "examples" / "mlp"


def _cancelling():
    """y = (x + 1000) - 1000 - 0.5 * x: float32 keeps 3 digits of x's after the add, float64 all of them."""
    program = gradc.Program()
    block = program.global_block
    for name in ("x", "shifted", "back", "half", "y"):
        block.create_var(name, [64])
    block.append_op("scale", {"X": ["x"]}, {"Out": ["shifted"]}, {"scale": 1.0, "bias": 1000.0})
    block.append_op("scale", {"X": ["shifted"]}, {"Out": ["back"]}, {"scale": 1.0, "bias": -1000.0})
    block.append_op("scale", {"X": ["x"]}, {"Out": ["half"]}, {"scale": 0.5, "bias": 0.0})
    block.append_op("elementwise_sub", {"X": ["back"], "Y": ["half"]}, {"Out": ["y"]}, {"axis": -1})
    return program, {"x": np.random.default_rng(0).standard_normal(64).astype(np.float32)}


def test_an_op_amplifying_rounding_ranks_first_with_its_own_error_small():
    program, feed = _cancelling()
    rows = {row.var: row for row in audit(program, feed, {})}
    back = rows["back"]
    # shifted is x + 1000 rounded to float32 (eps 1000 * 1.2e-7 / 1000: relative 1.2e-7 of it), back = shifted - 1000
    # exposes that rounding as 6e-5 of x: the subtraction is exact (own 0), the error it shows was given to it
    assert rows["shifted"].error < 1e-7 and back.inputs == rows["shifted"].error
    assert back.error > 1e-5 and back.own == 0.0 and back.growth > 100
    assert max(rows.values(), key=lambda row: row.growth) in (back, rows["y"])
    assert rows["half"].error == 0.0 and rows["half"].own == 0.0   # halving is exact in any precision


def test_a_kernel_that_rounds_badly_shows_in_its_own_error(monkeypatch):
    program, feed = _cancelling()
    exact = KERNELS["elementwise_sub"]

    def coarse(k):   # the float32 run rounds its results to float16, the float64 run computes them right
        out = exact(k)["Out"]
        return {"Out": out.astype(np.float16).astype(out.dtype) if out.dtype == np.float32 else out}

    monkeypatch.setitem(KERNELS, "elementwise_sub", coarse)
    row = next(row for row in audit(program, feed, {}) if row.var == "y")
    assert 1e-4 < row.own < 1e-3   # float16's rounding (eps 9.8e-4), relative to the largest output
    assert row.error >= row.own / 2


def test_a_training_step_leaves_the_given_values_alone():
    program, scope = gradc.load(str(MLP / "forward.pb")), gradc.Scope()
    gradc.Executor().run(optimizers.Adam(0.01).minimize(program, "mean_0.tmp_0"), {}, [], scope)
    given = {name: scope.find(name) for name, var in program.global_block.vars.items() if var.persistable
             and scope.find(name) is not None} | dict(np.load(MLP / "params.npz"))
    before = {name: np.array(value, copy=True) for name, value in given.items()}
    rows = audit(program, dict(np.load(MLP / "feed.npz")), given, top=100)
    assert all(np.array_equal(given[name], before[name]) for name in given)   # Adam wrote new arrays
    grads = [row for row in rows if row.var.endswith("@GRAD")]
    assert len(grads) >= 6 and all(row.error < 1e-5 and row.own is not None and row.own < 1e-6 for row in grads)


def test_a_value_written_twice_is_left_out_with_the_ops_that_read_it():
    program, feed = _cancelling()
    program.global_block.append_op("scale", {"X": ["back"]}, {"Out": ["back"]}, {"scale": 2.0, "bias": 0.0})
    listed = {row.var for row in audit(program, feed, {})}
    assert listed == {"shifted", "half"}   # back's first value, and y which read it, are not fetched


def test_precision_command_lists_the_ops_and_refuses_a_program_without_its_values():
    runner = CliRunner()
    result = runner.invoke(cli, ["precision", str(MLP / "forward.pb"), "--feed", str(MLP / "feed.npz"),
                                 "--params", str(MLP / "params.npz"), "--top", "3"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["op", "type", "output", "dtype", "error", "inputs", "growth", "own"]
    assert len(lines) == 5 and lines[-1].startswith("error: the output's distance from the float64 run")
    result = runner.invoke(cli, ["precision", str(MLP / "forward.pb"), "--feed", str(MLP / "feed.npz")])
    assert result.exit_code == 1 and "no value for the persistable var(s) fc_0.w_0" in str(result.exception)
