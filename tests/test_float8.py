"""float8 (gradc.float8): float8_e4m3fn and float8_e5m2 vars hold float32 values of their format, rounded as Paddle
3.3.1 rounds them (tools/paddle_float8_fixtures.py -> tests/data/float8), saturating where Paddle's CPU conversion
is non-monotone (CUDA's rule); casts, feeds and parameter files (.pdiparams, paddle.save's int8 bits)."""

from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError, FormatError
from gradc.float8 import from_bits, max_finite, round_to_float8, to_bits
from gradc.io.pdiparams import read_params, write_params
from gradc.ir import VarType

DATA = Path(__file__).parent / "data" / "float8"
E4M3FN, E5M2 = VarType.FP8_E4M3FN, VarType.FP8_E5M2
CODES = {"e4m3fn": E4M3FN, "e5m2": E5M2}


@pytest.fixture(scope="module")
def rounding():
    with np.load(DATA / "rounding.npz") as archive:
        return {name: archive[name] for name in archive.files}


def paddle_cpu_is_wrong(x: np.ndarray, fmt: str) -> np.ndarray:
    """Where Paddle 3.3.1's CPU conversion breaks round-to-nearest with saturation: e4m3fn 464 < |x| < 480 (NaN) and
    NaN (448); e5m2 61440 <= |x| < 65536 (inf)."""
    size = np.abs(x)
    if fmt == "e4m3fn":
        return ((size > 464) & (size < 480)) | np.isnan(x)
    return (size >= 61440) & (size < 65536)


@pytest.mark.parametrize("fmt", sorted(CODES))
def test_rounding_gives_paddles_bits_wherever_paddles_cpu_conversion_is_monotone(rounding, fmt):
    x, paddle_bits = rounding["x"], rounding[fmt]
    wrong = paddle_cpu_is_wrong(x, fmt)
    assert 4 <= np.count_nonzero(wrong) < 20   # the sweep reaches each of Paddle's odd ranges
    got = to_bits(x, CODES[fmt])
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got[~wrong], paddle_bits[~wrong])
    assert np.count_nonzero(got != paddle_bits) == np.count_nonzero(wrong)


def test_out_of_range_saturates_and_nan_stays_nan_as_cuda_converts():
    big = np.array([448.0, 463.9, 464.0, 465.0, 479.0, 480.0, 1e9, np.inf, -465.0, -np.inf], np.float32)
    np.testing.assert_array_equal(round_to_float8(big, E4M3FN), [448, 448, 448, 448, 448, 448, 448, 448, -448, -448])
    wide = np.array([57344.0, 61439.0, 61440.0, 65535.0, 65536.0, np.inf, -61440.0], np.float32)
    np.testing.assert_array_equal(round_to_float8(wide, E5M2), [57344] * 6 + [-57344])
    for code in CODES.values():
        assert np.isnan(round_to_float8(np.float32(np.nan), code))
        assert to_bits(np.float32(np.nan), code) == 0x7F
    assert (max_finite(E4M3FN), max_finite(E5M2)) == (448.0, 57344.0)


@pytest.mark.parametrize("fmt", sorted(CODES))
def test_every_bit_pattern_has_paddles_value(rounding, fmt):
    values = from_bits(np.arange(256, dtype=np.uint8), CODES[fmt])
    np.testing.assert_array_equal(values, rounding[f"values_{fmt}"])   # NaNs where Paddle's are, -0 included
    assert np.array_equal(np.signbit(values), np.signbit(rounding[f"values_{fmt}"]))
    finite = np.isfinite(values)
    np.testing.assert_array_equal(to_bits(values[finite], CODES[fmt]), np.arange(256)[finite])   # exact round trip


