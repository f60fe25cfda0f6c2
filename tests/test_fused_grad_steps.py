"""The fused training steps and apply_per_channel_scale (gradc.ops.fused_grad_steps) on Paddle's translation of their
legacy ops (tools/paddle_fused_grad_steps_translated.py), against Paddle's CPU numbers of the same math composed of
ops it runs on CPU, and (for the rounding) the formulas in float64."""

from __future__ import annotations

import numpy as np

from gradc.bfloat16 import as_bfloat16
from test_moe import _translated


def test_paddles_translated_fused_grad_steps_match_paddles_cpu_composition():
    feed, got, paddle = _translated("fused_grad_steps")
    for name in ("dweight_out", "dbias_out", "fresh_dweight", "fresh_dbias", "main_grad_out"):
        assert got[name].dtype == np.float32
        np.testing.assert_allclose(got[name], paddle[name], rtol=1e-5, atol=1e-5)
    assert np.abs(got["dweight_out"] - got["fresh_dweight"]).max() > 0.1   # the accumulator was added
    # bfloat16 grads: Paddle's float32 composition rounded once, the ignored row zeros
    np.testing.assert_array_equal(got["input_grad"], as_bfloat16(paddle["input_grad"]))
    assert not got["input_grad"][1].any() and got["input_grad"][0].any()
    assert got["scaled"].dtype == np.float16
    np.testing.assert_array_equal(got["scaled"], paddle["scaled"])
    rows = feed["ids"].reshape(-1)
    assert len(set(rows)) < rows.size   # a row added to twice
