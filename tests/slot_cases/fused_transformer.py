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


# fused_multi_transformer: one pre-layer-norm layer over x [2, 3, 8], 2 heads of 4
M = {"x": R.standard_normal((2, 3, 8)), "ln_scales": [R.uniform(0.5, 1.5, 8)],
     "qkv_weights": [R.standard_normal((3, 2, 4, 8)) * 0.5], "out_linear_weights": [R.standard_normal((8, 8)) * 0.5],
     "ffn_ln_scales": [R.uniform(0.5, 1.5, 8)], "ffn1_weights": [R.standard_normal((8, 5)) * 0.5],
     "ffn2_weights": [R.standard_normal((5, 8)) * 0.5]}
M_BIASES = {"ln_biases": [R.standard_normal(8)], "qkv_biases": [R.standard_normal((3, 2, 4))],
            "out_linear_biases": [R.standard_normal(8)], "ffn_ln_biases": [R.standard_normal(8)],
            "ffn1_biases": [R.standard_normal(5)], "ffn2_biases": [R.standard_normal(8)]}
M_ZEROS = {slot: [np.zeros_like(value[0])] for slot, value in M_BIASES.items()}
M_CACHE, M_MASK = R.standard_normal((2, 2, 2, 5, 4)), R.standard_normal((2, 1, 1, 5))


def layer(x, biases, lengths=(3, 3), cache=None, step=None, mask=None):
    """The layer per row: causal over its first lengths[row] tokens (the rest 0), or a step over the cache."""
    w = {slot: value[0] for slot, value in {**M, **M_ZEROS, **biases}.items() if slot != "x"}
    out, cache = np.zeros_like(x), None if cache is None else cache.copy()
    for row, n in enumerate(lengths):
        y = x[row, :n]
        qkv = layer_norm(y, w["ln_scales"], w["ln_biases"]) @ w["qkv_weights"].reshape(24, 8).T
        q, k, v = (qkv + w["qkv_biases"].reshape(-1)).reshape(n, 3, 2, 4).transpose(1, 2, 0, 3)
        if step is None:
            scores = q @ k.swapaxes(-1, -2) / 2 + np.triu(np.full((n, n), -np.inf), 1)
            if cache is not None:
                cache[0, row, :, :n], cache[1, row, :, :n] = k, v
        else:
            cache[0, row, :, step], cache[1, row, :, step] = k[:, 0], v[:, 0]
            k, v = cache[0, row, :, :step + 1], cache[1, row, :, :step + 1]
            scores = q @ k.swapaxes(-1, -2) / 2 + (0 if mask is None else mask[row, :, :, :step + 1])
        attention = (softmax(scores) @ v).transpose(1, 0, 2).reshape(n, 8)
        res = attention @ w["out_linear_weights"] + w["out_linear_biases"] + y
        h = layer_norm(res, w["ffn_ln_scales"], w["ffn_ln_biases"])
        out[row, :n] = gelu(h @ w["ffn1_weights"] + w["ffn1_biases"]) @ w["ffn2_weights"] + w["ffn2_biases"] + res
    return out, cache


STEP = {"x": M["x"][:, :1], "cache_kvs": [M_CACHE], "time_step": np.array([3], np.int32)}
CASES += [
    SlotCase("fused_multi_transformer", "qkv_biases", {**M, "qkv_biases": M_BIASES["qkv_biases"]},
             {"out": layer(M["x"], {"qkv_biases": M_BIASES["qkv_biases"]})[0]}),
    *(SlotCase("fused_multi_transformer", slot, {**M, "qkv_biases": M_ZEROS["qkv_biases"], slot: M_BIASES[slot]},
               {"out": layer(M["x"], {slot: M_BIASES[slot]})[0]})
      for slot in ("out_linear_biases", "ffn1_biases", "ffn2_biases")),
    SlotCase("fused_multi_transformer", "ln_biases", {**M, "ln_biases": M_BIASES["ln_biases"]},
             {"out": layer(M["x"], {"ln_biases": M_BIASES["ln_biases"]})[0]}),
    SlotCase("fused_multi_transformer", "ffn_ln_biases", {**M, "ln_biases": M_ZEROS["ln_biases"],
                                                          "ffn_ln_biases": M_BIASES["ffn_ln_biases"]},
             {"out": layer(M["x"], {"ffn_ln_biases": M_BIASES["ffn_ln_biases"]})[0]}),
    # the encoder's output does not read the cache it writes
    SlotCase("fused_multi_transformer", "cache_kvs", {**M, "cache_kvs": [M_CACHE]},
             {"out": layer(M["x"], {})[0], "cache_kv_outs": [layer(M["x"], {}, cache=M_CACHE)[1]]}, overrides=False),
    SlotCase("fused_multi_transformer", "seq_lengths", {**M, "seq_lengths": np.array([2, 3], np.int32)},
             {"out": layer(M["x"], {}, lengths=(2, 3))[0]}),
    SlotCase("fused_multi_transformer", "time_step", {**M, **STEP},
             {"out": layer(STEP["x"], {}, (1, 1), M_CACHE, 3)[0]}),
    SlotCase("fused_multi_transformer", "src_mask", {**M, **STEP, "src_mask": M_MASK},
             {"out": layer(STEP["x"], {}, (1, 1), M_CACHE, 3, M_MASK)[0]}),
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
