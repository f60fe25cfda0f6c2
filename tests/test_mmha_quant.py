"""masked_multihead_attention's quantized paths (gradc.ops.llm_attention): an int32 x dequantized by qkv_out_scale
into float16, and out_scale > 0 writing int8, against a reference written element by element from the CUDA kernel's
formulas (MMHALoad<T, int32_t>, MMHAStore<T, int8_t>, QuantHelperFunc), on Paddle's translation of the legacy op
(tools/paddle_llm_attention_programs.py) and on programs built here."""

import math

import numpy as np
import pytest

from gradc.errors import ProgramError
from test_extra_math import run
from test_llm_attention import _translated, mmha_reference


def _code(o, out_scale, round_type, low=-127.0, high=127.0):
    """One int8 output: float32(max_bound out_scale) o, rounded (0: ties to even, else half away from zero), clipped."""
    product = float(np.float32(high) * np.float32(out_scale) * np.float32(o))
    if round_type == 0:
        rounded = float(round(product))   # Python's round() breaks ties to even
    else:
        rounded = math.copysign(math.floor(abs(product) + 0.5), product)
    return np.int8(min(max(rounded, low), high))


def test_paddles_translated_int32_x_program_dequantizes_per_column_and_writes_int8_out():
    feed, got = _translated("mmha_int32_x_int8_out_smooth")
    x = np.zeros(feed["x"].shape, np.float16)
    for b, c in np.ndindex(*x.shape):
        x[b, c] = np.float16(np.float32(feed["x"][b, c]) * feed["qkv_out_scale"][c])
    out, cache = mmha_reference(x, feed["cache_kv"], feed["bias"].astype(np.float64), feed["src_mask"],
                                feed["sequence_lengths"], feed["rotary_tensor"], False, 1)
    want = np.zeros(out.shape, np.int8)
    shift, smooth = feed["out_shift"], feed["out_smooth"]
    for b, c in np.ndindex(*out.shape):   # (o + shift) smooth in float16, then quantized
        o = np.float16(np.float16(np.float16(out[b, c]) + shift[c]) * smooth[c])
        want[b, c] = _code(o, 0.03, 1)
    assert got["out"].dtype == np.int8 and got["cache_kv"].dtype == np.float16
    np.testing.assert_array_equal(got["out"], want)
    np.testing.assert_allclose(got["cache_kv"], cache, rtol=2e-3, atol=2e-3)
    assert len(np.unique(want)) > 10


@pytest.mark.parametrize("round_type, ties", [(1, [3, -3, 1]), (0, [2, -2, 0])])
def test_mmha_int8_out_breaks_ties_by_quant_round_type_and_clips_to_the_bounds(round_type, ties):
    """Every value of the cache and the new token is v, so out = v (1 - 1e-6), which float16 holds as v exactly."""
    x = np.zeros((1, 4 * 16), np.float16)
    v = np.array([5, -5, 1, 300, -300] + [0] * 11, np.float16)
    x[0, 3 * 16:] = v
    cache = np.zeros((2, 1, 1, 4, 16), np.float16)
    cache[1] = v
    # the multiplier is quant_max_bound out_scale = 0.5 in float32: codes 2.5, -2.5, 0.5, 150, -150
    attrs = {"out_scale": float(np.float32(0.5 / 127)), "quant_round_type": round_type, "quant_min_bound": -110.0}
    (out,) = run("masked_multihead_attention", {"x": x, "cache_kv": cache, "sequence_lengths":
                                                np.array([[3]], np.int32)}, ["out"], attrs)
    assert out.dtype == np.int8
    assert out[0, :5].tolist() == [*ties, 127, -110] and out[0, 16:21].tolist() == [*ties, 127, -110]


@pytest.mark.parametrize("inputs, attrs, message", [
    ({"qkv_out_scale": np.ones(64, np.float32)}, {}, "qkv_out_scale needs an int32 x"),
    ({"x": np.ones((2, 64), np.int32)}, {"compute_dtype": "fp16"}, "an int32 x needs qkv_out_scale"),
    ({"x": np.ones((2, 64), np.int32), "qkv_out_scale": np.ones(64, np.float32)}, {},
     "an int32 x runs in float16 with 'fp16'"),
    ({}, {"out_scale": 1.0, "quant_max_bound": 300.0}, "out_scale > 0 writes int8"),
])
def test_mmha_refuses_quantized_inputs_it_cannot_run(inputs, attrs, message):
    feed = {"x": np.ones((2, 64), np.float32), "cache_kv": np.ones((2, 2, 1, 5, 16), np.float32),
            "sequence_lengths": np.array([[1], [1]], np.int32), **inputs}
    with pytest.raises(ProgramError, match=message):
        run("masked_multihead_attention", feed, ["out"], attrs)
