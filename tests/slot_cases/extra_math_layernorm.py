"""Optional inputs of fused_bias_residual_layernorm (gradc.ops.extra_math_layernorm): norm_weight and norm_bias
(the affine after the normalisation), residual (scaled by residual_alpha, added before it; residual_out is the sum)
and bias (added with a residual; without norm_weight and norm_bias, out = x + bias)."""

import numpy as np

from . import SlotCase

R = np.random.default_rng(44)
X, RES = R.standard_normal((2, 3)), R.standard_normal((2, 3))
W, NORM_BIAS, BIAS = R.uniform(0.5, 1.5, 3), R.standard_normal(3), R.standard_normal(3)
OP = "fused_bias_residual_layernorm"
ATTRS = {"begin_norm_axis": 1, "epsilon": 1e-5, "residual_alpha": 0.5}


def normalised(h, weight=1.0, norm_bias=0.0):
    centred = h - h.mean(1, keepdims=True)
    return centred / np.sqrt((centred * centred).mean(1, keepdims=True) + 1e-5) * weight + norm_bias


CASES = [
    SlotCase(OP, "norm_weight", {"x": X, "norm_weight": W}, {"out": normalised(X, W)}, ATTRS, overrides=False),
    SlotCase(OP, "norm_bias", {"x": X, "norm_weight": W, "norm_bias": NORM_BIAS},
             {"out": normalised(X, W, NORM_BIAS)}, ATTRS, overrides=False),
    SlotCase(OP, "residual", {"x": X, "norm_weight": W, "residual": RES},
             {"out": normalised(X + 0.5 * RES, W), "residual_out": X + 0.5 * RES}, ATTRS, overrides=False),
    SlotCase(OP, "bias", {"x": X, "norm_weight": W, "residual": RES, "bias": BIAS},
             {"out": normalised(X + 0.5 * RES + BIAS, W), "residual_out": X + 0.5 * RES + BIAS}, ATTRS,
             overrides=False),
]
