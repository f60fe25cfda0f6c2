"""A small Llama-like fused_multi_transformer as PaddleNLP's use_fused_multi_transformer export writes it: 2 pre-
rmsnorm layers (no norm biases), GQA (2 query heads sharing 1 kv head of 8, qkv_weights [4, 8, 16], qkv and linear
biases as Qwen has them), neox rotary embeddings, swiglu. Two programs, each translated by Paddle from the legacy op
(tools/paddle_gpu_only_translated.py's writer): the encoder over 3 tokens writing the caches, and a decoding step
at position 3 over the caches the encoder writes (keys in the kernel's 16-byte chunks, 4 float32 values). Paddle
has no CPU kernel of the op, so expected.npz holds Paddle's own CPU ops composing the same stack in float64: the
encoder's out, and for the step the last row of the causal stack over all 4 tokens (which the step continues); the
step's src_mask is 0 over the cached positions and nonzero in the token's own column, which the kernel does not
read. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_llama_multi_transformer.py
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import paddle

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import paddle_gpu_only_translated as translated  # noqa: E402  (the shared legacy-op writer)

LAYERS, E, HEADS, KV, DIM, FFN, BATCH, MAX_LEN = 2, 16, 2, 1, 8, 8, 2, 5
F32 = "float32"
WIDTH = 16 // 4   # float32 keys sit in chunks of 4
PER_LAYER = {"ln_scales": [E], "qkv_weights": [HEADS + 2 * KV, DIM, E], "qkv_biases": [HEADS + 2 * KV, DIM],
             "out_linear_weights": [HEADS * DIM, E], "out_linear_biases": [E], "ffn_ln_scales": [E],
             "ffn1_weights": [E, 2 * FFN], "ffn1_biases": [2 * FFN], "ffn2_weights": [FFN, E], "ffn2_biases": [E],
             "cache_kvs": [2, BATCH, KV, MAX_LEN, DIM]}


def _case(decode: bool) -> dict:
    s = 1 if decode else 3
    feeds = {"x": ([BATCH, s, E], F32), "rotary_tensor": ([2, BATCH, 1, s, DIM], F32)}
    feeds |= {f"{slot}{i}": (shape, F32) for slot, shape in PER_LAYER.items() for i in range(LAYERS)}
    ins = {"x": ["x"], "rotary_tensor": ["rotary_tensor"]}
    ins |= {slot: [f"{slot}{i}" for i in range(LAYERS)] for slot in PER_LAYER}
    if decode:
        feeds |= {"time_step": ([1], "int32"), "src_mask": ([BATCH, 1, 1, MAX_LEN], F32)}
        ins |= {"time_step": ["time_step"], "src_mask": ["src_mask"]}
    attrs = {"pre_layer_norm": True, "epsilon": 1e-5, "residual_alpha": 1.0, "dropout_rate": 0.0,
             "rotary_emb_dims": 1, "is_test": True, "dropout_implementation": "upscale_in_train",
             "act_method": "swiglu", "trans_qkvw": True, "ring_id": -1, "norm_type": "rmsnorm",
             "use_neox_rotary_style": True, "gqa_group_size": KV}
    caches = [(f"cache_kvs{i}", PER_LAYER["cache_kvs"]) for i in range(LAYERS)]   # written in place
    outs = {"out": ("out", [BATCH, s, E]), "cache_kv_outs": caches}
    return {"feeds": feeds, "ops": [("fused_multi_transformer", ins, outs, attrs)]}


def _rope_table(positions) -> np.ndarray:
    """[2, BATCH, 1, len(positions), DIM]: cos and sin of position / 10000^(2j / DIM), repeated by halves (neox)."""
    theta = np.asarray(positions, np.float64)[:, None] / 10000.0 ** (np.arange(DIM // 2) * 2 / DIM)
    theta = np.concatenate([theta, theta], -1)
    return np.broadcast_to(np.stack([np.cos(theta), np.sin(theta)])[:, None, None], (2, BATCH, 1, *theta.shape))


def _stack(v: dict, n: int) -> tuple:
    """The causal stack over the first n tokens of v["x"] from Paddle's CPU ops in float64: out and each layer's
    keys and values [BATCH, KV, n, DIM] (after the rope)."""
    f = paddle.nn.functional
    t = {name: paddle.to_tensor(np.asarray(value, np.float64)) for name, value in v.items()}
    x, table = t["x"][:, :n], t["table"][:, :, :, :n]   # table [2, BATCH, 1, n, DIM]
    kv = []

    def rms(h, scale):
        return h * paddle.rsqrt(paddle.mean(h * h, -1, keepdim=True) + 1e-5) * scale

    def turn(h):   # neox: h cos + [-h2, h1] sin, h [BATCH, heads, n, DIM]
        return h * table[0] + paddle.concat([-h[..., DIM // 2:], h[..., :DIM // 2]], -1) * table[1]

    for i in range(LAYERS):
        w = {slot: t[f"{slot}{i}"] for slot in PER_LAYER if slot != "cache_kvs"}
        qkv = paddle.matmul(rms(x, w["ln_scales"]), w["qkv_weights"].reshape([-1, E]), transpose_y=True)
        qkv = (qkv + w["qkv_biases"].reshape([-1])).reshape([BATCH, n, HEADS + 2 * KV, DIM]).transpose([0, 2, 1, 3])
        q, k, val = turn(qkv[:, :HEADS]), turn(qkv[:, HEADS:HEADS + KV]), qkv[:, HEADS + KV:]
        kv.append((k.numpy(), val.numpy()))
        k, val = (paddle.repeat_interleave(a, HEADS // KV, 1) for a in (k, val))
        scale = float(np.float32(1 / np.sqrt(DIM)))
        causal = paddle.triu(paddle.full([n, n], -np.inf, "float64"), 1)
        weights = f.softmax(paddle.matmul(q, k, transpose_y=True) * scale + causal)
        context = paddle.matmul(weights, val).transpose([0, 2, 1, 3]).reshape([BATCH, n, HEADS * DIM])
        r = f.linear(context, w["out_linear_weights"], w["out_linear_biases"]) + x
        z = f.linear(rms(r, w["ffn_ln_scales"]), w["ffn1_weights"], w["ffn1_biases"])
        x = f.linear(f.silu(z[..., :FFN]) * z[..., FFN:], w["ffn2_weights"], w["ffn2_biases"]) + r
    return x.numpy(), kv


def _chunked(keys: np.ndarray) -> np.ndarray:
    """[..., S, DIM] keys in the kernel's layout [..., DIM / WIDTH, S, WIDTH], read back as [..., S, DIM]."""
    *lead, seq, dim = keys.shape
    return np.moveaxis(keys.reshape(*lead, seq, dim // WIDTH, WIDTH), -2, -3).reshape(keys.shape)


def _feeds(decode: bool, rng) -> tuple[dict, dict]:
    weights = {f"{slot}{i}": (rng.uniform(0.5, 1.5, shape) if "ln_scales" in slot else
                              rng.standard_normal(shape) * (0.3 if "weights" in slot else 0.1))
               for slot, shape in PER_LAYER.items() if slot != "cache_kvs" for i in range(LAYERS)}
    x = rng.standard_normal((BATCH, 4, E))
    v = {"x": x, "table": _rope_table(range(4)), **weights}
    with paddle.base.dygraph.guard(paddle.CPUPlace()):
        encoder, _ = _stack(v, 3)
        full, _ = _stack(v, 4)
        _, kv = _stack(v, 3)
    if not decode:
        caches = {f"cache_kvs{i}": np.zeros(PER_LAYER["cache_kvs"]) for i in range(LAYERS)}
        feed = {"x": x[:, :3], "rotary_tensor": _rope_table(range(3)), **weights, **caches}
        return feed, {"out": encoder}
    caches = {}
    for i, (k, val) in enumerate(kv):
        cache = np.zeros(PER_LAYER["cache_kvs"])
        cache[0, :, :, :3], cache[1, :, :, :3] = k, val
        caches[f"cache_kvs{i}"] = np.stack([_chunked(cache[0]), cache[1]])
    mask = np.zeros((BATCH, 1, 1, MAX_LEN))
    mask[..., 3:] = rng.standard_normal((BATCH, 1, 1, 2))   # the token's own column and one past it: not read
    feed = {"x": x[:, 3:], "rotary_tensor": _rope_table([3]), **weights, **caches,
            "time_step": np.array([3], np.int32), "src_mask": mask}
    return feed, {"out": full[:, 3:]}


def main() -> None:
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for index, (case, decode) in enumerate((("multi_transformer_llama_encoder", False),
                                            ("multi_transformer_llama_decode_step", True))):
        translated.CASES[case] = _case(decode)
        print(f"{case}: {translated.write(case, 400 + index)}")
        feed, expected = _feeds(decode, np.random.default_rng(400))
        feed = {name: value.astype(np.float32) if value.dtype == np.float64 else value for name, value in feed.items()}
        np.savez_compressed(translated.OUT / case / "feed.npz", **feed)   # replaces the writer's random draws
        np.savez_compressed(translated.OUT / case / "expected.npz", **expected)


if __name__ == "__main__":
    main()
