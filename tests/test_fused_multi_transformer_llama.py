"""fused_multi_transformer's paths of Llama-style exports: rotary embeddings (neox halves, adjacent pairs), grouped-
query attention, decoding rows at their own seq_lengths, pre_caches and beam_offset, against numpy written here
(rope through complex rotations, not gradc's rotate) and against the encoder a decoding step continues."""

from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.errors import ExecutionError, ProgramError
from gradc.executor.kernels.llm_attention import keys_from_layout
from gradc.pir import load_pir
from test_fused_multi_transformer import run

r = np.random.default_rng(41)
E, HEADS, KV, DIM, FFN = 8, 4, 2, 2, 6   # 1 / sqrt(2) rounded to float32, as the kernel scales
SCALE = float(np.float32(1 / np.sqrt(DIM)))


def _weights(layers: int, kv: int = KV) -> dict:
    """A Llama-like layer: rmsnorm scales, GQA qkv [HEADS + 2 kv, DIM, E] with biases, swiglu FFN, no other bias."""
    return {"ln_scales": [r.uniform(0.5, 1.5, E) for _ in range(layers)],
            "qkv_weights": [r.standard_normal((HEADS + 2 * kv, DIM, E)) * 0.5 for _ in range(layers)],
            "qkv_biases": [r.standard_normal((HEADS + 2 * kv, DIM)) for _ in range(layers)],
            "out_linear_weights": [r.standard_normal((E, E)) * 0.5 for _ in range(layers)],
            "out_linear_biases": [np.zeros(E) for _ in range(layers)],
            "ffn_ln_scales": [r.uniform(0.5, 1.5, E) for _ in range(layers)],
            "ffn1_weights": [r.standard_normal((E, 2 * FFN)) * 0.5 for _ in range(layers)],
            "ffn1_biases": [np.zeros(2 * FFN) for _ in range(layers)],
            "ffn2_weights": [r.standard_normal((FFN, E)) * 0.5 for _ in range(layers)],
            "ffn2_biases": [np.zeros(E) for _ in range(layers)]}


LLAMA = {"norm_type": "rmsnorm", "act_method": "swiglu", "gqa_group_size": KV, "rotary_emb_dims": 1}


