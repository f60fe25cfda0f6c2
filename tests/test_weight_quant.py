"""paddle.nn.quant's weight-only ops (gradc.ops.weight_quant): weight_quantize byte for byte against Paddle's CPU
kernel (its PIR programs and numbers: tools/paddle_weight_quantize.py), and weight_dequantize / weight_only_linear
reading back what it writes, against q * scale and x W + bias from the quantization formula."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.errors import ProgramError
from gradc.pir import load_pir
from test_extra_math import run

GPU_ONLY = Path(__file__).parent / "data" / "paddle" / "pir_gpu_only"
CASES = sorted(path.name for path in GPU_ONLY.glob("weight_quantize_*"))
r = np.random.default_rng(37)


def _reference_q(x, bits, group_size):
    """q and scale from the formula: max |x| per column (group) / bound, round halves away from zero."""
    bound = 127.0 if bits == 8 else 7.0
    w = x.astype(np.float64)
    groups = w.reshape(-1, group_size if group_size > 0 else w.shape[0], w.shape[1])
    scale = np.abs(groups).max(axis=1) / bound
    q = np.clip(np.sign(groups) * np.floor(np.abs(groups) / scale[:, None] + 0.5), -bound, bound)
    return q.reshape(w.shape), scale if group_size > 0 else scale[0]


@pytest.mark.parametrize("case", CASES)
def test_weight_quantize_writes_paddles_bytes(case):
    directory = GPU_ONLY / case
    with np.load(directory / "feed.npz") as feed, np.load(directory / "expected.npz") as expected:
        feed, expected = dict(feed), dict(expected)
    program = load_pir(directory / "program.json")
    out, scale = gradc.Executor().run(program, feed, ["out", "scale"], gradc.Scope())
    assert out.dtype == np.int8 and scale.dtype == expected["scale"].dtype
    np.testing.assert_array_equal(out, expected["out"])
    np.testing.assert_array_equal(scale, expected["scale"])


@pytest.mark.parametrize("algo, bits", [("weight_only_int8", 8), ("weight_only_int4", 4)])
@pytest.mark.parametrize("group_size", [-1, 64])
def test_weight_dequantize_reads_back_the_sm80_layout(algo, bits, group_size):
    x = r.standard_normal((128, 16)).astype(np.float16)
    packed, scale = run("weight_quantize", {"x": x}, ["out", "scale"],
                        {"algo": algo, "arch": 80, "group_size": group_size})
    (out,) = run("weight_dequantize", {"x": packed, "scale": scale}, ["out"], {"algo": algo, "group_size": group_size})
    spread = scale.astype(np.float64) if group_size == -1 else np.repeat(scale.astype(np.float64), 64, axis=0)
    assert out.shape == (128, 16) and out.dtype == np.float16
    q = out.astype(np.float64) / spread   # whole steps of the scale, each within half a step of x
    np.testing.assert_allclose(q, np.round(q), rtol=1e-3, atol=1e-3)   # float16 out: 2^-11 relative
    assert np.abs(np.round(q)).max() <= (127 if bits == 8 else 7)
    assert np.all(np.abs(out.astype(np.float64) - x) <= spread / 2 * 1.02 + 1e-3)


@pytest.mark.parametrize("weight_dtype, arch", [("int8", 80), ("int4", 86), ("int8", 70), ("int4", 70)])
def test_weight_only_linear_multiplies_by_the_dequantized_weight(weight_dtype, arch):
    bits = 8 if weight_dtype == "int8" else 4
    w, x, bias = r.standard_normal((64, 8)), r.standard_normal((2, 3, 64)), r.standard_normal(8)
    packed, scale = run("weight_quantize", {"x": w}, ["out", "scale"],
                        {"algo": f"weight_only_{weight_dtype}", "arch": arch})
    (out,) = run("weight_only_linear", {"x": x, "weight": packed, "bias": bias, "weight_scale": scale}, ["out"],
                 {"weight_dtype": weight_dtype, "arch": arch})
    q, _ = _reference_q(w, bits, -1)
    np.testing.assert_allclose(out, x @ (q * scale) + bias, rtol=1e-10, atol=1e-10)
    (dx,) = run("weight_only_linear_grad", {"x": x, "weight": packed, "weight_scale": scale, "out@GRAD": out},
                ["x@GRAD"], {"weight_dtype": weight_dtype, "arch": arch})
    np.testing.assert_allclose(dx, out @ (q * scale).T, rtol=1e-10, atol=1e-10)


def test_weight_quant_ops_refuse_layouts_their_tiles_do_not_fit():
    with pytest.raises(ProgramError, match="the SM80 layout tiles k by 64: k = 32"):
        run("weight_quantize", {"x": np.zeros((32, 8), np.float16)}, ["out", "scale"])
    with pytest.raises(ProgramError, match="x .* must end in the weight's k = 64"):
        packed = np.zeros((8, 64), np.int8)
        run("weight_only_linear", {"x": np.zeros((2, 32)), "weight": packed, "weight_scale": np.ones(8)}, ["out"])


def test_paddles_translated_weight_only_program_agrees_with_its_own_dequantized_weight():
    """Paddle's translation of weight_dequantize, weight_only_linear and its grad op over one packed weight (any
    bytes): out = x W + bias and x@GRAD = dy W^T with the W weight_dequantize reads, each q * scale with q whole."""
    directory = GPU_ONLY / "weight_only_linear_int8"
    with np.load(directory / "feed.npz") as archive:
        feed = dict(archive)
    fetches = json.loads((directory / "meta.json").read_text())["fetches"]
    got = dict(zip(fetches, gradc.Executor().run(load_pir(directory / "program.json"), feed, fetches, gradc.Scope())))
    w = got["dequantized"].astype(np.float64)
    q = w / feed["scale"].astype(np.float64)
    np.testing.assert_allclose(q, np.round(q), atol=1e-4)
    assert np.round(q).min() >= -128 and np.round(q).max() <= 127
    np.testing.assert_allclose(got["out"], feed["x"] @ w + feed["bias"], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["x@GRAD"], feed["dy"] @ w.T, rtol=1e-5, atol=1e-5)


def _llm_int8_reference(x, w, bias, threshold):
    """Row by row: outlier columns (any |x| > threshold) in float against q * scale, the rest quantized by the
    row's range over its entries <= threshold and multiplied as integers."""
    q, scale = _reference_q(w, 8, -1)
    rows = x.reshape(-1, x.shape[-1]).astype(np.float64)
    outliers = (np.abs(rows) > threshold).any(axis=0)
    out = np.zeros((len(rows), w.shape[1]))
    for i, row in enumerate(rows):
        kept = np.abs(row) <= threshold
        limit = np.abs(row[kept]).max()
        qx = np.where(outliers, 0, np.clip(np.sign(row) * np.floor(np.abs(row) * 127 / limit + 0.5), -127, 127))
        out[i] = row[outliers] @ (q[outliers] * scale) + (qx @ q) * limit * scale / 127 + bias
    return out.reshape(*x.shape[:-1], -1)


