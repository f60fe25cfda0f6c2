"""Cases for the optional inputs of the GPU-only fused ops (gradc.ops.fused_rope, fused_llm, fused_norm,
weight_quant): each output from the kernel's formula written here with numpy."""

import math

import numpy as np

from gradc.executor.kernels.weight_quant import pack

from . import SlotCase

R = np.random.default_rng(47)
Q, K, V = R.standard_normal((1, 2, 1, 4)), R.standard_normal((1, 2, 2, 4)), R.standard_normal((1, 2, 1, 4))
SIN, COS = np.sin(R.uniform(-3, 3, (3, 4))), np.cos(R.uniform(-3, 3, (3, 4)))
POSITIONS = np.array([[2, 0]], np.int64)
X, B6, S3 = R.standard_normal((2, 6)), R.standard_normal(6), R.standard_normal(3)
SCALE = np.array([0.5, 2.0, 1.5, 0.25])


def rope(x, sin, cos):
    """Adjacent pairs (the default use_neox_rotary_style): (x0 c0 - x1 s0, x1 c1 + x0 s1)."""
    rotated = np.empty_like(x)
    rotated[..., 0::2], rotated[..., 1::2] = -x[..., 1::2], x[..., 0::2]
    return x * cos[None, :, None] + rotated * sin[None, :, None]


def computed(x):
    """Without sin and cos: the angle pos / 10000^((i - i mod 2) / d), in float32."""
    exponent = (np.arange(4) // 2 * 2).astype(np.float32) / np.float32(4)
    angle = (np.arange(2, dtype=np.float32)[:, None] / np.float32(10000) ** exponent).astype(np.float64)
    return rope(x, np.sin(angle), np.cos(angle))


def gelu(h):
    return 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))


def layer_norm(h, scale=1.0, shift=0.0):
    return (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * scale + shift


ROPE_TABLES = {"sin": SIN[:2], "cos": COS[:2]}
CASES = [
    SlotCase("fused_rotary_position_embedding", "k", {"q": Q, "k": K}, {"out_q": computed(Q), "out_k": computed(K)},
             overrides=False),
    SlotCase("fused_rotary_position_embedding", "v", {"q": Q, "v": V}, {"out_v": computed(V)}, overrides=False),
    SlotCase("fused_rotary_position_embedding", "sin", {"q": Q, **ROPE_TABLES}, {"out_q": rope(Q, SIN[:2], COS[:2])}),
    SlotCase("fused_rotary_position_embedding", "cos", {"q": Q, **ROPE_TABLES}, {"out_q": rope(Q, SIN[:2], COS[:2])}),
    SlotCase("fused_rotary_position_embedding", "position_ids", {"q": Q, "sin": SIN, "cos": COS,
                                                                 "position_ids": POSITIONS},
             {"out_q": rope(Q, SIN[[2, 0]], COS[[2, 0]])}, overrides=False),
    SlotCase("fused_bias_act", "bias", {"x": X, "bias": B6}, {"out": gelu(X + B6)}),
    SlotCase("fused_bias_act", "shift", {"x": X, "shift": S3, "smooth": S3 * 2}, {"out": (
        gelu(X[:, :3]) * X[:, 3:] + S3) * S3 * 2}, {"act_method": "geglu"}),
    SlotCase("fused_bias_act", "smooth", {"x": X, "shift": B6, "smooth": B6}, {"out": (np.maximum(X, 0) + B6) * B6},
             {"act_method": "relu"}, overrides=False),
    SlotCase("rms_norm", "scale", {"x": X, "scale": B6}, {"y": X / np.sqrt((X * X).mean(-1, keepdims=True) + 1e-5)
                                                          * B6}, {"normalized_shape": [6]}),
    SlotCase("fused_bias_dropout_residual_layer_norm", "Bias", {"X": X, "Residual": X * 2, "Bias": B6},
             {"Y": layer_norm(X * 2 + (X + B6) * 0.75)}, {"is_test": True, "dropout_rate": 0.25}),
    SlotCase("fused_bias_dropout_residual_layer_norm", "LnScale", {"X": X, "Residual": X, "LnScale": B6},
             {"Y": layer_norm(2 * X, B6)}, {"dropout_rate": 0.0}),
    SlotCase("fused_bias_dropout_residual_layer_norm", "LnBias", {"X": X, "Residual": X, "LnBias": B6},
             {"Y": layer_norm(2 * X, 1.0, B6)}, {"dropout_rate": 0.0}),
    SlotCase("weight_only_linear", "bias", {"x": np.ones((1, 64)), "weight": pack(np.ones((64, 4)), 8, 70, False),
                                            "weight_scale": SCALE, "bias": S3[[0, 1, 2, 0]]},
             {"out": 64 * SCALE[None] + S3[[0, 1, 2, 0]]}, {"arch": 70}, overrides=False),   # q = 1 everywhere
    # x of ones (no outlier, range 1, qx = 127) against llm.int8's q = 1: 64 * 127 * 1 * scale / 127 + bias
    SlotCase("llm_int8_linear", "bias", {"x": np.ones((1, 64)), "weight": np.ones((4, 64), np.int8),
                                         "weight_scale": SCALE, "bias": S3[[0, 1, 2, 0]]},
             {"out": 64 * SCALE[None] + S3[[0, 1, 2, 0]]}, overrides=False),
]
