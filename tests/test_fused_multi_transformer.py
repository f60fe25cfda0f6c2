"""fused_multi_transformer (gradc.ops.fused_multi_transformer): the decoder stack against numpy written here from
the CUDA kernel's steps, a decoding step against the causal encoder it continues, and the refusals."""

import math
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.errors import ProgramError
from gradc.executor.kernels.llm_attention import keys_from_layout
from gradc.ir import to_var_type
from gradc.pir import load_pir
from test_extra_math import check_shapes

r = np.random.default_rng(37)
E, HEADS, DIM, FFN = 8, 2, 4, 6   # 1 / sqrt(4) is exact in the float32 the kernel scales by


def run(op: str, inputs: dict, outputs: list[str], attrs: dict | None = None) -> list:
    """The op over fed inputs (a list slot's vars numbered); cache_kv_outs are the cache_kvs vars, as in Paddle."""
    program = gradc.Program()
    block = program.global_block
    feed, slots = {}, {}
    for slot, value in inputs.items():
        slots[slot] = [f"{slot}{i}" for i in range(len(value))] if isinstance(value, list) else [slot]
        for name, array in zip(slots[slot], value if isinstance(value, list) else [value]):
            block.create_var(name, list(array.shape), to_var_type(array.dtype))
            feed[name] = array
    block.create_var("out", None, None)
    block.append_op(op, slots, {"out": ["out"], "cache_kv_outs": slots.get("cache_kvs", [])}, attrs or {})
    check_shapes(program)
    fetch = [name for slot in outputs for name in (["out"] if slot == "out" else slots["cache_kvs"])]
    return gradc.Executor().run(program, feed, fetch, gradc.Scope())


def _weights(layers: int, biases: bool = True, glu: bool = False) -> dict:
    hidden = 2 * FFN if glu else FFN
    inputs = {"ln_scales": [r.uniform(0.5, 1.5, E) for _ in range(layers)],
              "qkv_weights": [r.standard_normal((3, HEADS, DIM, E)) * 0.5 for _ in range(layers)],
              "out_linear_weights": [r.standard_normal((E, E)) * 0.5 for _ in range(layers)],
              "ffn_ln_scales": [r.uniform(0.5, 1.5, E) for _ in range(layers)],
              "ffn1_weights": [r.standard_normal((E, hidden)) * 0.5 for _ in range(layers)],
              "ffn2_weights": [r.standard_normal((FFN, E)) * 0.5 for _ in range(layers)]}
    if biases:
        inputs |= {slot: [r.standard_normal(shape) for _ in range(layers)] for slot, shape in (
            ("ln_biases", E), ("qkv_biases", (3, HEADS, DIM)), ("out_linear_biases", E), ("ffn_ln_biases", E),
            ("ffn1_biases", hidden), ("ffn2_biases", E))}
    return inputs


def _norm(h, scale, bias, rms=False):
    y = h / np.sqrt((h * h).mean(-1, keepdims=True) + 1e-5) if rms else (
        (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-5))
    return y * scale + bias


def _gelu(z):
    return 0.5 * z * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))


def _causal_attention(h, w, b):
    """Each head's softmax(q k^T / sqrt(dim), causal) v over one row's tokens h [n, e]."""
    q, k, v = ((h @ w.reshape(3 * HEADS * DIM, E).T + b.reshape(-1)).reshape(len(h), 3, HEADS, DIM)
               .transpose(1, 2, 0, 3))
    scores = q @ k.swapaxes(-1, -2) / math.sqrt(DIM) + np.triu(np.full((len(h), len(h)), -np.inf), 1)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ v).transpose(1, 0, 2).reshape(len(h), E)


def _attend(h, w):
    return _causal_attention(h, w["qkv_weights"], w["qkv_biases"]) @ w["out_linear_weights"]


def _ffn(h, w, act):
    return act(h @ w["ffn1_weights"] + w["ffn1_biases"]) @ w["ffn2_weights"] + w["ffn2_biases"]


def _reference(x, inputs, pre=True, alpha=1.0, rms=False, act=_gelu):
    """The stack as the kernel's docstring writes it, one row at a time."""
    out = np.zeros_like(x)
    for row in range(len(x)):
        y = x[row]
        for i in range(len(inputs["qkv_weights"])):
            w = {slot: values[i] for slot, values in inputs.items()}
            if pre:
                res = _attend(_norm(y, w["ln_scales"], w["ln_biases"], rms), w) + w["out_linear_biases"] + alpha * y
                last = i == len(inputs["qkv_weights"]) - 1
                ffn = _ffn(_norm(res, w["ffn_ln_scales"], w["ffn_ln_biases"], rms), w, act)
                y = ffn + (1.0 if last else alpha) * res
            else:
                res = _norm(_attend(y, w) + w["out_linear_biases"] + alpha * y, w["ln_scales"], w["ln_biases"], rms)
                y = _norm(_ffn(res, w, act) + alpha * res, w["ffn_ln_scales"], w["ffn_ln_biases"], rms)
        out[row] = y
    return out


