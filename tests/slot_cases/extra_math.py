"""Optional inputs of gradc.ops.extra_math: swiglu's y (absent, x's last axis holds both halves) and
fused_rms_norm_quant's norm_bias, bias and residual (added before the normalisation; residual_out is their sum)."""

import numpy as np

from . import SlotCase

R = np.random.default_rng(43)
X, Y = R.standard_normal((2, 3)), R.standard_normal((2, 3))

W, NORM_BIAS, BIAS = R.uniform(0.5, 1.5, 3), R.standard_normal(3), R.standard_normal(3)


def rms(h, norm_bias=0.0):
    return h / np.sqrt(np.mean(h * h, axis=1, keepdims=True) + 1e-5) * W + norm_bias


RMS = {"begin_norm_axis": 1, "epsilon": 1e-5}

CASES = [
    SlotCase("swiglu", "y", {"x": X, "y": Y}, {"out": X / (1 + np.exp(-X)) * Y}, overrides=False),
    SlotCase("fused_rms_norm_quant", "norm_bias", {"x": X, "norm_weight": W, "norm_bias": NORM_BIAS},
             {"out": rms(X, NORM_BIAS)}, RMS, overrides=False),
    SlotCase("fused_rms_norm_quant", "bias", {"x": X, "norm_weight": W, "residual": Y, "bias": BIAS},
             {"out": rms(X + Y + BIAS), "residual_out": X + Y + BIAS}, RMS, overrides=False),   # only with a residual
    SlotCase("fused_rms_norm_quant", "residual", {"x": X, "norm_weight": W, "residual": Y},
             {"out": rms(X + Y), "residual_out": X + Y}, RMS, overrides=False),
]