def _angles(positions) -> np.ndarray:
    return np.asarray(positions)[:, None] / 10000.0 ** (np.arange(DIM // 2) * 2 / DIM)


def _table(batch: int, positions, neox: bool) -> np.ndarray:
    """rotary_tensor [2, batch, 1, len(positions), DIM]: neox repeats the angles by halves, pairs each one twice."""
    theta = _angles(positions)
    theta = np.concatenate([theta, theta], -1) if neox else np.repeat(theta, 2, -1)
    return np.broadcast_to(np.stack([np.cos(theta), np.sin(theta)])[:, None, None], (2, batch, 1, *theta.shape))


def _turn(v: np.ndarray, positions, neox: bool) -> np.ndarray:
    """v [..., n, DIM] rotated by exp(i theta): pairs (x0 + i x1) or neox halves (x_j + i x_{j + DIM/2})."""
    half = DIM // 2
    z = v[..., :half] + 1j * v[..., half:] if neox else v[..., 0::2] + 1j * v[..., 1::2]
    z = z * np.exp(1j * _angles(positions))
    return np.concatenate([z.real, z.imag], -1) if neox else np.stack([z.real, z.imag], -1).reshape(v.shape)


def _rms(h, scale):
    return h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-5) * scale


def _reference(x, inputs, neox: bool, kv: int = KV):
    """The pre-rmsnorm swiglu stack with causal GQA attention, q and k turned by their positions."""
    out = np.zeros_like(x)
    for row in range(len(x)):
        y, n = x[row], x.shape[1]
        for i in range(len(inputs["qkv_weights"])):
            w = {slot: values[i] for slot, values in inputs.items()}
            qkv = (_rms(y, w["ln_scales"]) @ w["qkv_weights"].reshape(-1, E).T + w["qkv_biases"].reshape(-1))
            qkv = qkv.reshape(n, HEADS + 2 * kv, DIM).transpose(1, 0, 2)
            q, k, v = qkv[:HEADS], qkv[HEADS:HEADS + kv], qkv[HEADS + kv:]
            q, k = _turn(q, range(n), neox), _turn(k, range(n), neox)
            group = np.arange(HEADS) // (HEADS // kv)
            scores = q @ k[group].swapaxes(-1, -2) * SCALE + np.triu(np.full((n, n), -np.inf), 1)
            p = np.exp(scores - scores.max(-1, keepdims=True))
            context = ((p / p.sum(-1, keepdims=True)) @ v[group]).transpose(1, 0, 2).reshape(n, -1)
            res = context @ w["out_linear_weights"] + y
            z = _rms(res, w["ffn_ln_scales"]) @ w["ffn1_weights"]
            y = (z[:, :FFN] / (1 + np.exp(-z[:, :FFN])) * z[:, FFN:]) @ w["ffn2_weights"] + res
        out[row] = y
    return out


@pytest.mark.parametrize("neox", [True, False])
def test_the_llama_stack_is_rmsnorm_gqa_rope_and_swiglu(neox):
    x, inputs = r.standard_normal((2, 3, E)), _weights(2)
    feed = {"x": x, "rotary_tensor": _table(2, range(3), neox), **inputs}
    (out,) = run("fused_multi_transformer", feed, ["out"], {**LLAMA, "use_neox_rotary_style": neox})
    np.testing.assert_allclose(out, _reference(x, inputs, neox), rtol=1e-10, atol=1e-10)
    (cached,) = run("fused_multi_transformer", {**feed, "cache_kvs": [np.zeros((2, 2, KV, 5, DIM))] * 2}, ["out"],
                    {**LLAMA, "use_neox_rotary_style": neox})   # the context stage turns q and k alike
    np.testing.assert_allclose(cached, out, rtol=1e-12, atol=1e-12)


def test_gqa_is_multi_head_attention_with_each_kv_head_shared():
    x, inputs = r.standard_normal((1, 3, E)), _weights(1)
    w, b = inputs["qkv_weights"][0], inputs["qkv_biases"][0]
    shared = np.arange(HEADS) // (HEADS // KV)
    full = {**inputs, "qkv_weights": [np.stack([w[:HEADS], w[HEADS:HEADS + KV][shared], w[HEADS + KV:][shared]])],
            "qkv_biases": [np.stack([b[:HEADS], b[HEADS:HEADS + KV][shared], b[HEADS + KV:][shared]])]}
    attrs = {"norm_type": "rmsnorm", "act_method": "swiglu"}
    (grouped,) = run("fused_multi_transformer", {"x": x, **inputs}, ["out"], {**attrs, "gqa_group_size": KV})
    (multi,) = run("fused_multi_transformer", {"x": x, **full}, ["out"], attrs)
    np.testing.assert_allclose(grouped, multi, rtol=1e-12, atol=1e-12)
    flipped = {**inputs, "qkv_weights": [np.moveaxis(w, 2, 0)]}   # trans_qkvw=False: [E, HEADS + 2 KV, DIM]
    (untransposed,) = run("fused_multi_transformer", {"x": x, **flipped}, ["out"],
                          {**attrs, "gqa_group_size": KV, "trans_qkvw": False})
    np.testing.assert_allclose(untransposed, grouped, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("neox", [True, False])
def test_a_decoding_step_with_rope_and_gqa_continues_the_encoder(neox):
    """The encoder over 4 tokens equals the encoder over 3 (writing the caches) then a step at position 3."""
    x, inputs = r.standard_normal((2, 4, E)), _weights(2)
    attrs = {**LLAMA, "use_neox_rotary_style": neox}
    empty = [np.zeros((2, 2, KV, 6, DIM))] * 2
    full, cache0, _ = run("fused_multi_transformer", {"x": x, "cache_kvs": empty, "rotary_tensor": _table(
        2, range(4), neox), **inputs}, ["out", "cache_kv_outs"], attrs)
    _, *caches = run("fused_multi_transformer", {"x": x[:, :3], "cache_kvs": empty, "rotary_tensor": _table(
        2, range(3), neox), **inputs}, ["out", "cache_kv_outs"], attrs)
    step, stepped0, _ = run("fused_multi_transformer", {
        "x": x[:, 3:], "cache_kvs": caches, "rotary_tensor": _table(2, [3], neox), "time_step": np.array([3], np.int32),
        **inputs}, ["out", "cache_kv_outs"], attrs)
    np.testing.assert_allclose(step[:, 0], full[:, 3], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(stepped0, cache0, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(full, _reference(x, inputs, neox), rtol=1e-10, atol=1e-10)


def test_the_encoders_pair_rope_reads_the_first_cos_and_sin_of_each_pair():
    x, inputs = r.standard_normal((1, 3, E)), _weights(1)
    table = r.standard_normal((2, 1, 1, 3, DIM))
    paired = table.copy()
    paired[..., 1::2] = table[..., 0::2]
    attrs = {**LLAMA, "use_neox_rotary_style": False}
    (out,) = run("fused_multi_transformer", {"x": x, "rotary_tensor": table, **inputs}, ["out"], attrs)
    (same,) = run("fused_multi_transformer", {"x": x, "rotary_tensor": paired, **inputs}, ["out"], attrs)
    np.testing.assert_allclose(out, same, rtol=1e-12, atol=1e-12)


def _decode(x, inputs, cache, steps, **extra):
    feed = {"x": x, "cache_kvs": [cache], "time_step": np.array([max(steps)], np.int32), **inputs, **extra}
    if len(set(steps)) > 1 or 0 in steps:
        feed["seq_lengths"] = np.array(steps, np.int32)
    return run("fused_multi_transformer", feed, ["out", "cache_kv_outs"], {**LLAMA, "rotary_emb_dims": 0})


def test_decoding_rows_step_at_their_own_seq_lengths_and_a_row_at_0_is_skipped():
    x, inputs = r.standard_normal((3, 1, E)), _weights(1)
    cache = r.standard_normal((2, 3, KV, 5, DIM))
    out, cache_out = _decode(x, inputs, cache, [3, 1, 0])
    for row, step in ((0, 3), (1, 1)):
        alone, alone_cache = _decode(x[row:row + 1], inputs, cache[:, row:row + 1], [step])
        np.testing.assert_allclose(out[row], alone[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(cache_out[:, row], alone_cache[:, 0], rtol=1e-12, atol=1e-12)
    assert not out[2].any() and np.array_equal(cache_out[:, 2], cache[:, 2])


def test_the_mask_column_of_the_decoded_token_is_not_read_and_beam_offset_is_not_read():
    x, inputs = r.standard_normal((1, 1, E)), _weights(1)
    cache, mask = r.standard_normal((2, 1, KV, 4, DIM)), r.standard_normal((1, 1, 1, 4))
    out, _ = _decode(x, inputs, cache, [2], src_mask=mask)
    hidden = mask.copy()
    hidden[..., 2:] = 1e9
    same, _ = _decode(x, inputs, cache, [2], src_mask=hidden, beam_offset=np.ones((1, 1, 4), np.int32))
    np.testing.assert_allclose(same, out, rtol=1e-12, atol=1e-12)
    other, _ = _decode(x, inputs, cache, [2], src_mask=mask + np.array([0, 1, 0, 0]))
    assert np.abs(other - out).max() > 1e-3


def test_pre_caches_are_a_prefix_every_token_sees():
    """A prefix of 2 positions: the encoder over the last 3 tokens after it equals the last rows of the encoder
    over all 5, and writes the prefix and the tokens into the cache."""
    x, inputs = r.standard_normal((2, 5, E)), _weights(1)
    attrs = {"gqa_group_size": KV, "norm_type": "rmsnorm", "act_method": "swiglu"}
    full, cache = run("fused_multi_transformer", {"x": x, "cache_kvs": [np.zeros((2, 2, KV, 6, DIM))], **inputs},
                      ["out", "cache_kv_outs"], attrs)
    plain = np.stack([keys_from_layout(cache[0], 2), cache[1]])
    tail, tail_cache = run("fused_multi_transformer", {
        "x": x[:, 2:], "pre_caches": [plain[:, :, :, :2]], "cache_kvs": [np.zeros((2, 2, KV, 6, DIM))], **inputs},
        ["out", "cache_kv_outs"], attrs)
    np.testing.assert_allclose(tail, full[:, 2:], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(tail_cache, cache, rtol=1e-12, atol=1e-12)


def test_bad_rotary_tables_gqa_heads_and_caches_are_refused():
    x, inputs = r.standard_normal((1, 2, E)), _weights(1)
    with pytest.raises(ProgramError, match=r"rotary_tensor must be \[2, 1, 1, 2, 2\] \(cos, sin\), got"):
        run("fused_multi_transformer", {"x": x, "rotary_tensor": np.zeros((2, 1, 1, 3, DIM)), **inputs}, ["out"],
            LLAMA)
    with pytest.raises(ProgramError, match="holds 4 query heads, which gqa_group_size=3 kv heads must divide"):
        run("fused_multi_transformer", {"x": x, **_weights(1, kv=3)}, ["out"], {"gqa_group_size": 3})
    with pytest.raises(ProgramError, match=r"cache_kvs must be \[2, 1, 2, length, 2\]"):
        run("fused_multi_transformer", {"x": x, "cache_kvs": [np.zeros((2, 1, HEADS, 4, DIM))], **inputs}, ["out"],
            {"gqa_group_size": KV})
    with pytest.raises(ExecutionError, match="decoding step 4 is past cache_kvs' 4 positions"):
        _decode(x[:, :1], inputs, np.zeros((2, 1, KV, 4, DIM)), [4])


@pytest.mark.parametrize("case", ["multi_transformer_llama_encoder", "multi_transformer_llama_decode_step"])
def test_paddles_translated_llama_stack(case):
    """A Llama-like stack (rmsnorm, GQA 2:1, neox rope, swiglu; tools/paddle_llama_multi_transformer.py) translated
    by Paddle: the encoder, and a step over the caches Paddle's composition of the encoder writes (keys chunked),
    against Paddle's own CPU ops composing the stack in float64 (for the step: row 3 of the stack over 4 tokens)."""
    directory = Path(__file__).parent / "data" / "paddle" / "pir_gpu_only" / case
    with np.load(directory / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    (out,) = gradc.Executor().run(load_pir(directory / "program.json"), feed, ["out"], gradc.Scope())
    with np.load(directory / "expected.npz") as archive:
        np.testing.assert_allclose(out, archive["out"], rtol=2e-5, atol=2e-5)


def test_a_head_dim_the_caches_chunks_do_not_divide_is_refused():
    x = np.zeros((1, 2, E), np.float16)   # float16 keys sit in chunks of 8 values, head_dim is 2
    inputs = {slot: [value.astype(np.float16) for value in values] for slot, values in _weights(1).items()}
    with pytest.raises(ExecutionError, match="head_dim 2 must be a multiple of the cache's 16-byte chunk of 8"):
        run("fused_multi_transformer", {"x": x, "cache_kvs": [np.zeros((2, 1, KV, 4, DIM), np.float16)], **inputs},
            ["out"], {"gqa_group_size": KV})