@pytest.mark.parametrize("pre, alpha", [(True, 1.0), (True, 0.5), (False, 0.75)])
def test_the_stack_is_the_kernels_layers_with_causal_attention(pre, alpha):
    x, inputs = r.standard_normal((2, 3, E)), _weights(2)
    (out,) = run("fused_multi_transformer", {"x": x, **inputs}, ["out"],
                 {"pre_layer_norm": pre, "residual_alpha": alpha})
    np.testing.assert_allclose(out, _reference(x, inputs, pre, alpha), rtol=1e-10, atol=1e-10)


def test_rmsnorm_and_swiglu_and_an_alpha_rmsnorm_ignores():
    x, inputs = r.standard_normal((1, 3, E)), _weights(1, glu=True)

    def swiglu(z):
        return z[:, :FFN] / (1 + np.exp(-z[:, :FFN])) * z[:, FFN:]

    (out,) = run("fused_multi_transformer", {"x": x, **inputs}, ["out"],
                 {"norm_type": "rmsnorm", "act_method": "swiglu", "residual_alpha": 0.5})
    np.testing.assert_allclose(out, _reference(x, inputs, rms=True, act=swiglu), rtol=1e-10, atol=1e-10)


def test_the_linear_and_norm_biases_count_only_with_qkv_biases_and_ln_biases():
    """The kernel's compute_bias / compute_ln_bias: without qkv_biases it skips out_linear, ffn1 and ffn2 biases."""
    x, inputs = r.standard_normal((1, 3, E)), _weights(1)
    without = {slot: value for slot, value in inputs.items() if slot not in ("qkv_biases", "ln_biases")}
    zeros = {slot: [np.zeros_like(v) for v in values] for slot, values in inputs.items() if "biases" in slot}
    (out,) = run("fused_multi_transformer", {"x": x, **without}, ["out"])
    np.testing.assert_allclose(out, _reference(x, {**inputs, **zeros}), rtol=1e-10, atol=1e-10)


