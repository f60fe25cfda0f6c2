"""PIR programs of the attention ops of PaddleNLP's inference exports (gradc.ops.llm_attention), GPU-only in Paddle
3.3.1: its PIR API refuses to build them without a kernel, so each case writes the legacy op straight into a
legacy ProgramDesc (Paddle 3.3.1's CPU build registers their legacy protos) with the output shapes declared here,
and Paddle's translator names the PIR op, operands, results and attributes. Written as
tests/data/paddle/pir_gpu_only/<case>/program.json fetching each case's outputs, with feed.npz (inputs drawn here;
Paddle computed no numbers) and meta.json; tests/test_llm_attention.py runs them against numpy references of the
CUDA kernels' formulas. Where plain ops compose the op, paddle_cpu_composition.npz holds Paddle's CPU numbers of
that composition. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_llm_attention_programs.py
"""

from __future__ import annotations

import json
import sys
import warnings

import numpy as np
import paddle
import paddle_gpu_only_translated as translated

F32, I32 = "float32", "int32"
MMHA_ATTRS = {"seq_len": 1, "compute_dtype": "default", "out_scale": -1.0, "quant_round_type": 1,
              "quant_max_bound": 127.0, "quant_min_bound": -127.0}


def _mmha(heads: int, kv_heads: int, neox: bool, lengths: bool, smooth: bool, quant: bool = False,
          beams: int = 1) -> dict:
    """One decoding step of 2 sequences (head_dim 16, a cache of 6 positions) with rope; src_mask [2, 1, 1, 4]
    (all at step 3), or per head [2, heads, 1, 6] with sequence_lengths; quant: an int32 x with qkv_out_scale in
    float16 (compute_dtype fp16), out written as int8 by out_scale; beams > 1: 2 sources of ``beams`` rows each,
    with a beam_cache_offset [2, beams, 6] (in place, as PIR's op writes it)."""
    batch, dim, seq = 2 * beams, 16, 6
    width, real = (heads + 2 * kv_heads) * dim, "float16" if quant else F32
    feeds = {"x": ([batch, width], I32 if quant else F32), "cache_kv": ([2, batch, kv_heads, seq, dim], real),
             "rotary_tensor": ([2, batch, 1, 1, dim], F32), "bias": ([width], real)}
    feeds["src_mask"] = ([batch, heads, 1, seq], real) if lengths else ([batch, 1, 1, 4], real)
    if quant:
        feeds["qkv_out_scale"] = ([width], F32)
    ins = {slot: [slot] for slot in feeds}
    if lengths:
        feeds["sequence_lengths"] = ([batch, 1], I32)
        ins["sequence_lengths"] = ["sequence_lengths"]
    if smooth:
        feeds |= {"out_shift": ([heads * dim], real), "out_smooth": ([heads * dim], real)}
        ins |= {"out_shift": ["out_shift"], "out_smooth": ["out_smooth"]}
    outs = {"out": ("out", [batch, heads * dim], "int8" if quant else F32), "cache_kv_out": ("cache_kv", None, real)}
    if beams > 1:
        feeds["beam_cache_offset"] = ([2, beams, seq], I32)
        ins["beam_cache_offset"] = ["beam_cache_offset"]
        outs["beam_cache_offset_out"] = ("beam_cache_offset", None, I32)
    attrs = MMHA_ATTRS | {"rotary_emb_dims": 1, "use_neox_rotary_style": neox}
    if quant:
        attrs |= {"compute_dtype": "fp16", "out_scale": 0.03}
    return {"feeds": feeds, "ops": [("masked_multihead_attention", ins, outs, attrs)]}


def _varlen(heads: int, kv_heads: int, mask: bool, causal: bool, pre_cache: int) -> dict:
    """2 sequences of query [2, heads, 5, 8] against key and value [2, kv_heads, 7, 8]; seq_lens and kv_seq_lens
    drawn by _feed."""
    feeds = {"query": ([2, heads, 5, 8], F32), "key": ([2, kv_heads, 7, 8], F32), "value": ([2, kv_heads, 7, 8], F32),
             "seq_lens": ([2, 1], I32), "kv_seq_lens": ([2, 1], I32)}
    if mask:
        feeds["mask"] = ([2, 1, 5, 7], F32)
    ins = {slot: [slot] for slot in feeds}
    attrs = {"scale": 0.3, "causal": causal, "pre_cache_length": pre_cache}
    op = ("variable_length_memory_efficient_attention", ins, {"out": ("out", [2, heads, 5, 8], F32)}, attrs)
    return {"feeds": feeds, "ops": [op]}