def test_ties_go_to_the_even_neighbour_and_subnormals_round_on_their_grid():
    # e4m3fn: 1 + 1/16 lies between 1 and 1.125 (mantissa 000 | 001): to 1; 1 + 3/16 between 1.125 and 1.25: to 1.25
    np.testing.assert_array_equal(round_to_float8(np.float32([1.0625, 1.1875, -1.0625]), E4M3FN), [1.0, 1.25, -1.0])
    step = 2.0 ** -9   # e4m3fn's smallest subnormal
    x = np.float32([0.5 * step, 1.5 * step, 2.5 * step, 0.51 * step, 7.5 * step])
    np.testing.assert_array_equal(round_to_float8(x, E4M3FN), np.float32([0, 2 * step, 2 * step, step, 8 * step]))
    assert to_bits(np.float32(7.5 * step), E4M3FN) == 0x08   # rounds up into the smallest normal number
    tiny = 2.0 ** -16   # e5m2's
    np.testing.assert_array_equal(round_to_float8(np.float32([0.5 * tiny, 1.5 * tiny, 3 * tiny]), E5M2),
                                  np.float32([0, 2 * tiny, 3 * tiny]))
    zeros = round_to_float8(np.float32([-0.0, -1e-30]), E5M2)
    assert np.all(zeros == 0) and np.all(np.signbit(zeros))   # -0 and negative underflow keep their sign


def test_float64_values_round_through_float32_as_paddles_static_cast():
    x = np.float64(1.0625 + 2.0 ** -40)   # above the tie in float64, exactly on it in float32
    assert round_to_float8(x, E4M3FN) == 1.0


def test_paddles_legacy_cast_program_runs_to_paddles_values():
    with np.load(DATA / "cast.npz") as case:
        program = gradc.load(DATA / "cast.pb")
        casts = [op for op in program.global_block.ops if op.type == "cast"]
        assert sorted(op.attr("out_dtype") for op in casts) == [5, 5, 32, 33]
        (got,) = gradc.Executor().run(program, {"x": case["x"]}, [str(case["out_name"])])
        np.testing.assert_array_equal(got, case["out"])


def model_and_scope(params: str):
    program = gradc.load(DATA / "model.json")
    scope = gradc.Scope()
    gradc.load_params(scope, DATA / params, program)
    return program, scope


@pytest.mark.parametrize("params", ["model.pdiparams", "state.pdparams"])
def test_paddles_pir_model_with_float8_buffers_runs_from_either_parameter_file(params):
    program, scope = model_and_scope(params)
    assert {program.global_block.vars[name].dtype for name in ("eager_tmp_0", "eager_tmp_1")} == {E4M3FN, E5M2}
    np.testing.assert_array_equal(scope["eager_tmp_0"], np.float32([[0.3125, -1.75, 448], [2.0 ** -8, 96, -0.0]]))
    with np.load(DATA / "model.npz") as case:
        (got,) = gradc.Executor().run(program, {"x": case["x"]}, ["fetch_name_0"], scope)
        np.testing.assert_array_equal(got, case["out"])


def test_a_parameter_file_holds_float8_as_paddle_writes_it(tmp_path):
    program, scope = model_and_scope("model.pdiparams")
    values = read_params(DATA / "model.pdiparams", program)
    write_params(tmp_path / "again.pdiparams", program, values)
    assert (tmp_path / "again.pdiparams").read_bytes() == (DATA / "model.pdiparams").read_bytes()
    rounded = {name: np.full((2, 3), 500.0, np.float32) for name in values}   # float32 values are rounded on write
    write_params(tmp_path / "rounded.pdiparams", program, rounded)
    back = read_params(tmp_path / "rounded.pdiparams", program)
    assert back["eager_tmp_0"][0, 0] == 448 and back["eager_tmp_1"][0, 0] == 512


def test_a_float8_feed_takes_paddles_int8_bits_uint8_bits_or_float32_values():
    program = gradc.load(DATA / "model.json")
    program.global_block.vars["x"].dtype = E4M3FN
    cast = program.global_block.ops[0]
    cast.set_attr("in_dtype", int(E4M3FN))
    scope = model_and_scope("model.pdiparams")[1]
    run = gradc.Executor()
    floats = np.float32([[1.1, 2.3, 500.0], [-3.3, 0.01, 7.0]])
    expected = run.run(program, {"x": floats}, ["cast_0.tmp_0"], scope)[0]
    np.testing.assert_array_equal(expected, round_to_float8(floats, E4M3FN))
    for bits in (to_bits(floats, E4M3FN), to_bits(floats, E4M3FN).view(np.int8)):
        np.testing.assert_array_equal(run.run(program, {"x": bits}, ["cast_0.tmp_0"], scope)[0], expected)
    with pytest.raises(ExecutionError, match="float64, but block 0 declares float8_e4m3fn"):
        run.run(program, {"x": floats.astype(np.float64)}, ["cast_0.tmp_0"], scope)


