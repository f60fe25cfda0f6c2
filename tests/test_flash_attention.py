"""FlashAttention's ops (gradc.ops.flash_attention) on Paddle's translations of their legacy ops against Paddle's own
CPU numbers for the same attention composed of ops it runs (tools/paddle_flash_attention_programs.py), and the
kernels' layouts and refusals on programs built here."""

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.errors import ProgramError
from test_extra_math import run
from test_fused_llm import _translated

CASES = ["flash_attn_causal_gqa", "flash_attn_mask_f64", "flash_attn_unpadded_causal", "flashmask_causal_lts_lte",
         "flashmask_bidirectional_f64", "flash_attn_qkvpacked_causal_gqa", "calc_reduced_attn_scores_causal_gqa",
         "flash_attn_varlen_qkvpacked_padded_causal_gqa"]


@pytest.mark.parametrize("case", CASES)
def test_paddles_translated_program_gives_paddles_composition_and_its_gradients(case):
    feed, got = _translated(case)
    with np.load(f"tests/data/paddle/pir_gpu_only/{case}/expected.npz") as archive:
        expected = {name: archive[name] for name in archive.files}
    dtype = feed["q" if "q" in feed else "qkv"].dtype
    tolerance = 1e-10 if dtype == np.float64 else 1e-5
    for name, value in expected.items():
        assert got[name].dtype == dtype
        np.testing.assert_allclose(got[name], value, rtol=tolerance, atol=tolerance, err_msg=name)
    assert got["seed_offset"].tolist() == feed.get("fixed_seed_offset", np.zeros(2, np.int64)).tolist()