def test_paddles_translated_llm_int8_linear_splits_outlier_columns_from_the_int8_product():
    directory = GPU_ONLY / "llm_int8_linear_outliers"
    with np.load(directory / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    fetches = json.loads((directory / "meta.json").read_text())["fetches"]
    got = dict(zip(fetches, gradc.Executor().run(load_pir(directory / "program.json"), feed, fetches,
                                                  gradc.Scope())))
    want = _llm_int8_reference(feed["x"], feed["w"], feed["bias"], 6.0)
    np.testing.assert_allclose(got["out"], want, rtol=1e-5, atol=1e-4)
    exact = feed["x"].astype(np.float64) @ feed["w"] + feed["bias"]
    assert np.abs(got["out"] - exact).max() < 0.2 < np.abs(got["out"] - exact).max() * 1e3   # int8 error, not 0
    no_outliers = _llm_int8_reference(feed["x"], feed["w"], feed["bias"], 100.0)
    assert np.abs(no_outliers - exact).max() > np.abs(want - exact).max()   # the float outliers are exact


def test_llm_int8_linear_refuses_a_weight_of_another_k():
    with pytest.raises(ProgramError, match="must end in the weight's k = 64"):
        run("llm_int8_linear", {"x": np.zeros((2, 32), np.float32), "weight": np.zeros((8, 64), np.int8),
                                "weight_scale": np.zeros(8, np.float32)}, ["out"])
