"""Cases for the optional inputs of paddle.incubate.nn's GPU-only fused transformer layers (gradc.ops.fused_ffn):
each output from the CUDA kernel's formula written here with numpy."""

import math

import numpy as np

from . import SlotCase

R = np.random.default_rng(53)
X, W1, W2 = R.standard_normal((2, 3, 4)), R.standard_normal((4, 5)), R.standard_normal((5, 4))
B5, B4 = R.standard_normal(5), R.standard_normal(4)
SCALE = R.uniform(0.5, 1.5, 4)
SEED = np.array([7], np.int32)


def gelu(h):
    return 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))


def layer_norm(h, scale=1.0, shift=0.0):
    return (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5) * scale + shift


def ffn(h, b1=0.0, b2=0.0):
    """X + linear2(gelu(linear1(h))) with no dropout draws (rates 0)."""
    return X + gelu(h @ W1 + b1) @ W2 + b2


BASE = {"X": X, "Linear1Weight": W1, "Linear2Weight": W2}
PRE = {"pre_layer_norm": True, "dropout1_rate": 0.0, "dropout2_rate": 0.0}
POST = {"dropout1_rate": 0.0, "dropout2_rate": 0.0}
CASES = [
    SlotCase("fused_feedforward", "Linear1Bias", {**BASE, "Linear1Bias": B5}, {"Out": ffn(layer_norm(X), B5)}, PRE),
    SlotCase("fused_feedforward", "Linear2Bias", {**BASE, "Linear2Bias": B4}, {"Out": ffn(layer_norm(X), 0, B4)}, PRE),
    SlotCase("fused_feedforward", "Ln1Scale", {**BASE, "Ln1Scale": SCALE}, {"Out": ffn(layer_norm(X, SCALE))}, PRE),
    SlotCase("fused_feedforward", "Ln1Bias", {**BASE, "Ln1Bias": B4}, {"Out": ffn(layer_norm(X, 1.0, B4))}, PRE),
    SlotCase("fused_feedforward", "Ln2Scale", {**BASE, "Ln2Scale": SCALE}, {"Out": layer_norm(ffn(X), SCALE)}, POST),
    SlotCase("fused_feedforward", "Ln2Bias", {**BASE, "Ln2Bias": B4}, {"Out": layer_norm(ffn(X), 1.0, B4)}, POST),
    # a seed tensor picks the dropout's stream, and these dropouts draw nothing
    SlotCase("fused_feedforward", "Dropout1Seed", {**BASE, "Dropout1Seed": SEED}, {"Out": ffn(layer_norm(X))}, PRE,
             overrides=False),
    SlotCase("fused_feedforward", "Dropout2Seed", {**BASE, "Dropout2Seed": SEED}, {"Out": layer_norm(ffn(X))}, POST,
             overrides=False),
]


E, NH, DH = 4, 2, 2
QKVW, OUT_W = R.standard_normal((3, NH, DH, E)), R.standard_normal((E, E))
QKV_BIAS, MASK = R.standard_normal((3, NH, DH)), R.standard_normal((2, 1, 3, 3))
CACHE = R.standard_normal((2, 2, NH, 1, DH))   # [2, batch, heads, cache_len, head_dim]


def softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def attention(h, qkv_bias=0.0, mask=0.0, out_bias=0.0, cache=None):
    """X + the heads' softmax(q k^T / sqrt(dh) + mask) v through OutLinearW (no dropout draws)."""
    t = ((h @ QKVW.reshape(3 * E, E).T).reshape(2, 3, 3, NH, DH) + qkv_bias).transpose(2, 0, 3, 1, 4)
    k, v = (t[1], t[2]) if cache is None else (np.concatenate([cache[0], t[1]], 2), np.concatenate([cache[1], t[2]], 2))
    p = softmax(t[0] / math.sqrt(DH) @ k.swapaxes(-1, -2) + mask)
    return X + (p @ v).transpose(0, 2, 1, 3).reshape(2, 3, E) @ OUT_W + out_bias


ATTENTION = {"X": X, "QKVW": QKVW, "OutLinearW": OUT_W}
A_PRE = {"pre_layer_norm": True, "attn_dropout_rate": 0.0, "dropout_rate": 0.0}
A_POST = {"attn_dropout_rate": 0.0, "dropout_rate": 0.0}
CASES += [
    SlotCase("fused_attention", "LnScale", {**ATTENTION, "LnScale": SCALE}, {"Y": attention(layer_norm(X, SCALE))},
             A_PRE),
    SlotCase("fused_attention", "LnBias", {**ATTENTION, "LnBias": B4}, {"Y": attention(layer_norm(X, 1.0, B4))}, A_PRE),
    SlotCase("fused_attention", "QKVBias", {**ATTENTION, "QKVBias": QKV_BIAS},
             {"Y": attention(layer_norm(X), qkv_bias=QKV_BIAS)}, A_PRE),
    SlotCase("fused_attention", "SrcMask", {**ATTENTION, "SrcMask": MASK}, {"Y": attention(layer_norm(X), mask=MASK)},
             A_PRE),
    SlotCase("fused_attention", "OutLinearBias", {**ATTENTION, "OutLinearBias": B4},
             {"Y": attention(layer_norm(X), out_bias=B4)}, A_PRE),
    SlotCase("fused_attention", "CacheKV", {**ATTENTION, "CacheKV": CACHE},
             {"Y": attention(layer_norm(X), cache=CACHE)}, A_PRE),
    SlotCase("fused_attention", "Ln2Scale", {**ATTENTION, "Ln2Scale": SCALE}, {"Y": layer_norm(attention(X), SCALE)},
             A_POST),
    SlotCase("fused_attention", "Ln2Bias", {**ATTENTION, "Ln2Bias": B4}, {"Y": layer_norm(attention(X), 1.0, B4)},
             A_POST),
]


D_X, D_Y = R.standard_normal((2, 3)), R.standard_normal((2, 3))
CASES += [
    # PTensor's rate replaces p: 1 drops x in training, where p = 0 keeps it
    SlotCase("fused_dropout_add", "PTensor", {"x": D_X, "y": D_Y, "PTensor": np.array([1.0], np.float32)},
             {"out": D_Y}, {"p": 0.0}),
    # a seed picks the draws, and these draw nothing
    SlotCase("fused_dropout_add", "seed_tensor", {"x": D_X, "y": D_Y, "seed_tensor": np.array([3], np.int32)},
             {"out": D_X * np.float32(0.75) + D_Y}, {"p": 0.25, "is_test": True, "mode": "downscale_in_infer"},
             overrides=False),
]
