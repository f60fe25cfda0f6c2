"""block_multihead_attention and blha_get_max_len (gradc.ops.llm_block_attention) against a numpy reference written
token by token from the CUDA kernels' formulas (block_multi_head_attention_kernel.cu, block_attn.h), on Paddle's
translations of their legacy ops (tools/paddle_llm_attention_programs.py) and on programs built here."""

import math

import numpy as np
import pytest

from gradc.errors import ProgramError
from test_extra_math import run
from test_llm_attention import _translated

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


def blha_reference(feed, heads, kv_heads, neox):
    """(fmha_out, qkv_out, key_cache, value_cache) one token, head and cache row at a time."""
    qkv = feed["qkv"].astype(np.float64) + feed.get("qkv_bias", 0)
    keys, values = feed["key_cache"].astype(np.float64), feed["value_cache"].astype(np.float64)
    tables, rope, group = feed["block_tables"], feed.get("rope_emb"), heads // kv_heads
    out = np.zeros((qkv.shape[0], heads * DIM))

    def head(t, h):
        return qkv[t, h * DIM:(h + 1) * DIM]

    def page(b, pos):
        return tables[b, pos // BLOCK], pos % BLOCK

    for b, length in enumerate(feed["seq_lens_encoder"][:, 0]):
        tokens = range(feed["cu_seqlens_q"][b], feed["cu_seqlens_q"][b] + length)
        for t in tokens:
            pos = (t + feed["padding_offsets"][t]) % SEQ
            if rope is not None:
                cos, sin = _prefill_tables(rope, pos, neox)
                for h in range(heads + kv_heads):
                    qkv[t, h * DIM:(h + 1) * DIM] = _turn(head(t, h), cos, sin, neox)
            for g in range(kv_heads):
                p, row = page(b, pos)
                keys[p, g, row], values[p, g, row] = head(t, heads + g), head(t, heads + kv_heads + g)
        for i, t in enumerate(tokens):
            for h in range(heads):
                g = h // group
                scores = np.array([head(t, h) @ head(s, heads + g) / math.sqrt(DIM) for s in tokens[:i + 1]])
                p = np.exp(scores - scores.max())
                out[t, h * DIM:(h + 1) * DIM] = p @ np.array([head(s, heads + kv_heads + g)
                                                              for s in tokens[:i + 1]]) / p.sum()
    qkv_out = qkv.copy()
    for b, step in enumerate(feed["seq_lens_decoder"][:, 0]):
        if step == 0:
            continue
        t = b * SEQ - feed["cum_offsets"][b]
        vecs = [head(t, h) for h in range(heads + 2 * kv_heads)]
        if rope is not None:
            cos, sin = _decode_tables(rope, step, neox)
            vecs[:heads + kv_heads] = [_turn(v, cos, sin, neox) for v in vecs[:heads + kv_heads]]
        for g in range(kv_heads):
            p, row = page(b, step)
            keys[p, g, row], values[p, g, row] = vecs[heads + g], vecs[heads + kv_heads + g]
        for h in range(heads):
            g = h // group
            cached = [page(b, s) for s in range(step + 1)]
            scores = np.array([vecs[h] @ keys[p, g, row] / math.sqrt(DIM) for p, row in cached])
            if "tgt_mask" in feed:
                scores += feed["tgt_mask"][b, 0, 0, :step + 1]
            weights = np.exp(scores - scores.max())
            out[t, h * DIM:(h + 1) * DIM] = weights @ np.array([values[p, g, row] for p, row in cached]) / (
                weights.sum() + 1e-6)
    return out, qkv_out, keys, values


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
    ({"cache_k_quant_scales": np.ones(2, np.float32)}, {}, "cache_k_quant_scales: the int8 cache"),
    ({"pre_key_cache": np.zeros((3, 2, 2, DIM), np.float32)}, {}, "pre_key_cache: the prefix cache"),
    ({}, {"out_scale": 1.0}, "the quantized outputs"),
    ({}, {"block_size": 8}, "block_size=8 must be key_cache's block size 4"),
    ({"cum_offsets": np.zeros(3, np.int64)}, {}, "cum_offsets must be int32"),
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
