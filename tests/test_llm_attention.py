"""The attention ops of PaddleNLP's inference exports (gradc.ops.llm_attention) against numpy references written
loop by loop from the CUDA kernels' formulas (masked_multihead_attention_kernel.cu, ...), on Paddle's translations
of their legacy ops (tools/paddle_llm_attention_programs.py) and on programs built here."""

import math

import numpy as np
import pytest

from gradc.errors import ProgramError
from test_extra_math import program_of, round_trips_through_pir, run
from test_fused_llm import GPU_ONLY, _translated

r = np.random.default_rng(31)


def _cache_key(block, t, d, width):
    """Key t, element d of one [S, D] block stored as [D / X, S, X] (the kernel's offsets)."""
    seq = block.shape[0]
    return block.reshape(-1)[(d // width) * seq * width + t * width + d % width]


def _rope(vec, cos, sin, neox, dims):
    out = np.zeros(len(vec))
    chunk = len(vec) // dims
    for i in range(len(vec)):
        if neox:
            base, j = i // chunk * chunk, i % chunk
            half = chunk // 2
            partner = -vec[base + j + half] if j < half else vec[base + j - half]
        else:
            partner = -vec[i + 1] if i % 2 == 0 else vec[i - 1]
        out[i] = vec[i] * cos[i] + partner * sin[i]
    return out


def mmha_reference(x, cache, bias=None, mask=None, lengths=None, rotary=None, neox=False, dims=1, shift=None,
                   smooth=None, offsets=None):
    """(out, cache_out) one sequence and head at a time, as the kernel's blocks do; with beam offsets position t
    of sequence b reads beam offsets[b, t] of b's group (b itself for 0) from the cache before the step."""
    x, before, cache = x.astype(np.float64), cache, cache.copy()
    batch, (kv_heads, seq, dim) = x.shape[0], cache.shape[2:]
    heads, width = x.shape[1] // dim - 2 * kv_heads, 16 // cache.dtype.itemsize
    out = np.zeros((batch, heads * dim))
    for b in range(batch):
        step = int(lengths[b, 0]) if lengths is not None else mask.shape[-1] - 1
        qkv = x[b] + (0 if bias is None else bias.reshape(-1))
        new_keys, new_values = [], []
        for g in range(kv_heads):
            key = qkv[(heads + g) * dim:(heads + g + 1) * dim]
            if rotary is not None:
                key = _rope(key, rotary[0, b].reshape(-1), rotary[1, b].reshape(-1), neox, dims)
            new_keys.append(key)
            new_values.append(qkv[(heads + kv_heads + g) * dim:(heads + kv_heads + g + 1) * dim])
        for h in range(heads):
            g = h // (heads // kv_heads)
            q = qkv[h * dim:(h + 1) * dim]
            if rotary is not None:
                q = _rope(q, rotary[0, b].reshape(-1), rotary[1, b].reshape(-1), neox, dims)
            beams = 1 if offsets is None else offsets.shape[1]
            row = np.zeros(step, int) if offsets is None else offsets.reshape(-1, seq)[b]
            source = [b // beams * beams + row[t] if row[t] else b for t in range(step)]
            keys = [[_cache_key(before[0, source[t], g], t, d, width) for d in range(dim)] for t in range(step)]
            keys = np.array(keys + [new_keys[g]])
            values = np.array([before[1, source[t], g, t] for t in range(step)] + [new_values[g]])
            scores = keys @ q / math.sqrt(dim)
            if mask is not None:
                scores = scores + mask[b, h if mask.shape[1] > 1 else 0, 0, :step + 1]
            p = np.exp(scores - scores.max())
            out[b, h * dim:(h + 1) * dim] = p @ values / (p.sum() + 1e-6)
        for g in range(kv_heads):
            flat = cache[0, b, g].reshape(-1)
            for d in range(dim):
                flat[(d // width) * seq * width + step * width + d % width] = new_keys[g][d]
            cache[1, b, g, step] = new_values[g]
    if shift is not None:
        out = (out + shift) * smooth
    return out, cache


@pytest.mark.parametrize("case, neox", [("mmha_pairs_bias_mask", False), ("mmha_gqa_neox_lengths_smooth", True)])
def test_paddles_translated_mmha_program_runs_one_decoding_step_and_writes_the_cache(case, neox):
    feed, got = _translated(case)
    want_out, want_cache = mmha_reference(
        feed["x"], feed["cache_kv"], feed["bias"], feed["src_mask"], feed.get("sequence_lengths"),
        feed["rotary_tensor"], neox, 1, feed.get("out_shift"), feed.get("out_smooth"))
    np.testing.assert_allclose(got["out"], want_out, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(got["cache_kv"], want_cache, rtol=1e-6, atol=1e-6)
    assert not np.array_equal(got["cache_kv"], feed["cache_kv"])


def test_paddles_translated_mmha_program_reads_the_beams_its_offsets_name():
    feed, got = _translated("mmha_beam_offsets")
    want_out, want_cache = mmha_reference(
        feed["x"], feed["cache_kv"], feed["bias"], feed["src_mask"], feed["sequence_lengths"], feed["rotary_tensor"],
        offsets=feed["beam_cache_offset"])
    np.testing.assert_allclose(got["out"], want_out, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(got["cache_kv"], want_cache, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["beam_cache_offset"], feed["beam_cache_offset"])
    unmoved, _ = mmha_reference(feed["x"], feed["cache_kv"], feed["bias"], feed["src_mask"],
                                feed["sequence_lengths"], feed["rotary_tensor"])
    assert np.abs(want_out - unmoved).max() > 0.05


def _mmha_inputs(dtype, heads=2, kv_heads=1, dim=16, seq=5, batch=2):
    x = r.standard_normal((batch, (heads + 2 * kv_heads) * dim)).astype(dtype)
    cache = r.standard_normal((2, batch, kv_heads, seq, dim)).astype(dtype)
    return x, cache


def test_mmha_float16_reads_keys_in_chunks_of_eight_and_rotates_halves_of_each_rope_chunk():
    x, cache = _mmha_inputs(np.float16)
    rotary = r.standard_normal((2, 2, 1, 1, 16)).astype(np.float32)
    lengths = np.array([[3], [1]], np.int32)
    inputs = {"x": x, "cache_kv": cache, "sequence_lengths": lengths, "rotary_tensor": rotary}
    out, cache_out = run("masked_multihead_attention", inputs, ["out", "cache_kv_out"],
                         {"rotary_emb_dims": 2, "use_neox_rotary_style": True})
    want_out, want_cache = mmha_reference(x, cache, lengths=lengths, rotary=rotary, neox=True, dims=2)
    assert out.dtype == np.float16 and out.shape == (2, 32)
    np.testing.assert_allclose(out, want_out, rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(cache_out, want_cache.astype(np.float16), rtol=2e-3, atol=2e-3)
    untouched = np.ones(cache.shape, bool)
    untouched[:, 0, :, 3], untouched[:, 1, :, 1] = False, False
    np.testing.assert_array_equal(cache_out[1][untouched[1]], cache[1][untouched[1]])
    # the keys of step 3 sit in each chunk of 8 values, not in row 3 of the [S, D] block
    assert (cache_out[0] != cache[0]).sum() == 2 * 16 and (cache_out[0][untouched[0]] != cache[0][untouched[0]]).any()


def test_mmha_skips_a_sequence_of_negative_length_and_accepts_zero_beam_offsets():
    x, cache = _mmha_inputs(np.float32, heads=2, kv_heads=2)
    lengths = np.array([[-1], [2]], np.int32)
    offsets = np.zeros((2, 1, 5), np.int32)
    out, cache_out, offsets_out = run("masked_multihead_attention", {
        "x": x, "cache_kv": cache, "sequence_lengths": lengths, "beam_cache_offset": offsets},
        ["out", "cache_kv_out", "beam_cache_offset_out"])
    want_out, want_cache = mmha_reference(x[1:], cache[:, 1:], lengths=lengths[1:])
    np.testing.assert_array_equal(out[0], 0)
    np.testing.assert_array_equal(cache_out[:, 0], cache[:, 0])
    np.testing.assert_allclose(out[1:], want_out, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cache_out[:, 1:], want_cache, rtol=1e-6)
    np.testing.assert_array_equal(offsets_out, offsets)


@pytest.mark.parametrize("inputs, attrs, message", [
    ({"cum_offsets": np.zeros((2, 1), np.int32)}, {}, "cum_offsets is not supported"),
    ({"out_shift": np.ones(32, np.float32)}, {}, "out_shift needs out_smooth"),
    ({"rotary_tensor": np.ones((2, 2, 1, 1, 16), np.float64)}, {"rotary_emb_dims": 1}, "must be float32"),
    ({"src_mask": np.zeros((2, 3, 1, 4), np.float32)}, {}, "src_mask must be [batch, 1 or heads=2, 1, steps + 1]"),
])
def test_mmha_refuses_what_it_does_not_run(inputs, attrs, message):
    x, cache = _mmha_inputs(np.float32)
    feed = {"x": x, "cache_kv": cache, "sequence_lengths": np.array([[1], [1]], np.int32), **inputs}
    with pytest.raises(ProgramError, match=message.replace("[", r"\[").replace("+", r"\+")):
        run("masked_multihead_attention", feed, ["out", "cache_kv_out"], attrs)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_mmha_reads_each_position_from_the_beam_its_offset_names(dtype):
    # 2 sources x 3 beams; each beam's history points at other beams of its own group (0 = its own cache)
    x, cache = _mmha_inputs(dtype, heads=2, kv_heads=2, batch=6, seq=6)
    offsets = r.integers(0, 3, (2, 3, 6)).astype(np.int32)
    lengths = np.array([[4], [4], [4], [3], [3], [5]], np.int32)
    rotary = r.standard_normal((2, 6, 1, 1, 16)).astype(np.float32)
    out, cache_out, offsets_out = run("masked_multihead_attention", {
        "x": x, "cache_kv": cache, "sequence_lengths": lengths, "beam_cache_offset": offsets,
        "rotary_tensor": rotary}, ["out", "cache_kv_out", "beam_cache_offset_out"], {"rotary_emb_dims": 1})
    want_out, want_cache = mmha_reference(x, cache, lengths=lengths, rotary=rotary, offsets=offsets)
    unmoved, _ = mmha_reference(x, cache, lengths=lengths, rotary=rotary)
    tol = 1e-5 if dtype == np.float32 else 3e-3
    np.testing.assert_allclose(out, want_out, rtol=tol, atol=tol)
    np.testing.assert_allclose(cache_out, want_cache.astype(dtype), rtol=tol, atol=tol)
    np.testing.assert_array_equal(offsets_out, offsets)
    assert np.abs(want_out - unmoved).max() > 0.05   # the offsets change what is read


def test_mmha_refuses_beam_offsets_it_cannot_address_and_steps_past_the_cache():
    x, cache = _mmha_inputs(np.float32)
    offsets = np.zeros((1, 2, 5), np.int32)
    offsets[0, 1, 0] = 1
    lengths = np.array([[1], [1]], np.int32)
    with pytest.raises(Exception, match="needs cache_kv's batch and kv_heads equal"):   # GQA: 2 heads, 1 kv head
        run("masked_multihead_attention", {"x": x, "cache_kv": cache, "sequence_lengths": lengths,
                                           "beam_cache_offset": offsets}, ["out", "cache_kv_out"])
    x, cache = _mmha_inputs(np.float32, kv_heads=2)
    with pytest.raises(Exception, match=r"sequence 1's beam_cache_offset holds 0 .. 2, outside the 2 beams"):
        run("masked_multihead_attention", {"x": x, "cache_kv": cache, "sequence_lengths": lengths + 1,
                                           "beam_cache_offset": offsets * 2}, ["out", "cache_kv_out"])
    with pytest.raises(Exception, match="at step 5, past cache_kv's 5 positions"):
        run("masked_multihead_attention", {"x": x, "cache_kv": cache, "sequence_lengths": lengths + 4},
            ["out", "cache_kv_out"])


def varlen_reference(query, key, value, rows, cols, mask=None, scale=1.0, causal=False, pre_cache=0):
    """Row by row: query row i < rows[b] of head h against keys j < cols[b] + pre_cache of kv head h / group."""
    batch, heads, seq, _ = query.shape
    out = np.zeros((batch, heads, seq, value.shape[3]))
    for b in range(batch):
        m = int(rows[b, 0])
        n = int(cols[b, 0]) + (pre_cache if m else 0)
        for h in range(heads):
            g = h // (heads // key.shape[1])
            for i in range(m):
                scores = np.array([query[b, h, i].astype(np.float64) @ key[b, g, j] * scale for j in range(n)])
                if mask is not None:
                    scores += mask[b, h if mask.shape[1] > 1 else 0, i, :n]
                if causal:
                    scores[i + 1:] = -np.inf
                p = np.exp(scores - scores.max())
                out[b, h, i] = p @ value[b, g, :n] / p.sum()
    return out


@pytest.mark.parametrize("case, causal, pre_cache", [("varlen_attention_gqa_mask", False, 0),
                                                     ("varlen_attention_causal_pre_cache", True, 2)])
def test_paddles_translated_varlen_attention_program_attends_within_each_sequences_lengths(case, causal, pre_cache):
    feed, got = _translated(case)
    want = varlen_reference(feed["query"], feed["key"], feed["value"], feed["seq_lens"], feed["kv_seq_lens"],
                            feed.get("mask"), 0.3, causal, pre_cache)
    np.testing.assert_allclose(got["out"], want, rtol=1e-5, atol=1e-6)
    assert np.all(got["out"][1, :, 3:] == 0)   # rows past seq_lens[1] = 3
    with np.load(GPU_ONLY / case / "paddle_cpu_composition.npz") as paddle_numbers:
        np.testing.assert_allclose(got["out"], paddle_numbers["out"], rtol=1e-5, atol=1e-6)


def test_varlen_attention_with_a_per_head_mask_and_an_empty_sequence_matches_plain_attention():
    """The unfused composition softmax(q k^T scale + mask) v on the valid block of each sequence."""
    query, key, value = (r.standard_normal((2, 2, 4, 8)).astype(np.float32) for _ in range(3))
    mask = r.uniform(-2, 0, (2, 2, 4, 4)).astype(np.float32)
    rows, cols = np.array([[0], [3]], np.int32), np.array([[4], [2]], np.int32)
    (out,) = run("variable_length_memory_efficient_attention", {"query": query, "key": key, "value": value,
                                                                "seq_lens": rows, "kv_seq_lens": cols, "mask": mask},
                 ["out"], {"scale": 0.5})
    scores = query[1, :, :3].astype(np.float64) @ key[1, :, :2].transpose(0, 2, 1) * 0.5 + mask[1, :, :3, :2]
    weights = np.exp(scores) / np.exp(scores).sum(-1, keepdims=True)
    np.testing.assert_allclose(out[1, :, :3], weights @ value[1, :, :2], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[0], 0)
    np.testing.assert_array_equal(out[1, :, 3], 0)


def test_varlen_attention_refuses_lengths_past_its_inputs():
    query = np.zeros((1, 1, 2, 4), np.float32)
    inputs = {"query": query, "key": query, "value": query, "seq_lens": np.array([[2]], np.int32),
              "kv_seq_lens": np.array([[2]], np.int32)}
    with pytest.raises(Exception, match="2 query rows and 3 keys"):
        run("variable_length_memory_efficient_attention", inputs, ["out"], {"scale": 1.0, "pre_cache_length": 1})
    with pytest.raises(ProgramError, match="seq_lens must be int32"):
        run("variable_length_memory_efficient_attention", {**inputs, "seq_lens": np.array([[2]])}, ["out"])


def test_gradcs_pir_export_of_mmha_and_varlen_attention_reads_back_to_the_same_values():
    x, cache = _mmha_inputs(np.float32)
    program, feed = program_of("masked_multihead_attention", {
        "x": x, "cache_kv": cache, "sequence_lengths": np.array([[1], [3]], np.int32)}, ["out", "cache_kv_out"])
    round_trips_through_pir(program, feed, ["out", "cache_kv_out"], ("masked_multihead_attention_",))
    query = r.standard_normal((1, 2, 3, 8)).astype(np.float32)
    lengths = np.array([[3]], np.int32)
    program, feed = program_of("variable_length_memory_efficient_attention", {
        "query": query, "key": query, "value": query, "seq_lens": lengths, "kv_seq_lens": lengths}, ["out"],
        {"scale": 0.5, "causal": True})
    round_trips_through_pir(program, feed, ["out"], ("variable_length_memory_efficient_attention",))