def test_a_decoding_step_continues_the_causal_encoder_through_the_cache():
    """The encoder over 4 tokens equals the encoder over 3 (writing the cache) then a step at time_step 3."""
    x, inputs = r.standard_normal((2, 4, E)), _weights(2)
    empty = [np.zeros((2, 2, HEADS, 6, DIM)) for _ in range(2)]
    full, full_cache0, _ = run("fused_multi_transformer", {"x": x, "cache_kvs": empty, **inputs},
                               ["out", "cache_kv_outs"])
    _, cache0, cache1 = run("fused_multi_transformer", {"x": x[:, :3], "cache_kvs": empty, **inputs},
                            ["out", "cache_kv_outs"])
    mask = np.zeros((2, 1, 1, 6))
    step, stepped0, _ = run("fused_multi_transformer", {"x": x[:, 3:], "cache_kvs": [cache0, cache1],
                                                        "time_step": np.array([3], np.int32), "src_mask": mask,
                                                        **inputs}, ["out", "cache_kv_outs"])
    np.testing.assert_allclose(step[:, 0], full[:, 3], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(stepped0, full_cache0, rtol=1e-12, atol=1e-12)
    plain = np.stack([keys_from_layout(full_cache0[0], 2), full_cache0[1]])   # float64 keys: chunks of 2
    assert np.abs(plain[:, :, :, :4]).min() > 0 and not plain[:, :, :, 4:].any()
    assert not np.array_equal(plain, full_cache0)


def test_seq_lengths_run_each_row_on_its_own_tokens_and_zero_the_padding():
    x, inputs = r.standard_normal((2, 3, E)), _weights(1)
    (out,) = run("fused_multi_transformer", {"x": x, "seq_lengths": np.array([2, 3], np.int32), **inputs}, ["out"])
    np.testing.assert_allclose(out[0, :2], _reference(x[:1, :2], inputs)[0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(out[1], _reference(x[1:], inputs)[0], rtol=1e-10, atol=1e-10)
    assert not out[0, 2].any()


def test_a_decoding_step_adds_the_mask_over_the_cached_positions():
    x, inputs = r.standard_normal((1, 1, E)), _weights(1)
    cache = [r.standard_normal((2, 1, HEADS, 4, DIM))]
    feed = {"x": x, "cache_kvs": cache, "time_step": np.array([2], np.int32), **inputs}
    blocked = np.zeros((1, 1, 1, 4))
    blocked[..., :2] = -1e9   # only the token itself is left
    (masked,) = run("fused_multi_transformer", {**feed, "src_mask": blocked}, ["out"])
    (alone,) = run("fused_multi_transformer", {**feed, "cache_kvs": [np.zeros_like(cache[0])],
                                               "time_step": np.array([1], np.int32),
                                               "src_mask": np.array([-1e9, 0, 0, 0]).reshape(1, 1, 1, 4)}, ["out"])
    np.testing.assert_allclose(masked, alone, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(masked[0], _reference(x, inputs)[0], rtol=1e-10, atol=1e-10)


def test_the_unsupported_paths_are_refused():
    x, inputs = r.standard_normal((1, 2, E)), _weights(1)
    with pytest.raises(ProgramError, match="rotary_emb_dims=1 must be 0, or > 0 with rotary_tensor"):
        run("fused_multi_transformer", {"x": x, **inputs}, ["out"], {"rotary_emb_dims": 1})
    with pytest.raises(ProgramError, match="qkv_weights must be 3-D with gqa_group_size=1"):
        run("fused_multi_transformer", {"x": x, **inputs}, ["out"], {"gqa_group_size": 1})
    with pytest.raises(ProgramError, match="time_step \\(decoding\\) needs cache_kvs"):
        run("fused_multi_transformer", {"x": x[:, :1], "time_step": np.array([1], np.int32), **inputs}, ["out"])


@pytest.mark.parametrize("case", ["multi_transformer_encoder", "multi_transformer_decode_step"])
def test_paddles_translated_program_runs_the_stack(case):
    """Paddle's translation of the legacy op (pd_op.fused_multi_transformer_, tools/paddle_gpu_only_translated.py):
    the encoder and the decoding step (over the fed caches, under the fed mask) against Paddle's own CPU ops composing
    the stack (it has no CPU kernel of the op) and against numpy."""
    directory = Path(__file__).parent / "data" / "paddle" / "pir_gpu_only" / case
    with np.load(directory / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    (out,) = gradc.Executor().run(load_pir(directory / "program.json"), feed, ["out"], gradc.Scope())
    with np.load(directory / "expected.npz") as archive:   # Paddle's CPU ops composing the same stack, in float64
        np.testing.assert_allclose(out, archive["out"], rtol=2e-5, atol=2e-5)
    slots = ("ln_scales", "ln_biases", "qkv_weights", "qkv_biases", "out_linear_weights", "out_linear_biases",
             "ffn_ln_scales", "ffn_ln_biases", "ffn1_weights", "ffn1_biases", "ffn2_weights", "ffn2_biases")
    inputs = {slot: [feed[f"{slot}{i}"].astype(np.float64) for i in range(2)] for slot in slots}
    x = feed["x"].astype(np.float64)
    if "time_step" not in feed:
        np.testing.assert_allclose(out, _reference(x, inputs), rtol=2e-5, atol=2e-5)
        return
    caches = [feed[f"cache_kvs{i}"].astype(np.float64) for i in range(2)]
    expected = _decode_reference(x, inputs, caches, int(feed["time_step"][0]), feed["src_mask"].astype(np.float64))
    np.testing.assert_allclose(out, expected, rtol=2e-5, atol=2e-5)


def _decode_reference(x, inputs, caches, step, mask):
    """One pre-layer-norm decoding step: each layer's token k, v written at ``step`` of its cache (float32 keys in
    chunks of 4 are plain at head_dim 4), then the token attends to positions 0..step, the mask added to 0..step-1."""
    y = x[:, 0]
    for i, cache in enumerate(caches):
        w = {slot: values[i] for slot, values in inputs.items()}
        h = _norm(y, w["ln_scales"], w["ln_biases"])
        qkv = h @ w["qkv_weights"].reshape(3 * E, E).T + w["qkv_biases"].reshape(-1)
        q, k, v = qkv.reshape(-1, 3, HEADS, DIM).transpose(1, 0, 2, 3)
        cache[0][:, :, step], cache[1][:, :, step] = k, v
        scores = np.einsum("bhd,bhtd->bht", q, cache[0][:, :, :step + 1]) / math.sqrt(DIM)
        scores[..., :step] += mask[:, :, 0, :step]   # the kernel reads no mask column for the token itself
        p = np.exp(scores - scores.max(-1, keepdims=True))
        context = np.einsum("bht,bhtd->bhd", p / p.sum(-1, keepdims=True), cache[1][:, :, :step + 1]).reshape(-1, E)
        res = context @ w["out_linear_weights"] + w["out_linear_biases"] + y
        y = _ffn(_norm(res, w["ffn_ln_scales"], w["ffn_ln_biases"]), w, _gelu) + res   # residual_alpha 1
    return y[:, None]
