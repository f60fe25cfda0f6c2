"""oneDNN-only ops written and translated to PIR by Paddle 3.3.1 (tools/paddle_onednn_ops.py), with Paddle's own
oneDNN run of each: gradc gives the int8 / uint8 / bfloat16 outputs of quantize, dequantize and requantize bit for
bit, and the float ops to float32 rounding. The programs Paddle's int8 passes write: tests/test_onednn_int8.py."""

import json

import numpy as np
import pytest

import gradc
from fixtures import DATA
from gradc.bfloat16 import to_bits
from one_op import run

ROOT = DATA / "onednn_ops"
CASES = sorted(p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith("ptq_"))
OPS = {"quantize", "dequantize", "requantize", "fused_elementwise_div", "fused_conv3d", "conv2d_transpose_bias", "mul"}
PIR_OPS = {"onednn_op.quantize", "onednn_op.dequantize", "onednn_op.requantize", "onednn_op.fused_elementwise_div",
           "onednn_op.fused_conv3d", "onednn_op.conv2d_transpose_bias", "pd_op.conv2d_transpose_bias",
           "onednn_op.matmul_with_flatten"}
EXACT = ("quantize", "requantize")   # cases whose every output Paddle's reorders round exactly as gradc's


def _meta(case: str) -> dict:
    return json.loads((ROOT / case / "meta.json").read_text())


def _run(case: str, program_file: str) -> dict:
    fetches = _meta(case)["fetches"]
    with np.load(ROOT / case / "feed.npz") as feed:
        outs = gradc.Executor().run(gradc.load(ROOT / case / program_file), dict(feed), fetches)
    return dict(zip(fetches, outs))


def test_the_fixtures_hold_every_op():
    assert OPS == set().union(*(_meta(case)["legacy_ops"] for case in CASES))
    assert PIR_OPS == set().union(*(_meta(case)["pir_ops"] for case in CASES)) - {"pd_op.full_int_array"}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("program_file", ["program.pdmodel", "program.json"])
def test_runs_to_paddles_numbers(case, program_file):
    got = _run(case, program_file)
    with np.load(ROOT / case / "expected.npz") as expected:
        for name, want in expected.items():
            value = to_bits(got[name]) if want.dtype == np.uint16 else got[name]   # bfloat16: Paddle's bits
            assert value.dtype == want.dtype and value.shape == want.shape, name
            if case.startswith(EXACT):
                np.testing.assert_array_equal(value, want, err_msg=name)
            else:
                np.testing.assert_allclose(value, want, rtol=1e-5, atol=1e-5, err_msg=name)


@pytest.mark.parametrize("case", CASES)
def test_loads_verifies_and_saves_byte_for_byte(case, tmp_path):
    program = gradc.load(ROOT / case / "program.pdmodel")
    assert gradc.verify(program) == []
    gradc.save(program, tmp_path / "again.pdmodel")
    assert (tmp_path / "again.pdmodel").read_bytes() == (ROOT / case / "program.pdmodel").read_bytes()


def test_the_saturated_ties_and_types_of_quantize():
    """Halves round to even, values past the range saturate, and the output type follows the attributes."""
    x = np.array([0.5, 1.5, 2.5, -0.5, -2.5, 1e6, -1e6], np.float32)
    np.testing.assert_array_equal(run("quantize", {"Input": x}, {"Scale": 1.0, "is_negative_input": True})["Output"],
                                  np.array([0, 2, 2, 0, -2, 127, -128], np.int8))
    np.testing.assert_array_equal(run("quantize", {"Input": x}, {"Scale": 1.0})["Output"],
                                  np.array([0, 2, 2, 0, 0, 255, 0], np.uint8))
    shifted = run("quantize", {"Input": x}, {"Scale": 1.0, "Shift": 128.9, "is_negative_input": True})["Output"]
    np.testing.assert_array_equal(shifted, np.array([128, 130, 130, 128, 126, 255, 0], np.uint8))   # Shift cut to 128


def _requantize_case(case: str) -> tuple[np.ndarray, np.ndarray, dict]:
    program = gradc.load(ROOT / case / "program.pdmodel")
    attrs = {name: program.global_block.ops[-1].attrs[name]
             for name in ("Scale_in", "Scale_out", "Shift_in", "Shift_out")}
    with np.load(ROOT / case / "feed.npz") as feed, np.load(ROOT / case / "expected.npz") as expected:
        return feed["q"], expected["r"], attrs


@pytest.mark.parametrize(("case", "wrong"), [("requantize_shift_clipped", 382), ("requantize_shift_rounded", 114)])
def test_requantize_folds_the_input_shift_as_paddles_kernel_does(case, wrong):
    """Paddle's requantize folds Shift_in into one integer output shift clipped at 0: where Shift_in Scale_out /
    Scale_in exceeds Shift_out (or the folded shift is not whole) its values are not (q - Shift_in) Scale_out /
    Scale_in + Shift_out. gradc gives Paddle's values; this pins how many differ from that formula."""
    q, paddle_values, attrs = _requantize_case(case)
    got = run("requantize", {"Input": q}, attrs)["Output"]
    np.testing.assert_array_equal(got, paddle_values)
    exact = (q.astype(np.float64) - attrs["Shift_in"]) * attrs["Scale_out"] / attrs["Scale_in"] + attrs["Shift_out"]
    assert np.count_nonzero(np.clip(np.rint(exact), 0, 255) != got) == wrong


@pytest.mark.parametrize("dialect", ["pd_op", "onednn_op"])
def test_legacy_matmul_reads_as_the_v1_matmul(dialect, tmp_path):
    """No Paddle 3.3.1 API or pass writes legacy_matmul (its translator writes a v1 matmul as pd_op.matmul and
    pd_op.scale): the matmul_with_flatten program with its op renamed, alpha 2, as onednn.yaml spells the op."""
    program = json.loads((ROOT / "matmul_with_flatten" / "program.json").read_text())
    op = next(op for op in program["program"]["regions"][0]["blocks"][0]["ops"] if "matmul" in op["#"])
    op["#"] = f"{dialect}.legacy_matmul"
    op["A"] = [{"AT": {"#": "0.a_bool", "D": False}, "N": "transpose_x"},
               {"AT": {"#": "0.a_bool", "D": False}, "N": "transpose_y"},
               {"AT": {"#": "0.a_f32", "D": 2.0}, "N": "alpha"}]
    (tmp_path / "legacy_matmul.json").write_text(json.dumps(program))
    loaded = gradc.load(tmp_path / "legacy_matmul.json")
    assert [op.type for op in loaded.global_block.ops if "matmul" in op.type] == ["matmul"]
    with np.load(ROOT / "matmul_with_flatten" / "feed.npz") as feed:
        out = gradc.Executor().run(loaded, dict(feed), ["out"])[0]
        np.testing.assert_allclose(out, 2 * feed["x"] @ feed["y"], rtol=1e-6)