def test_softmax_lse_is_packed_as_the_kernel_writes_it():
    """Row i of head h of batch b at flat (b H + h) sq + i of the [b, H, ceil128(sq)] float32 buffer."""
    feed, got = _translated("flash_attn_causal_gqa")
    q, k = (feed[name].astype(np.float64) for name in ("q", "k"))
    b, sq, heads, d = q.shape
    scores = np.einsum("bqhd,bkhd->bhqk", q, np.repeat(k, heads // k.shape[2], axis=2)) / np.sqrt(d)
    scores = np.where(np.tril(np.ones((sq, sq), bool)), scores, -np.inf)
    lse = np.log(np.exp(scores).sum(-1))
    assert got["softmax_lse"].shape == (b, heads, 128) and got["softmax_lse"].dtype == np.float32
    flat = got["softmax_lse"].reshape(-1)
    np.testing.assert_allclose(flat[:lse.size], lse.reshape(-1), rtol=1e-6)
    assert not flat[lse.size:].any()


def _inputs(sq: int = 3, sk: int = 3, mask: bool = False) -> dict:
    r = np.random.default_rng(5)
    inputs = {"q": r.standard_normal((1, sq, 2, 4)), "k": r.standard_normal((1, sk, 1, 4)),
              "v": r.standard_normal((1, sk, 1, 4))}
    return inputs | ({"attn_mask": r.standard_normal((1, 1, sq, sk))} if mask else {})


def test_causal_keeps_the_top_left_diagonal_when_the_lengths_differ():
    """The fork's kernel masks key j > query row i, not the bottom-right diagonal of FlashAttention >= 2.1."""
    inputs = _inputs(sq=2, sk=4)
    (out,) = run("flash_attn", inputs, ["out"], {"causal": True})
    np.testing.assert_allclose(out[0, 0], np.repeat(inputs["v"][0, :1, 0], 2, axis=0), rtol=1e-12)   # key 0 only
    scores = inputs["q"][0, 1] @ inputs["k"][0, :2, 0].T / 2   # row 1: keys 0 and 1
    p = np.exp(scores - scores.max(-1, keepdims=True))
    np.testing.assert_allclose(out[0, 1], (p / p.sum(-1, keepdims=True)) @ inputs["v"][0, :2, 0], rtol=1e-12)


@pytest.mark.parametrize("attrs, mask, message", [
    ({"dropout": 0.1}, False, r"dropout=0\.1.*Philox"),
    ({"return_softmax": True}, False, "return_softmax"),
    ({"causal": True}, True, "attn_mask and causal"),
])
def test_refused_settings_name_themselves(attrs, mask, message):
    with pytest.raises(ProgramError, match=message):
        run("flash_attn", _inputs(mask=mask), ["out"], attrs)


LLAMA = Path(__file__).parent / "data" / "paddle" / "flash_attention_llama"


def _llama(program_file: str, backward: bool) -> tuple[dict, dict]:
    """The Llama block (tools/paddle_flash_attention_llama.py) run by gradc: (its results, Paddle's numbers)."""
    meta = json.loads((LLAMA / "meta.json").read_text())
    program = gradc.load(LLAMA / program_file)
    if backward:
        gradc.append_backward(program, meta["loss"], parameter_list=[*meta["params"], "x"])
    with np.load(LLAMA / "feed.npz") as feed, np.load(LLAMA / "expected.npz") as expected:
        feed, expected = dict(feed), dict(expected)
    scope = gradc.Scope()
    for name in meta["params"]:
        scope[name] = feed.pop(name)
    fetches = [meta["loss"], *meta["grads"].values()]
    got = dict(zip(["loss", *meta["grads"]], gradc.Executor().run(program, feed, fetches, scope)))
    return got, expected


@pytest.mark.parametrize("program_file, backward", [("forward.pb", True), ("backward.pb", False)])
def test_llama_block_trains_by_gradcs_backward_and_by_its_own_flash_attn_grad(program_file, backward):
    got, expected = _llama(program_file, backward)
    assert set(got) == set(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.parametrize("case", ["memory_efficient_attention_causal_bias",
                                  "memory_efficient_attention_scaled_batch_bias"])
def test_memory_efficient_attention_gives_paddles_composition_its_logsumexp_and_gradients(case):
    """output, logsumexp [b, h, 32] (inf past the rows) and the grads of query, key, value and the broadcast bias."""
    feed, got = _translated(case)
    with np.load(f"tests/data/paddle/pir_gpu_only/{case}/expected.npz") as archive:
        expected = {name: archive[name] for name in archive.files}
    assert set(expected) <= set(got)
    for name, value in expected.items():
        assert got[name].shape == value.shape, name
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-5, err_msg=name)
    assert got["seed_and_offset"].dtype == np.int64 and got["seed_and_offset"].shape == (2,)


def test_memory_efficient_attention_refuses_a_block_diagonal_mask_and_any_dropout():
    inputs = {"query": np.zeros((1, 3, 2, 8)), "key": np.zeros((1, 3, 2, 8)), "value": np.zeros((1, 3, 2, 8))}
    with pytest.raises(ProgramError, match="cu_seqlens_q: gradc runs memory_efficient_attention's dense form"):
        run("memory_efficient_attention", inputs | {"cu_seqlens_q": np.array([0, 3], np.int32),
                                                    "cu_seqlens_k": np.array([0, 3], np.int32)}, ["output"])
    with pytest.raises(ProgramError, match=r"dropout_p=0\.1.*is_test or not"):
        run("memory_efficient_attention", inputs, ["output"], {"dropout_p": 0.1, "is_test": True})


def test_a_second_derivative_over_token_counts_known_only_at_run_time_is_refused_by_name():
    """The rebuilt varlen mask compares row numbers up to the token counts: with q's declared -1 the maker says so."""
    from gradc.gradcheck import check_program
    from gradcheck_cases.flash_attention import unpadded
    from gradcheck_cases.second_order import second_order
    case = second_order("flash_attn_unpadded", *unpadded([2, 1], [2, 2], 2, 1), unknown={"q": [0]})
    with pytest.raises(gradc.GradError, match=r"flash_attn_unpadded_grad: a second derivative needs the token counts"):
        check_program(**case.program())