def test_a_float8_parameter_refuses_float64_values(tmp_path):
    program = gradc.load(DATA / "model.json")
    np.savez(tmp_path / "wide.npz", eager_tmp_0=np.zeros((2, 3)))
    with pytest.raises(FormatError, match=r"'eager_tmp_0', read first by block 0, op 2 \(cast\), is float64, but the "
                                          r"program declares float8_e4m3fn"):
        gradc.load_params(gradc.Scope(), tmp_path / "wide.npz", program)


def test_a_result_written_to_a_float8_var_is_rounded_by_the_store():
    program = gradc.load(DATA / "cast.pb")
    block = program.global_block
    out = [op for op in block.ops if op.type == "elementwise_add"][0].output("Out")[0]
    block.vars[out].dtype = E5M2   # the sum of two float32 values lands in a float8_e5m2 var
    with np.load(DATA / "cast.npz") as case:
        (got,) = gradc.Executor().run(program, {"x": case["x"]}, [out])
        np.testing.assert_array_equal(got, round_to_float8(case["out"], E5M2))
        assert not np.array_equal(got, case["out"])


def test_pir_export_keeps_float8_types(tmp_path):
    program = gradc.load(DATA / "model.json")
    gradc.save(program, tmp_path / "again.json")
    again = gradc.load(tmp_path / "again.json")
    assert again.global_block.vars["eager_tmp_1"].dtype == E5M2
    assert '"0.t_f8e4m3fn"' in (tmp_path / "again.json").read_text()


def test_a_float8_program_run_past_the_straight_line_threshold_keeps_rounding():
    """After STRAIGHT_AFTER_RUNS runs a plan becomes generated code: its float8 vars are still rounded."""
    from gradc.executor.executor import STRAIGHT_AFTER_RUNS

    program = gradc.load(DATA / "cast.pb")
    out = [op for op in program.global_block.ops if op.type == "elementwise_add"][0].output("Out")[0]
    program.global_block.vars[out].dtype = E4M3FN
    executor = gradc.Executor()
    with np.load(DATA / "cast.npz") as case:
        for _ in range(STRAIGHT_AFTER_RUNS + 3):
            (got,) = executor.run(program, {"x": case["x"]}, [out])
            np.testing.assert_array_equal(got, round_to_float8(case["out"], E4M3FN))


def test_gradcs_backward_flows_through_float8_casts_as_paddles():
    """Paddle's append_backward carries the gradient through a float8 var (its cast grads cast the gradient back,
    rounding it to float8_e4m3fn on the way): gradc's backward writes the same ops and gets Paddle's w@GRAD bit for
    bit."""
    with np.load(DATA / "backward.npz") as case:
        program = gradc.load(DATA / "backward.pb")
        gradc.append_backward(program, str(case["loss_name"]))
        grad_ops = [op.type for op in program.global_block.ops][5:]
        assert grad_ops == ["fill_constant", "reduce_mean_grad", "elementwise_mul_grad", "sum", "cast", "cast",
                            "elementwise_mul_grad"]
        assert program.global_block.vars["cast_0.tmp_0@GRAD"].dtype == E4M3FN
        scope = gradc.Scope()
        scope["w"] = case["w"]
        loss, w_grad = gradc.Executor().run(program, {"x": case["x"]}, [str(case["loss_name"]), "w@GRAD"], scope)
        np.testing.assert_array_equal(loss, case["loss"])
        np.testing.assert_array_equal(w_grad, case["w_grad"])


def test_gradc_check_widens_float8_vars_to_float64():
    """gradc check's float64 pass widens float8 vars too: kept in float8_e4m3fn, its rounding swallowed every
    central difference."""
    from gradc.gradcheck import compare_program

    with np.load(DATA / "backward.npz") as case:
        program = gradc.load(DATA / "backward.pb")
        _, checks = compare_program(program, {"x": case["x"]}, None, str(case["loss_name"]), {"w": case["w"]},
                                    max_elements=5, float64=True)
    assert [check.var for check in checks] == ["w"] and checks[0].mismatch is None, checks
