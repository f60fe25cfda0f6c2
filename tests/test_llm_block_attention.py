"""block_multihead_attention and blha_get_max_len (gradc.ops.llm_block_attention) against a numpy reference written
token by token from the CUDA kernels' formulas (block_multi_head_attention_kernel.cu, block_attn.h), on Paddle's
translations of their legacy ops (tools/paddle_llm_attention_programs.py) and on programs built here."""

import math

import numpy as np
import pytest

from gradc.errors import ProgramError
from test_extra_math import run
from test_llm_attention import _translated
from test_mmha_quant import _code as out_code

r = np.random.default_rng(37)
DIM, SEQ, BLOCK = 16, 8, 4


def _turn(vec, cos, sin, neox):
    """Pairs (2i, 2i + 1) by cos[i], sin[i]; neox: halves (i, i + D/2) by cos[i] (first) and cos[i + D/2] (second)."""
    out, half = np.zeros(len(vec)), len(vec) // 2
    for i in range(len(vec)):
        if neox:
            partner = -vec[i + half] if i < half else vec[i - half]
            out[i] = vec[i] * cos[i] + partner * sin[i]
        else:
            partner = -vec[i + 1] if i % 2 == 0 else vec[i - 1]
            out[i] = vec[i] * cos[i // 2] + partner * sin[i // 2]
    return out


def _prefill_tables(rope, pos, neox):
    flat, length = rope.reshape(-1).astype(np.float64), rope.shape[2]
    if neox:   # the first half of the row turns both halves
        cos, sin = flat[pos * DIM:pos * DIM + DIM // 2], flat[(length + pos) * DIM:(length + pos) * DIM + DIM // 2]
        return np.tile(cos, 2), np.tile(sin, 2)
    half = DIM // 2
    return flat[pos * half:(pos + 1) * half], flat[(length + pos) * half:(length + pos + 1) * half]


def _decode_tables(rope, step, neox, theta=10000.0):
    if neox:
        flat, stride = rope.reshape(-1).astype(np.float64), rope.shape[2] * rope.shape[4]
        return flat[step * DIM:(step + 1) * DIM], flat[stride + step * DIM:stride + (step + 1) * DIM]
    angles = [float(np.float32(step) / np.float32(theta) ** np.float32(2 * i / DIM)) for i in range(DIM // 2)]
    return np.cos(angles), np.sin(angles)


def _code(x, scale, decode, round_type=1, low=-127.0, high=127.0):
    """One int8 cache byte: float32 product rounded (decode: ties to even in [-127, 127]; prefill: round_type 0 ties
    to even, else half away from zero, in [low, high]) + 128."""
    product = float(np.float32(scale) * np.float32(x))
    if decode or round_type == 0:
        rounded = float(round(product))   # Python's round() breaks ties to even
    else:
        rounded = math.copysign(math.floor(abs(product) + 0.5), product)
    low, high = (-127.0, 127.0) if decode else (low, high)
    return np.uint8(min(max(rounded, low), high) + 128)


class _Cache:
    """The paged cache one element at a time: floats, or the int8 cache's bytes when the feed has its scales."""

    def __init__(self, feed, kind, dynamic=False):
        self.kind, self.data, self.dynamic = kind, feed[f"{kind}_cache"].copy(), dynamic
        self.int8 = f"cache_{kind[0]}_quant_scales" in feed
        if self.int8:   # [rows, kv_heads]: one row, or one per sequence (dynamic)
            self.quant, self.dequant = (feed[f"cache_{kind[0]}_{s}_scales"].reshape(-1, self.data.shape[1]).copy()
                                        for s in ("quant", "dequant"))
        else:
            self.data = self.data.astype(np.float64)

    def measure(self, b, g, vecs):
        """Sequence b's dynamic scales of kv head g from every token's vector of that head."""
        self.quant[b, g] = np.float32(127) / np.float32(max(abs(float(np.float32(x))) for v in vecs for x in v))
        self.dequant[b, g] = np.float32(1) / self.quant[b, g]

    def put(self, p, g, row, vec, decode, b):
        if not self.int8:
            self.data[p, g, row] = vec
            return
        for d, x in enumerate(vec):
            self.data[p, g, row, d] = _code(x, self.quant[b if self.dynamic else 0, g], decode)

    def get(self, p, g, row, b):
        if not self.int8:
            return self.data[p, g, row]
        scale = np.float32(self.dequant[b if self.dynamic else 0, g])
        return np.array([float(scale * np.float32(int(u) - 128)) for u in self.data[p, g, row]])


def blha_reference(feed, heads, kv_heads, neox, dynamic=False):
    """(fmha_out, qkv_out, key_cache, value_cache) one token, head and cache row at a time; a prefix cache sits at
    cache positions 0..pre-1, before the sequence's tokens, and is seen whole by every token."""
    qkv = feed["qkv"].astype(np.float64) + feed.get("qkv_bias", 0)
    pre_k, pre_v = feed.get("pre_key_cache"), feed.get("pre_value_cache")
    pre = 0 if pre_k is None else pre_k.shape[2]
    keys, values = _Cache(feed, "key", dynamic), _Cache(feed, "value", dynamic)
    tables, rope, group = feed["block_tables"], feed.get("rope_emb"), heads // kv_heads
    out = np.zeros((qkv.shape[0], heads * DIM))

    def head(t, h):
        return qkv[t, h * DIM:(h + 1) * DIM]

    def page(b, pos):
        return tables[b, pos // BLOCK], pos % BLOCK

    for b, length in enumerate(feed["seq_lens_encoder"][:, 0]):   # every prefill token turned first
        for t in range(feed["cu_seqlens_q"][b], feed["cu_seqlens_q"][b] + length * (rope is not None)):
            cos, sin = _prefill_tables(rope, (t + feed["padding_offsets"][t]) % SEQ, neox)
            for h in range(heads + kv_heads):
                qkv[t, h * DIM:(h + 1) * DIM] = _turn(head(t, h), cos, sin, neox)
    for b, length in enumerate(feed["seq_lens_encoder"][:, 0]):
        tokens = range(feed["cu_seqlens_q"][b], feed["cu_seqlens_q"][b] + length)
        for g in range(kv_heads * (length > 0) * dynamic):   # the kernel's max over all tokens of the batch
            keys.measure(b, g, [head(t, heads + g) for t in range(len(qkv))])
            values.measure(b, g, [head(t, heads + kv_heads + g) for t in range(len(qkv))])
        for t in tokens:
            pos = (t + feed["padding_offsets"][t]) % SEQ
            for g in range(kv_heads):
                p, row = page(b, pos + pre)
                keys.put(p, g, row, head(t, heads + g), False, b)
                values.put(p, g, row, head(t, heads + kv_heads + g), False, b)
        for g in range(kv_heads * (length > 0)):
            for j in range(pre):
                p, row = page(b, j)
                keys.put(p, g, row, pre_k[b, g, j], False, b)
                values.put(p, g, row, pre_v[b, g, j], False, b)
        for i, t in enumerate(tokens):
            seen = tokens if "mask" in feed else tokens[:i + 1]
            for h in range(heads):
                g = h // group
                key_list = [pre_k[b, g, j] for j in range(pre)] + [head(s, heads + g) for s in seen]
                value_list = [pre_v[b, g, j] for j in range(pre)] + [head(s, heads + kv_heads + g) for s in seen]
                scores = np.array([head(t, h) @ key / math.sqrt(DIM) for key in key_list])
                if "mask" in feed:
                    scores += feed["mask"][b, h if feed["mask"].shape[1] > 1 else 0, i, :len(key_list)]
                p = np.exp(scores - scores.max())
                out[t, h * DIM:(h + 1) * DIM] = p @ np.array(value_list) / p.sum()
    qkv_out = qkv.copy()
    for b, step in enumerate(feed["seq_lens_decoder"][:, 0]):
        if step == 0:
            continue
        t = b * SEQ - feed["cum_offsets"][b]
        vecs = [head(t, h) for h in range(heads + 2 * kv_heads)]
        if rope is not None:
            cos, sin = _decode_tables(rope, step, neox)
            vecs[:heads + kv_heads] = [_turn(v, cos, sin, neox) for v in vecs[:heads + kv_heads]]
        step += pre   # rope above at the token's own position, the cache past the prefix
        cached = [page(b, s) for s in range(step)]   # read before the new token's row is written
        seen_keys = [[keys.get(p, g, row, b) for p, row in cached] + [vecs[heads + g]] for g in range(kv_heads)]
        seen_values = [[values.get(p, g, row, b) for p, row in cached] + [vecs[heads + kv_heads + g]]
                       for g in range(kv_heads)]
        for g in range(kv_heads):
            p, row = page(b, step)
            keys.put(p, g, row, vecs[heads + g], True, b)
            values.put(p, g, row, vecs[heads + kv_heads + g], True, b)
        for h in range(heads):
            g = h // group
            scores = np.array([vecs[h] @ key / math.sqrt(DIM) for key in seen_keys[g]])
            if "tgt_mask" in feed:
                scores += feed["tgt_mask"][b, 0, 0, :step + 1]
            weights = np.exp(scores - scores.max())
            out[t, h * DIM:(h + 1) * DIM] = weights @ np.array(seen_values[g]) / (weights.sum() + 1e-6)
    return out, qkv_out, keys.data, values.data


@pytest.mark.parametrize("case, heads, kv_heads, neox", [("blha_prefill_pairs_gqa_bias", 4, 2, False),
                                                         ("blha_decode_neox_tgt_mask", 2, 2, True)])
def test_paddles_translated_block_attention_program_runs_the_phase_and_pages_the_cache(case, heads, kv_heads, neox):
    feed, got = _translated(case)
    out, qkv_out, keys, values = blha_reference(feed, heads, kv_heads, neox)
    encoder, decoder = feed["seq_lens_encoder"].max(), feed["seq_lens_decoder"].max()
    assert got["max_enc_len_this_time"].tolist() == [encoder] and got["max_dec_len_this_time"].tolist() == [decoder]
    np.testing.assert_allclose(got["fmha_out"], out, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(got["qkv"], qkv_out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["key_cache"], keys, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["value_cache"], values, rtol=1e-5, atol=1e-5)
    assert not np.array_equal(got["key_cache"], feed["key_cache"])


def test_paddles_translated_int8_cache_program_quantizes_on_write_and_dequantizes_on_read():
    feed, got = _translated("blha_int8_cache_prefill_decode")
    out, qkv_out, keys, values = blha_reference(feed, 2, 2, False)
    assert got["key_cache"].dtype == np.uint8 and got["value_cache"].dtype == np.uint8
    np.testing.assert_array_equal(got["key_cache"], keys)   # byte for byte
    np.testing.assert_array_equal(got["value_cache"], values)
    np.testing.assert_allclose(got["fmha_out"], out, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(got["qkv"], qkv_out, rtol=1e-5, atol=1e-5)
    assert np.count_nonzero(got["key_cache"] != feed["key_cache"]) > 3 * 2 * DIM   # 3 prefill rows + 1 decode row


def test_paddles_translated_int32_qkv_program_dequantizes_each_column_into_float16():
    feed, got = _translated("blha_int32_qkv_fp16")
    dequantized = np.zeros(feed["qkv"].shape, np.float16)
    for t, c in np.ndindex(*feed["qkv"].shape):
        dequantized[t, c] = np.float16(np.float32(feed["qkv"][t, c]) * feed["qkv_out_scale"][c])
    out, _, keys, values = blha_reference({**feed, "qkv": dequantized}, 2, 2, False)
    assert got["fmha_out"].dtype == np.float16 and got["key_cache"].dtype == np.float16
    np.testing.assert_array_equal(got["qkv"], feed["qkv"])   # qkv_out: the int32 input, untouched
    np.testing.assert_allclose(got["fmha_out"], out, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(got["key_cache"], keys, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(got["value_cache"], values, rtol=2e-3, atol=2e-3)


def test_paddles_translated_int8_out_program_smooths_then_quantizes_fmha_out():
    feed, got = _translated("blha_int8_out_smooth")
    out = blha_reference(feed, 2, 2, False)[0]
    want = np.zeros(out.shape, np.int8)
    for t, c in np.ndindex(*out.shape):   # (o + shift) smooth in the compute dtype (float32), then quantized
        smoothed = (np.float32(out[t, c]) + feed["out_shift"][c]) * feed["out_smooth"][c]
        want[t, c] = out_code(smoothed, 0.05, 1)
    assert got["fmha_out"].dtype == np.int8 and len(np.unique(want)) > 10
    np.testing.assert_array_equal(got["fmha_out"], want)


def _mixed_batch():
    """Sequence 0 prefills 3 tokens, sequence 1 decodes at step 5, sequence 2 is idle: tokens 0-2 and 3."""
    feed = {"qkv": r.standard_normal((4, 6 * DIM)).astype(np.float32),
            "key_cache": r.standard_normal((5, 2, BLOCK, DIM)).astype(np.float32),
            "value_cache": r.standard_normal((5, 2, BLOCK, DIM)).astype(np.float32),
            "seq_lens_encoder": np.array([[3], [0], [0]], np.int32),
            "seq_lens_decoder": np.array([[0], [5], [0]], np.int32),
            "seq_lens_this_time": np.array([[3], [1], [0]], np.int32),
            "padding_offsets": np.array([0, 0, 0, 5], np.int32), "cum_offsets": np.array([0, 5, 12], np.int32),
            "cu_seqlens_q": np.array([0, 3, 4, 4], np.int32), "cu_seqlens_k": np.array([0, 3, 4, 4], np.int32),
            "block_tables": np.array([[2, 4], [0, 3], [1, 1]], np.int32)}
    return feed


def test_block_attention_prefills_and_decodes_in_one_batch_with_the_kernels_computed_decode_angles():
    feed = _mixed_batch()
    feed["rope_emb"] = r.standard_normal((2, 1, SEQ, 1, DIM // 2)).astype(np.float32)
    outs = run("block_multihead_attention", feed, ["fmha_out", "qkv_out", "key_cache_out", "value_cache_out"],
               {"max_seq_len": SEQ, "block_size": BLOCK})
    for got, want in zip(outs, blha_reference(feed, 2, 2, False)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    written, raw = outs[2][3, 0, 1], feed["qkv"][3, 2 * DIM:3 * DIM]   # step 5: page table[1][1] = 3, row 1
    assert not np.allclose(written, raw)   # turned by the step-5 angles, which keep each pair's length
    np.testing.assert_allclose(np.hypot(written[0::2], written[1::2]), np.hypot(raw[0::2], raw[1::2]), rtol=1e-5)
    np.testing.assert_array_equal(outs[1][3], feed["qkv"][3])   # qkv_out keeps the decode token unturned


@pytest.mark.parametrize("round_type, ties", [(1, [3, -3]), (0, [2, -2])])
def test_int8_cache_prefill_rounds_by_quant_round_type_into_the_bounds_and_decode_always_to_even(round_type, ties):
    feed = _mixed_batch()
    ties_bounds = np.array([1.25, -1.25, 0.75, 90.0, -90.0], np.float32)   # times 2: 2.5, -2.5, 1.5, 180, -180
    feed["qkv"][0, 2 * DIM:2 * DIM + 5] = feed["qkv"][3, 2 * DIM:2 * DIM + 5] = ties_bounds
    feed |= {"key_cache": np.full((5, 2, BLOCK, DIM), 128, np.uint8), "value_cache": np.full((5, 2, BLOCK, DIM), 128,
                                                                                             np.uint8),
             "cache_k_quant_scales": np.full(2, 2.0, np.float32), "cache_v_quant_scales": np.full(2, 2.0, np.float32),
             "cache_k_dequant_scales": np.full(2, 0.5, np.float32),
             "cache_v_dequant_scales": np.full(2, 0.5, np.float32)}
    attrs = {"max_seq_len": SEQ, "block_size": BLOCK, "quant_round_type": round_type, "quant_max_bound": 100.0,
             "quant_min_bound": -110.0}
    out, keys = run("block_multihead_attention", feed, ["fmha_out", "key_cache_out"], attrs)
    prefill, decode = keys[2, 0, 0, :5].astype(int) - 128, keys[3, 0, 1, :5].astype(int) - 128
    assert prefill.tolist() == [*ties, 2, 100, -110]   # sequence 0's token 0: page 2, row 0
    assert decode.tolist() == [2, -2, 2, 127, -127]   # sequence 1's step 5: page 3, row 1, the kernel's fixed bounds
    # steps 0-4 of sequence 1 read byte 128 (key and value 0): score 0 each; the token's own k and v unquantized
    q, k, v = (feed["qkv"][3, i * DIM:(i + 1) * DIM].astype(np.float64) for i in (0, 2, 4))
    own, top = q @ k / 4, max(q @ k / 4, 0.0)
    weight = np.exp(own - top)
    np.testing.assert_allclose(out[3, :DIM], weight * v / (5 * np.exp(-top) + weight + 1e-6), rtol=1e-5)


def test_block_attention_prefill_mask_replaces_the_causal_triangle_and_max_lens_switch_phases_off():
    feed = _mixed_batch()
    mask = r.uniform(-1, 0, (3, 1, SEQ, SEQ)).astype(np.float32)
    attrs = {"max_seq_len": SEQ, "block_size": BLOCK}
    (out,) = run("block_multihead_attention", {**feed, "mask": mask}, ["fmha_out"], attrs)
    tokens = feed["qkv"][:3].astype(np.float64).reshape(3, 6, DIM)
    scores = tokens[:, 0] @ tokens[:, 2].T / 4 + mask[0, 0, :3, :3]   # head 0 against kv head 0, all 3 keys
    weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    np.testing.assert_allclose(out[:3, :DIM], weights @ tokens[:, 4], rtol=1e-5, atol=1e-6)
    off = {"max_enc_len_this_time": np.array([0], np.int32), "max_dec_len_this_time": np.array([0], np.int32)}
    out, keys = run("block_multihead_attention", {**feed, **off}, ["fmha_out", "key_cache_out"], attrs)
    np.testing.assert_array_equal(out, 0)
    np.testing.assert_array_equal(keys, feed["key_cache"])


def test_blha_get_max_len_reads_the_first_batch_size_sequences():
    encoder, decoder = np.array([[3], [9], [1]], np.int32), np.array([[0], [4], [7]], np.int32)
    enc, dec = run("blha_get_max_len", {"seq_lens_encoder": encoder, "seq_lens_decoder": decoder,
                                        "batch_size": np.ones(2, np.int32)},
                   ["max_enc_len_this_time", "max_dec_len_this_time"])
    assert enc.tolist() == [9] and dec.tolist() == [4] and enc.dtype == np.int32


@pytest.mark.parametrize("inputs, attrs, message", [
    ({"cache_k_quant_scales": np.ones(2, np.float32)}, {}, "the int8 cache needs all of"),
    ({"pre_key_cache": np.zeros((3, 2, 2, DIM), np.float32)}, {}, "pre_key_cache needs its partner"),
    ({"pre_key_cache": np.zeros((3, 1, 2, DIM), np.float32), "pre_value_cache": np.zeros((3, 1, 2, DIM), np.float32)},
     {}, r"must both be \[batch, kv_heads=2, prefix, head_dim=16\]"),
    ({}, {"out_scale": 1.0, "quant_max_bound": 448.0}, "float8_e4m3fn at 448, not supported"),
    ({"key_cache": np.zeros((5, 2, BLOCK, DIM), np.uint8), "value_cache": np.zeros((5, 2, BLOCK, DIM), np.uint8),
      **{f"cache_{kv}_{kind}_scales": np.ones(2, np.float32) for kv in "kv" for kind in ("quant", "dequant")}},
     {"dynamic_cachekv_quant": True}, r"must hold batch kv_heads = 6 values"),
    ({}, {"block_size": 8}, "block_size=8 must be key_cache's block size 4"),
    ({"cum_offsets": np.zeros(3, np.int64)}, {}, "cum_offsets must be int32"),
    ({"qkv_out_scale": np.ones(96, np.float32)}, {}, "qkv_out_scale needs an int32 qkv"),
    ({"qkv": np.ones((4, 96), np.int32), "qkv_out_scale": np.ones(96, np.float32)}, {"compute_dtype": "default"},
     "an int32 qkv runs in float16 with 'fp16'"),
])
def test_block_attention_refuses_what_it_does_not_run(inputs, attrs, message):
    with pytest.raises(ProgramError, match=message):
        run("block_multihead_attention", {**_mixed_batch(), **inputs}, ["fmha_out"],
            {"max_seq_len": SEQ, "block_size": BLOCK, **attrs})


def test_block_attention_refuses_a_position_outside_the_block_table():
    feed = _mixed_batch()
    feed["seq_lens_decoder"] = np.array([[0], [8], [0]], np.int32)
    with pytest.raises(Exception, match="sequence 1's position 8 falls outside its block table"):
        run("block_multihead_attention", feed, ["fmha_out"], {"max_seq_len": SEQ, "block_size": BLOCK})
