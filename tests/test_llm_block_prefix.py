"""block_multihead_attention's prefix cache and dynamic_cachekv_quant (gradc.ops.llm_block_attention) against the
token-by-token reference of test_llm_block_attention, on Paddle's translations of the legacy op
(tools/paddle_llm_attention_programs.py) and on batches built here."""

import numpy as np
import pytest

import gradc
from test_extra_math import program_of, run
from test_llm_attention import _translated
from test_llm_block_attention import BLOCK, DIM, SEQ, _mixed_batch, blha_reference

r = np.random.default_rng(41)


def test_paddles_translated_prefix_cache_program_pages_the_prefix_first_and_every_token_sees_it():
    feed, got = _translated("blha_prefix_cache_gqa_int8")
    out, qkv_out, keys, values = blha_reference(feed, 4, 2, False)
    np.testing.assert_array_equal(got["key_cache"], keys)   # byte for byte
    np.testing.assert_array_equal(got["value_cache"], values)
    np.testing.assert_allclose(got["fmha_out"], out, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(got["qkv"], qkv_out, rtol=1e-5, atol=1e-5)
    # sequence 0's prefix at positions 0-1 (page 2, rows 0-1), its 3 tokens at 2-4
    np.testing.assert_array_equal(got["key_cache"][2, :, :2], keys[2, :, :2])
    assert np.count_nonzero(got["key_cache"][2, :, :2] != feed["key_cache"][2, :, :2]) > 2 * DIM
    without = blha_reference({name: value for name, value in feed.items() if not name.startswith("pre_")}, 4, 2,
                             False)[0]
    assert np.abs(without - out).max() > 0.05


@pytest.mark.parametrize("masked", [False, True])
def test_block_attention_prefix_cache_in_float32_prefill_and_decode(masked):
    feed = _mixed_batch()
    feed |= {"pre_key_cache": r.standard_normal((3, 2, 2, DIM)).astype(np.float32),
             "pre_value_cache": r.standard_normal((3, 2, 2, DIM)).astype(np.float32),
             "rope_emb": r.standard_normal((2, 1, SEQ, 1, DIM)).astype(np.float32)}
    if masked:   # over the prefix and all of the sequence's tokens, no causal triangle
        feed |= {"mask": r.uniform(-2, 0, (3, 2, SEQ, SEQ)).astype(np.float32),
                 "tgt_mask": r.uniform(-2, 0, (3, 1, 1, SEQ)).astype(np.float32)}
    attrs = {"max_seq_len": SEQ, "block_size": BLOCK, "use_neox_style": True}
    outs = run("block_multihead_attention", feed, ["fmha_out", "qkv_out", "key_cache_out", "value_cache_out"], attrs)
    for got, want in zip(outs, blha_reference(feed, 2, 2, True)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(outs[2][2, :, :2], feed["pre_key_cache"][0])   # prefix at sequence 0's rows 0-1
    # sequence 1 decodes at 5 + 2 = position 7: page 3, row 3 holds its value
    np.testing.assert_array_equal(outs[3][3, 0, 3], feed["qkv"][3, 4 * DIM:5 * DIM])
    with pytest.raises(Exception, match="sequence 0 needs a mask of 3 x 5"):
        run("block_multihead_attention", {**feed, "mask": np.zeros((3, 1, 3, 4), np.float32)}, ["fmha_out"], attrs)


def test_paddles_translated_dynamic_quant_program_measures_each_prefilling_sequences_scales():
    feed, got = _translated("blha_dynamic_cachekv_quant_prefix")
    out, qkv_out, keys, values = blha_reference(feed, 2, 2, True, dynamic=True)
    np.testing.assert_array_equal(got["key_cache"], keys)   # byte for byte
    np.testing.assert_array_equal(got["value_cache"], values)
    np.testing.assert_allclose(got["fmha_out"], out, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(got["qkv"], qkv_out, rtol=1e-5, atol=1e-5)
    fixed = blha_reference(feed, 2, 2, True)[2]   # the same bytes from the fed scales differ
    assert np.count_nonzero(fixed != keys) > DIM


def test_dynamic_quant_scales_by_the_batchs_largest_value_and_ignores_the_rounding_attributes():
    feed = _mixed_batch()
    # sequence 0's token 1, kv head 0: the batch's largest key 127 makes the scale 1, so 2.5 and -2.5 are ties
    feed["qkv"][1, 2 * DIM + 3:2 * DIM + 6] = [127.0, 2.5, -2.5]
    feed |= {"key_cache": np.full((5, 2, BLOCK, DIM), 128, np.uint8),
             "value_cache": np.full((5, 2, BLOCK, DIM), 128, np.uint8),
             **{f"cache_{kv}_{kind}_scales": np.full((3, 2), 0.5, np.float32) for kv in "kv"
                for kind in ("quant", "dequant")}}
    attrs = {"max_seq_len": SEQ, "block_size": BLOCK, "dynamic_cachekv_quant": True, "quant_round_type": 0,
             "quant_max_bound": 100.0, "quant_min_bound": -100.0}
    outs = run("block_multihead_attention", feed, ["fmha_out", "qkv_out", "key_cache_out", "value_cache_out"], attrs)
    for got, want in zip(outs, blha_reference(feed, 2, 2, False, dynamic=True)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    codes = outs[2][2, 0, 1].astype(int) - 128   # token 1 at page 2, row 1
    assert codes[3:6].tolist() == [127, 3, -3]   # past the attribute bounds, half away from zero
    # sequence 1 decodes with its own fed row (0.5): its step-5 key written as rint(0.5 x)
    np.testing.assert_array_equal(outs[2][3, 0, 1].astype(int) - 128,
                                  np.rint(np.float32(0.5) * feed["qkv"][3, 2 * DIM:3 * DIM]))


def test_dynamic_quant_writes_its_measured_scales_back_for_a_decode_in_a_later_run():
    """Paddle's kernel writes the measured scales into its scale inputs: a prefill run (sequences 0 and 1 prefill 3
    and 2 tokens, 2 idle) leaves them in the scope, and a decode run that is fed none reads them there."""
    scales = {f"cache_{kv}_{kind}_scales": np.full((3, 2), 0.5, np.float32) for kv in "kv"
              for kind in ("quant", "dequant")}
    prefill = {"qkv": r.standard_normal((5, 6 * DIM)).astype(np.float32),
               "key_cache": np.full((5, 2, BLOCK, DIM), 128, np.uint8),
               "value_cache": np.full((5, 2, BLOCK, DIM), 128, np.uint8),
               "seq_lens_encoder": np.array([[3], [2], [0]], np.int32),
               "seq_lens_decoder": np.array([[0], [0], [0]], np.int32),
               "seq_lens_this_time": np.array([[3], [2], [0]], np.int32),
               "padding_offsets": np.array([0, 0, 0, 5, 5], np.int32), "cum_offsets": np.array([0, 5, 11], np.int32),
               "cu_seqlens_q": np.array([0, 3, 5, 5], np.int32), "cu_seqlens_k": np.array([0, 3, 5, 5], np.int32),
               "block_tables": np.array([[2, 4], [0, 3], [1, 1]], np.int32), **scales}
    attrs = {"max_seq_len": SEQ, "block_size": BLOCK, "dynamic_cachekv_quant": True}
    outputs = ["fmha_out", "qkv_out", "key_cache_out", "value_cache_out"]
    scope = gradc.Scope()
    for name, value in scales.items():   # the scales live in the caller's scope, as Paddle's persistable ones
        scope[f"{name}0"] = value.copy()

    def run_in_scope(feed):
        program, fed = program_of("block_multihead_attention", feed, outputs, attrs)
        fed = {name: value for name, value in fed.items() if name.removesuffix("0") not in scales}
        return gradc.Executor().run(program, fed, [slot.lower() for slot in outputs], scope)

    first = run_in_scope(prefill)
    keys, values = (prefill["qkv"][:, start * DIM:(start + 2) * DIM].reshape(5, 2, DIM) for start in (2, 4))
    for kv, x in (("k", keys), ("v", values)):   # the batch's max per kv head, for each prefilling sequence
        quant = np.float32(127) / np.abs(x).max(axis=(0, 2))
        np.testing.assert_array_equal(scope[f"cache_{kv}_quant_scales0"], [quant, quant, [0.5, 0.5]])
        np.testing.assert_array_equal(scope[f"cache_{kv}_dequant_scales0"],
                                      [np.float32(1) / quant, np.float32(1) / quant, [0.5, 0.5]])
    decode = {**prefill, "qkv": r.standard_normal((2, 6 * DIM)).astype(np.float32),
              "key_cache": first[2], "value_cache": first[3],
              "seq_lens_encoder": np.array([[0], [0], [0]], np.int32),
              "seq_lens_decoder": np.array([[3], [2], [0]], np.int32),
              "seq_lens_this_time": np.array([[1], [1], [0]], np.int32),
              "padding_offsets": np.array([0, 7], np.int32), "cum_offsets": np.array([0, 7, 14], np.int32),
              "cu_seqlens_q": np.array([0, 1, 2, 2], np.int32), "cu_seqlens_k": np.array([0, 1, 2, 2], np.int32)}
    second = run_in_scope(decode)
    measured = {name: scope[f"{name}0"] for name in scales}
    for got, want in zip(second, blha_reference({**decode, **measured}, 2, 2, False, dynamic=True)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    fed_only = blha_reference(decode, 2, 2, False, dynamic=True)[0]   # the decode with the scales first fed
    assert np.abs(fed_only - second[0]).max() > 0.05