def _blha(neox: bool, values: dict, tokens: int, batch: int, heads: int, kv_heads: int, extra: dict,
          cache: str = F32, qkv: str = F32, out_scale: float = -1.0, dynamic: bool = False) -> dict:
    """blha_get_max_len, then block_multihead_attention with its max lengths (head_dim 16, max_seq_len 8, pages of
    4 rows, 6 pages): the packing (lengths, offsets, block tables) is given in ``values``, the rest drawn; the int8
    cache (cache "uint8") with its four [kv_heads] scales; an int32 qkv with qkv_out_scale, in float16; out_scale > 0
    writes an int8 fmha_out; dynamic: dynamic_cachekv_quant, its scales [batch, kv_heads]."""
    dim, width = 16, (heads + 2 * kv_heads) * 16
    compute = "float16" if qkv == I32 else F32
    feeds = {"qkv": ([tokens, width], qkv), "key_cache": ([6, kv_heads, 4, dim], cache),
             "value_cache": ([6, kv_heads, 4, dim], cache), "batch_size": ([batch], I32), **extra}
    if cache == "uint8":
        scales = [batch, kv_heads] if dynamic else [kv_heads]
        feeds |= {f"cache_{kv}_{kind}_scales": (scales, F32) for kv in "kv" for kind in ("quant", "dequant")}
    if qkv == I32:
        feeds["qkv_out_scale"] = ([width], F32)
    feeds |= {name: (list(np.shape(value)), I32) for name, value in values.items()}
    ins = {name: [name] for name in feeds if name != "batch_size"}
    lengths = {"seq_lens_encoder": ["seq_lens_encoder"], "seq_lens_decoder": ["seq_lens_decoder"],
               "batch_size": ["batch_size"]}
    maxima = {slot: (slot, [1], I32) for slot in ("max_enc_len_this_time", "max_dec_len_this_time")}
    out_dtype = "int8" if out_scale > 0 else compute
    outs = {"fmha_out": ("fmha_out", [tokens, heads * dim], out_dtype), "qkv_out": ("qkv", None, qkv),
            "key_cache_out": ("key_cache", None, cache), "value_cache_out": ("value_cache", None, cache)}
    attrs = {"max_seq_len": 8, "block_size": 4, "use_neox_style": neox, "dynamic_cachekv_quant": dynamic,
             "quant_round_type": 1, "quant_max_bound": 127.0, "quant_min_bound": -127.0, "out_scale": out_scale,
             "compute_dtype": "fp16" if qkv == I32 else "default", "rope_theta": 10000.0}
    ins |= {slot: [slot] for slot in maxima}
    return {"feeds": feeds, "values": values, "ops": [("blha_get_max_len", lengths, maxima, {}),
                                                      ("block_multihead_attention", ins, outs, attrs)]}


def _top_p(mode: str, threshold: bool, seeds: bool) -> dict:
    """top_p_sampling of 4 rows of 12 probabilities (row 0 peaked above its top_p: a drawn-free id), k = 3."""
    logits = np.random.default_rng(7).standard_normal((4, 12)) * 1.5
    logits[0, 5] = 9.0
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    values = {"x": probs.astype(np.float32), "ps": np.array([0.9, 0.5, 0.8, 1.0], np.float32)}
    if threshold:
        values["threshold"] = np.array([0.0, 0.05, 0.1, 0.0], np.float32)
    if seeds:
        values["topp_seed"] = np.array([11, 12, 13, 14], np.int64)
    feeds = {name: (list(value.shape), str(value.dtype)) for name, value in values.items()}
    outs = {"out": ("out", [4, 1], F32), "ids": ("ids", [4, 1], "int64"), "topk_scores": ("topk_scores", [4, 3], F32),
            "topk_ids": ("topk_ids", [4, 3], "int64")}
    op = ("top_p_sampling", {name: [name] for name in values}, outs, {"k": 3, "mode": mode, "seed": 5})
    return {"feeds": feeds, "values": values, "ops": [op]}


