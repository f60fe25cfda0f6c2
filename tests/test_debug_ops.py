"""print and check_numerics (gradc.ops.debug) show what Paddle 3.3.1 shows: the expected texts are Paddle's own
standard output for the same programs (legacy static mode, CPU)."""

from __future__ import annotations

import numpy as np
import pytest

import gradc
from cli_inprocess import gradc_cli
from gradc.executor.lod import LoDTensor
from gradc.layers import ProgramBuilder
from test_cli import assert_clean_failure

# Paddle's output of x = arange(6) [2, 3] -> scale 2 -> Print(message "hello", summarize 4, print_phase "both",
# first_n 2) -> mean, run three times with its backward
PADDLE_LISTING = """\
Variable: {}
  - message: hello
  - lod: {{}}
  - place: Place(cpu)
  - shape: [2, 3]
  - layout: NCHW
  - dtype: float32
  - data: [{}]
"""
PADDLE_PRINTED_TWICE = (PADDLE_LISTING.format("scale_0.tmp_0", "0.000000 2.000000 4.000000 6.000000")
                        + PADDLE_LISTING.format("print_0.tmp_0@GRAD", "0.166667 0.166667 0.166667 0.166667")) * 2


def printed_model(phase: str = "both", first_n: int = 2):
    net = ProgramBuilder()
    x = net.data("x", [2, 3])
    doubled = net.op("scale", {"X": x}, {"scale": 2.0})[0]
    shown = net.op("print", {"In": doubled}, {"message": "hello", "summarize": 4, "print_phase": phase.upper(),
                                              "first_n": first_n})[0]
    loss = net.mean(shown)
    gradc.append_backward(net.program, loss)
    return net.program, loss


def test_print_shows_forward_and_gradient_as_paddle_does_at_most_first_n_times(capsys):
    program, loss = printed_model()
    executor = gradc.Executor()
    for _ in range(3):
        (grad,) = executor.run(program, {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, ["x@GRAD"])
    assert capsys.readouterr().out == PADDLE_PRINTED_TWICE
    np.testing.assert_allclose(grad, np.full((2, 3), 2 / 6), rtol=1e-6)   # print passes both ways unchanged


@pytest.mark.parametrize("phase, shown", [("forward", ["scale_0.tmp_0"]), ("backward", ["print_0.tmp_0@GRAD"])])
def test_print_phase_picks_the_pass_it_shows(capsys, phase, shown):
    program, loss = printed_model(phase, first_n=-1)
    gradc.Executor().run(program, {"x": np.ones((2, 3), np.float32)}, ["x@GRAD"])
    out = capsys.readouterr().out
    assert [line.split(": ")[1] for line in out.splitlines() if line.startswith("Variable")] == shown


def test_print_of_each_dtype_a_lod_and_its_switches_off(capsys):
    """Paddle prints every value with %f (ints and bools too), a LoD as its offsets, and leaves out what a switch
    turns off (the place it always shows)."""
    net = ProgramBuilder()
    names = {"x": ([2, 3], "float32"), "i": ([3], "int64"), "b": ([2], "bool"), "s": ([], "float32")}
    for name, (shape, dtype) in names.items():
        net.data(name, shape, dtype)
    seq = net.data("l", [-1, 1], lod_level=1)
    off = {f"print_tensor_{item}": False for item in ("name", "type", "shape", "layout", "lod")}
    net.op("print", {"In": "x"}, {"summarize": -1, **off})
    net.op("print", {"In": "i"}, {"message": "ints"})
    net.op("print", {"In": "b"})
    net.op("print", {"In": "s"})
    net.op("print", {"In": seq})
    feed = {"x": np.array([[1.5, -2, 3], [4, 5, 6e-7]], np.float32), "i": np.array([1, -2, 3]),
            "b": np.array([True, False]), "s": np.array(7.25, np.float32),
            "l": LoDTensor(np.arange(3, dtype=np.float32).reshape(3, 1), ((0, 2, 3),))}
    gradc.Executor().run(net.program, feed, [])
    out = capsys.readouterr().out
    assert out.startswith("  - place: Place(cpu)\n  - data: [1.500000 -2.000000 3.000000 4.000000 5.000000 0.000001]\n")
    assert ("Variable: i\n  - message: ints\n  - lod: {}\n  - place: Place(cpu)\n  - shape: [3]\n  - layout: NCHW\n"
            "  - dtype: int64\n  - data: [1.000000 -2.000000 3.000000]\n") in out
    assert "  - dtype: bool\n  - data: [1.000000 0.000000]\n" in out
    assert "  - shape: []\n  - layout: NCHW\n  - dtype: float32\n  - data: [7.250000]\n" in out
    assert "Variable: l\n  - lod: {{0, 2, 3}}\n" in out


def numerics_program(level: int):
    net = ProgramBuilder()
    x = net.data("x", [-1])
    attrs = {"op_type": "myop", "var_name": "x", "check_nan_inf_level": level}
    stats, values = net.op("check_numerics", {"tensor": x}, attrs, outputs=["stats", "values"])
    return net.program, stats, values


def test_check_numerics_counts_and_summarises_as_paddle(capsys):
    program, stats, values = numerics_program(3)
    got = gradc.Executor().run(program, {"x": np.array([1.5, -2, 0, 4, 0, 6], np.float32)}, [stats, values])
    np.testing.assert_array_equal(got[0], np.array([0, 0, 2], np.int64))
    np.testing.assert_allclose(got[1], np.array([6, -2, 1.5833334], np.float32))
    assert capsys.readouterr().out == ("[PRECISION] in [device=cpu, op=myop, tensor=x, dtype=fp32], numel=6, "
                                       "num_zero=2, max=6.000000e+00, min=-2.000000e+00, mean=1.583333e+00\n")
    (stats_of_none,) = gradc.Executor().run(program, {"x": np.zeros(0, np.float32)}, [stats])
    np.testing.assert_array_equal(stats_of_none, [0, 0, 0])


def test_check_numerics_reports_nan_and_inf_and_stops_at_level_0(capsys, tmp_path):
    bad = np.array([np.nan, np.inf, -np.inf, 0, 1], np.float32)
    program, stats, _ = numerics_program(1)
    (counts,) = gradc.Executor().run(program, {"x": bad}, [stats])
    np.testing.assert_array_equal(counts, [1, 2, 1])
    assert capsys.readouterr().out.startswith("[PRECISION] [ERROR] in [device=cpu, op=myop, tensor=x, dtype=fp32], "
                                              "numel=5, num_nan=1, num_inf=2, num_zero=1, max=nan")
    program, _, _ = numerics_program(0)
    gradc.save(program, tmp_path / "check.pb")
    np.savez(tmp_path / "feed.npz", x=bad)
    result = gradc_cli("run", tmp_path / "check.pb", "--feed", tmp_path / "feed.npz")
    assert_clean_failure(result, "op 0 (check_numerics)", "there are NaN or Inf values (num_nan=1, num_inf=2, "
                                                           "num_zero=1) in [device=cpu, op=myop, tensor=x")
