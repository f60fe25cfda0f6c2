"""FlashAttention-3's ops (gradc.ops.flash_attention_v3) on PIR programs written by hand and name-checked by Paddle,
and sparse_attention (gradc.ops.sparse_attention) on Paddle's translations of its legacy ops, against Paddle's own
CPU numbers for the same attention composed of ops it runs (tools/paddle_flash_attention_v3_programs.py,
tools/paddle_sparse_attention_programs.py), and the kernels' diagonal, layouts and refusals on programs built
here."""

import numpy as np
import pytest

from gradc.errors import ProgramError
from test_extra_math import run
from test_fused_llm import _translated

CASES = ["flash_attn_v3_causal_gqa", "flash_attn_v3_window_softcap_f64", "flash_attn_v3_varlen_causal_seqused",
         "flashmask_attention_v2_causal_f64"]
SPARSE = ["sparse_attention_masks", "sparse_attention_rows_f64"]


@pytest.mark.parametrize("case", CASES)
def test_paddles_loaded_program_gives_paddles_composition_and_its_gradients(case):
    feed, got = _translated(case)
    with np.load(f"tests/data/paddle/pir_gpu_only/{case}/expected.npz") as archive:
        expected = {name: archive[name] for name in archive.files}
    dtype = feed["q"].dtype
    tolerance = 1e-10 if dtype == np.float64 else 1e-5
    for name, value in expected.items():
        assert got[name].dtype == (np.float32 if name == "softmax_lse" else dtype), name
        np.testing.assert_allclose(got[name], value, rtol=max(tolerance, 1e-6 * (name == "softmax_lse")),
                                   atol=tolerance, err_msg=name)


def _inputs(sq: int, sk: int) -> dict:
    r = np.random.default_rng(7)
    return {"q": r.standard_normal((1, sq, 2, 4)), "k": r.standard_normal((1, sk, 1, 4)),
            "v": r.standard_normal((1, sk, 1, 4))}


def test_causal_keeps_the_bottom_right_diagonal_where_flash_attn_keeps_the_top_left():
    """Two query rows against four keys: FlashAttention-3 gives row 0 keys 0..2 (j <= i + sk - sq), the fork's
    FlashAttention-2 key 0 only."""
    inputs = _inputs(2, 4)
    (v3,) = run("flash_attn_v3", inputs, ["out"], {"softmax_scale": 0.5, "is_causal": True})
    (v2,) = run("flash_attn", inputs, ["out"], {"causal": True})
    scores = inputs["q"][0, 0] @ inputs["k"][0, :3, 0].T * 0.5
    p = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(v3[0, 0], (p / p.sum(-1, keepdims=True)) @ inputs["v"][0, :3, 0], rtol=1e-12)
    np.testing.assert_allclose(v2[0, 0], np.repeat(inputs["v"][0, :1, 0], 2, axis=0), rtol=1e-12)


def test_a_row_with_no_key_is_zero_with_lse_inf_and_lse_is_unpadded():
    """Three rows against two keys, causal: row 0 keeps j <= -1, none; softmax_lse is [b, h, sq] (v2: ceil128)."""
    out, lse = run("flash_attn_v3", _inputs(3, 2), ["out", "softmax_lse"], {"softmax_scale": 0.5, "is_causal": True})
    assert lse.shape == (1, 2, 3) and lse.dtype == np.float32
    assert not out[0, 0].any() and np.isposinf(lse[0, :, 0]).all() and np.isfinite(lse[0, :, 1:]).all()


def test_varlen_softmax_lse_is_heads_by_packed_rows_and_rows_past_the_sequences_are_zero():
    r = np.random.default_rng(3)
    inputs = {"q": r.standard_normal((6, 2, 4)), "k": r.standard_normal((5, 2, 4)), "v": r.standard_normal((5, 2, 4)),
              "cu_seqlens_q": np.array([0, 2, 5], np.int32), "cu_seqlens_k": np.array([0, 3, 5], np.int32)}
    out, lse = run("flash_attn_v3_varlen", inputs, ["out", "softmax_lse"],
                   {"max_seqlen_q": 3, "max_seqlen_k": 3, "softmax_scale": 0.5})
    assert lse.shape == (2, 6)
    scores = np.einsum("qhd,khd->hqk", inputs["q"][2:5], inputs["k"][3:5]) * 0.5   # sequence 1
    np.testing.assert_allclose(lse[:, 2:5], np.log(np.exp(scores).sum(-1)), rtol=1e-6)
    assert not out[5].any() and not lse[:, 5].any()


@pytest.mark.parametrize("op, inputs, attrs, message", [
    ("flash_attn_v3", {**_inputs(2, 2), "q_descale_": np.ones((1, 1))}, {}, "q_descale_: .*float8 descales"),
    ("flash_attn_v3_varlen", {"q": np.zeros((2, 2, 4)), "k": np.zeros((2, 1, 4)), "v": np.zeros((2, 1, 4)),
                              "cu_seqlens_q": np.array([0, 2], np.int32), "cu_seqlens_k": np.array([0, 2], np.int32),
                              "qv": np.zeros((2, 2, 4))}, {"max_seqlen_q": 2, "max_seqlen_k": 2}, "qv: "),
])
def test_refused_inputs_name_themselves(op, inputs, attrs, message):
    with pytest.raises(ProgramError, match=message):
        run(op, inputs, ["out"], attrs)


@pytest.mark.parametrize("case", SPARSE)
def test_sparse_attention_gives_paddles_masked_dense_composition_and_its_gradients(case):
    feed, got = _translated(case)
    with np.load(f"tests/data/paddle/pir_gpu_only/{case}/expected.npz") as archive:
        expected = {name: archive[name] for name in archive.files}
    tolerance = 1e-10 if feed["q"].dtype == np.float64 else 1e-5
    for name, value in expected.items():
        assert got[name].dtype == feed["q"].dtype
        np.testing.assert_allclose(got[name], value, rtol=tolerance, atol=tolerance, err_msg=name)


def test_sparse_attention_masks_by_near_zero_values_and_a_fully_masked_row_is_zero():
    """|mask| below float32's epsilon counts as 0 (the kernel's test); any other value only keeps the entry."""
    r = np.random.default_rng(9)
    q, k, v = (r.standard_normal((1, 1, 2, 4)).astype(np.float32) for _ in range(3))
    layout = {"Offset": np.array([[[0, 2, 4]]], np.int32), "Columns": np.array([[[0, 1, 0, 1]]], np.int32)}
    attn = np.array([[5e-8, 1.0], [0.0, 0.0]], np.float32)   # row 0 keeps key 1 only; row 1 keeps none
    out, softmax = run("sparse_attention", {"Q": q, "K": k, "V": v, **layout, "AttnMask": attn},
                       ["Out", "Softmax"])
    np.testing.assert_allclose(out[0, 0, 0], v[0, 0, 1], rtol=1e-6)
    assert not out[0, 0, 1].any() and softmax[0, 0].tolist() == [0, 1, 0, 0]