def _llm_int8() -> dict:
    """weight_quantize (llm.int8, which Paddle runs on CPU) of w [64, 16], then llm_int8_linear of x [2, 3, 64] whose
    columns 7 and 40 hold values past the threshold 6 in one row each."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-2, 2, (2, 3, 64)).astype(np.float32)
    x[0, 1, 7], x[1, 2, 40] = 9.5, -7.25
    values = {"x": x, "w": rng.standard_normal((64, 16)).astype(np.float32),
              "bias": rng.standard_normal(16).astype(np.float32)}
    feeds = {name: (list(value.shape), F32) for name, value in values.items()}
    quantize = ("weight_quantize", {"x": ["w"]}, {"out": ("qw", [16, 64], "int8"), "scale": ("scale", [16], F32)},
                {"algo": "llm.int8", "arch": 80, "group_size": -1})
    linear = ("llm_int8_linear", {"x": ["x"], "weight": ["qw"], "bias": ["bias"], "weight_scale": ["scale"]},
              {"out": ("out", [2, 3, 16], F32)}, {"threshold": 6.0})
    return {"feeds": feeds, "values": values, "ops": [quantize, linear]}


PREFILL = {"seq_lens_encoder": [[5], [3]], "seq_lens_decoder": [[0], [0]], "seq_lens_this_time": [[5], [3]],
           "padding_offsets": [0, 0, 0, 0, 0, 3, 3, 3], "cum_offsets": [0, 3], "cu_seqlens_q": [0, 5, 8],
           "cu_seqlens_k": [0, 5, 8], "block_tables": [[3, 0], [1, 2]]}
DECODE = {"seq_lens_encoder": [[0], [0], [0]], "seq_lens_decoder": [[3], [0], [6]],
          "seq_lens_this_time": [[1], [0], [1]], "padding_offsets": [0, 15], "cum_offsets": [0, 7, 15],
          "cu_seqlens_q": [0, 1, 1, 2], "cu_seqlens_k": [0, 1, 1, 2], "block_tables": [[4, 0], [5, 5], [1, 3]]}
MIXED = {"seq_lens_encoder": [[3], [0], [0]], "seq_lens_decoder": [[0], [5], [0]],
         "seq_lens_this_time": [[3], [1], [0]], "padding_offsets": [0, 0, 0, 5], "cum_offsets": [0, 5, 12],
         "cu_seqlens_q": [0, 3, 4, 4], "cu_seqlens_k": [0, 3, 4, 4], "block_tables": [[2, 4], [0, 3], [1, 1]]}
CASES = {
    "mmha_pairs_bias_mask": _mmha(2, 2, False, False, False),
    "mmha_gqa_neox_lengths_smooth": _mmha(4, 2, True, True, True),
    "mmha_int32_x_int8_out_smooth": _mmha(2, 2, False, True, True, True),
    "mmha_beam_offsets": _mmha(2, 2, False, True, False, beams=3)
    | {"values": {"sequence_lengths": [[4], [4], [4], [3], [5], [2]]}},
    "varlen_attention_gqa_mask": _varlen(4, 2, True, False, 0),
    "varlen_attention_causal_pre_cache": _varlen(2, 2, False, True, 2),
    "blha_prefill_pairs_gqa_bias": _blha(False, PREFILL, 8, 2, 4, 2, {"rope_emb": ([2, 1, 8, 1, 8], F32),
                                                                      "qkv_bias": ([128], F32)}),
    "blha_decode_neox_tgt_mask": _blha(True, DECODE, 2, 3, 2, 2, {"rope_emb": ([2, 1, 8, 1, 16], F32),
                                                                  "tgt_mask": ([3, 1, 1, 8], F32)}),
    "blha_int8_cache_prefill_decode": _blha(False, MIXED, 4, 3, 2, 2, {"rope_emb": ([2, 1, 8, 1, 8], F32)},
                                            "uint8"),
    "blha_int32_qkv_fp16": _blha(False, MIXED, 4, 3, 2, 2, {"rope_emb": ([2, 1, 8, 1, 8], F32),
                                                           "qkv_bias": ([96], "float16")}, "float16", I32),
    "blha_int8_out_smooth": _blha(False, MIXED, 4, 3, 2, 2, {"out_shift": ([32], F32), "out_smooth": ([32], F32)},
                                  out_scale=0.05),
    "blha_prefix_cache_gqa_int8": _blha(False, MIXED, 4, 3, 4, 2, {"rope_emb": ([2, 1, 8, 1, 8], F32),
                                                                  "pre_key_cache": ([3, 2, 2, 16], F32),
                                                                  "pre_value_cache": ([3, 2, 2, 16], F32)}, "uint8"),
    "blha_dynamic_cachekv_quant_prefix": _blha(True, MIXED, 4, 3, 2, 2, {"rope_emb": ([2, 1, 8, 1, 16], F32),
                                                                       "pre_key_cache": ([3, 2, 1, 16], F32),
                                                                       "pre_value_cache": ([3, 2, 1, 16], F32)},
                                               "uint8", dynamic=True),
    "top_p_sampling_truncated_threshold_seeds": _top_p("truncated", True, True),
    "top_p_sampling_non_truncated": _top_p("non-truncated", False, False),
    "llm_int8_linear_outliers": _llm_int8(),
}
# the feed seed each committed fixture was drawn with (a case's place in the list when it was added), so that a
# rerun rewrites the same feed; the top_p and llm_int8 feeds draw nothing that depends on it
SEEDS = {"mmha_pairs_bias_mask": 500, "mmha_gqa_neox_lengths_smooth": 501, "mmha_int32_x_int8_out_smooth": 502,
         "varlen_attention_gqa_mask": 502, "varlen_attention_causal_pre_cache": 503, "blha_prefill_pairs_gqa_bias": 504,
         "blha_decode_neox_tgt_mask": 505, "blha_int8_cache_prefill_decode": 506, "blha_int32_qkv_fp16": 507,
         "blha_int8_out_smooth": 509, "mmha_beam_offsets": 510,
         "blha_prefix_cache_gqa_int8": 511, "blha_dynamic_cachekv_quant_prefix": 512}
LENGTHS = {"sequence_lengths": [[2], [5]], "seq_lens": [[5], [3]], "kv_seq_lens": [[5], [4]]}


def _feed(rng, name, shape, dtype):
    if name in LENGTHS:
        return np.array(LENGTHS[name], np.int32)
    if name in ("qkv", "x") and dtype == I32:   # an int8 GEMM's int32 output, times qkv_out_scale about 1e-3
        return rng.integers(-2000, 2000, shape).astype(np.int32)
    if name == "qkv_out_scale":
        return rng.uniform(0.0005, 0.0015, shape).astype(dtype)
    if name == "beam_cache_offset":   # each position read from any beam of the row's group
        return rng.integers(0, shape[1], shape).astype(np.int32)
    if dtype == I32:
        return np.ones(shape, np.int32)
    if dtype == "uint8":   # int8 cache codes + 128
        return rng.integers(0, 256, shape).astype(np.uint8)
    if name.endswith("quant_scales"):   # dequant about 4 / 127 (qkv drawn standard normal), quant about its inverse
        step = rng.uniform(0.025, 0.035, shape)
        return (step if "dequant" in name else 1 / step).astype(dtype)
    if name in ("src_mask", "tgt_mask"):   # additive: 0 kept, -1e4 masked out, at random
        return np.where(rng.random(shape) < 0.3, -1e4, 0.0).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _paddle_varlen(feed: dict, attrs: dict) -> np.ndarray:
    """Paddle on CPU running the unfused composition softmax(q k^T scale + mask) v on each sequence's valid block
    (tril for causal): the numbers the fused kernel must give, with rows past seq_lens 0."""
    paddle.disable_static()
    query, key, value = (paddle.to_tensor(feed[name]) for name in ("query", "key", "value"))
    group = query.shape[1] // key.shape[1]
    key, value = (paddle.repeat_interleave(t, group, axis=1) for t in (key, value))
    out = np.zeros(feed["query"].shape, np.float32)
    for b, (m, n) in enumerate(zip(feed["seq_lens"][:, 0], feed["kv_seq_lens"][:, 0])):
        n += attrs["pre_cache_length"] if m else 0
        scores = paddle.matmul(query[b, :, :m], key[b, :, :n], transpose_y=True) * attrs["scale"]
        if "mask" in feed:
            scores = scores + paddle.to_tensor(feed["mask"][b, :, :m, :n])
        if attrs["causal"]:
            scores = scores + paddle.triu(paddle.full([m, n], float("-inf")), 1)
        out[b, :, :m] = paddle.matmul(paddle.nn.functional.softmax(scores, -1), value[b, :, :n]).numpy()
    paddle.enable_static()
    return out


def write(case: str, seed: int) -> str:
    spec = CASES[case]
    program, fetches = translated.translated_program(spec)
    directory = translated.saved(program, case)
    rng = np.random.default_rng(seed)
    feed = {name: _feed(rng, name, *spec["feeds"][name]) for name in spec["feeds"]}
    feed |= {name: np.array(value, spec["feeds"][name][1]) for name, value in spec.get("values", {}).items()}
    np.savez_compressed(directory / "feed.npz", **feed)
    op_type, _, _, attrs = spec["ops"][0]
    if op_type == "variable_length_memory_efficient_attention":
        np.savez_compressed(directory / "paddle_cpu_composition.npz", out=_paddle_varlen(feed, attrs))
    names = sorted({op.name() for op in program.global_block().ops} - {"pd_op.fetch"})
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": fetches, "pir_ops": names,
            "built_by": "legacy ops written into a ProgramDesc, translated by Paddle"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{names}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for case in CASES:
        if len(sys.argv) == 1 or case in sys.argv[1:]:
            print(f"{case}: {write(case, SEEDS.get(case, 500))}")
    sys.exit(0)
