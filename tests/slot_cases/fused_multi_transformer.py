"""Cases for the optional inputs of fused_multi_transformer (gradc.ops.fused_multi_transformer): one pre-layer-norm
layer over x [2, 3, 8], 2 heads of 4, each output from the CUDA kernel's formula written here with numpy. float64
caches keep their keys in the kernel's 16-byte chunks of 2 values ([D / 2, max_len, 2] per head)."""

import numpy as np

from gradc.executor.kernels.llm_attention import keys_from_layout, keys_to_layout

from . import SlotCase
from .fused_transformer import gelu, layer_norm, softmax

R = np.random.default_rng(59)
M = {"x": R.standard_normal((2, 3, 8)), "ln_scales": [R.uniform(0.5, 1.5, 8)],
     "qkv_weights": [R.standard_normal((3, 2, 4, 8)) * 0.5], "out_linear_weights": [R.standard_normal((8, 8)) * 0.5],
     "ffn_ln_scales": [R.uniform(0.5, 1.5, 8)], "ffn1_weights": [R.standard_normal((8, 5)) * 0.5],
     "ffn2_weights": [R.standard_normal((5, 8)) * 0.5]}
M_BIASES = {"ln_biases": [R.standard_normal(8)], "qkv_biases": [R.standard_normal((3, 2, 4))],
            "out_linear_biases": [R.standard_normal(8)], "ffn_ln_biases": [R.standard_normal(8)],
            "ffn1_biases": [R.standard_normal(5)], "ffn2_biases": [R.standard_normal(8)]}
M_ZEROS = {slot: [np.zeros_like(value[0])] for slot, value in M_BIASES.items()}
M_CACHE, M_MASK = R.standard_normal((2, 2, 2, 5, 4)), R.standard_normal((2, 1, 1, 5))
M_PREFIX = R.standard_normal((2, 2, 2, 2, 4))   # 2 prefix positions
ANGLES = np.arange(3)[:, None] / 10000.0 ** (np.arange(2) / 2)   # positions x the 2 pair frequencies of head_dim 4
M_ROPE = np.broadcast_to(np.stack([np.cos(ANGLES), np.sin(ANGLES)]).repeat(2, -1)[:, None, None], (2, 2, 1, 3, 4))


def _pairs(v, row, n):
    """Adjacent pairs (v0, v1) of v [heads, n, 4] turned by the angles of positions 0..n-1."""
    cos, sin = M_ROPE[0, row, 0, :n], M_ROPE[1, row, 0, :n]
    turned = np.stack([-v[..., 1::2], v[..., 0::2]], -1).reshape(v.shape)
    return v * cos + turned * sin


def layer(x, biases, lengths=(3, 3), cache=None, step=None, mask=None, rope=False, prefix=None):
    """The layer per row: causal over its first lengths[row] tokens after the prefix (the rest 0), or a step over
    the cache with the mask over the cached positions; returns out and the cache (keys chunked again)."""
    w = {slot: value[0] for slot, value in {**M, **M_ZEROS, **biases}.items() if slot != "x"}
    out = np.zeros_like(x)
    cache = None if cache is None else np.stack([keys_from_layout(cache[0], 2), cache[1]])
    for row, n in enumerate(lengths):
        y = x[row, :n]
        qkv = layer_norm(y, w["ln_scales"], w["ln_biases"]) @ w["qkv_weights"].reshape(24, 8).T
        q, k, v = (qkv + w["qkv_biases"].reshape(-1)).reshape(n, 3, 2, 4).transpose(1, 2, 0, 3)
        if rope:
            q, k = _pairs(q, row, n), _pairs(k, row, n)
        if step is None:
            before = 0 if prefix is None else prefix.shape[3]
            if before:
                k, v = np.concatenate([prefix[0, row], k], 1), np.concatenate([prefix[1, row], v], 1)
            scores = q @ k.swapaxes(-1, -2) / 2 + np.triu(np.full((n, n + before), -np.inf), before + 1)
            if cache is not None:
                cache[0, row, :, :n + before], cache[1, row, :, :n + before] = k, v
        else:
            cache[0, row, :, step], cache[1, row, :, step] = k[:, 0], v[:, 0]
            k, v = cache[0, row, :, :step + 1], cache[1, row, :, :step + 1]
            scores = q @ k.swapaxes(-1, -2) / 2
            if mask is not None:
                scores[..., :step] += mask[row, :, :, :step]
        attention = (softmax(scores) @ v).transpose(1, 0, 2).reshape(n, 8)
        res = attention @ w["out_linear_weights"] + w["out_linear_biases"] + y
        h = layer_norm(res, w["ffn_ln_scales"], w["ffn_ln_biases"])
        out[row, :n] = gelu(h @ w["ffn1_weights"] + w["ffn1_biases"]) @ w["ffn2_weights"] + w["ffn2_biases"] + res
    return out, None if cache is None else np.stack([keys_to_layout(cache[0], 2), cache[1]])


STEP = {"x": M["x"][:, :1], "cache_kvs": [M_CACHE], "time_step": np.array([3], np.int32)}
CASES = [
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
    # rotary_emb_dims > 0 needs the table, so there is no run without it
    SlotCase("fused_multi_transformer", "rotary_tensor", {**M, "rotary_tensor": M_ROPE},
             {"out": layer(M["x"], {}, rope=True)[0]}, {"rotary_emb_dims": 1, "use_neox_rotary_style": False},
             overrides=False),
    SlotCase("fused_multi_transformer", "pre_caches", {**M, "cache_kvs": [M_CACHE], "pre_caches": [M_PREFIX]},
             dict(zip(("out", "cache_kv_outs"), (lambda o, c: (o, [c]))(*layer(M["x"], {}, cache=M_CACHE,
                                                                                prefix=M_PREFIX))))),
    # the kernel's decoding attention reads no beam offset
    SlotCase("fused_multi_transformer", "beam_offset", {**M, **STEP, "beam_offset": np.ones((2, 1, 5), np.int32)},
             {"out": layer(STEP["x"], {}, (1, 1), M_CACHE, 3)[0]}, overrides=False),
]
