"""fused_partial_rope (gradc.ops.fused_partial_rope) on Paddle's translation of its legacy op and grad op
(tools/paddle_partial_rope_translated.py), against the CUDA kernel's formula written element by element, and the
grad against the transpose taken by unit vectors."""

from __future__ import annotations

import numpy as np

from test_moe import _translated


def _reference(x, cos, sin):
    """Each head's last pe values de-interleaved and turned by half rotation, one element at a time, float64."""
    out, pe = x.astype(np.float64).copy(), cos.shape[-1]
    nope, half = x.shape[-1] - pe, pe // 2
    for b, s, h in np.ndindex(x.shape[:3]):
        values = x[b, s, h, nope:]
        turned = np.concatenate([values[0::2], values[1::2]])
        for i in range(pe):
            partner = -turned[i + half] if i < half else turned[i - half]
            out[b, s, h, nope + i] = turned[i] * cos[0, s, 0, i] + partner * sin[0, s, 0, i]
    return out


def test_paddles_translated_partial_rope_turns_the_last_values_and_its_grad_is_the_transpose():
    feed, got, _ = _translated("partial_rope")
    x, cos, sin, dout = (feed[name].astype(np.float64) for name in ("x", "cos", "sin", "dout"))
    np.testing.assert_allclose(got["out"], _reference(x, cos, sin), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(got["out"][..., :4], feed["x"][..., :4])
    back = np.array([np.sum(_reference(unit.reshape(x.shape), cos, sin) * dout)
                     for unit in np.eye(x.size)]).reshape(x.shape)
    np.testing.assert_allclose(got["x@GRAD"], back, rtol=1e-5, atol=1e-5)
