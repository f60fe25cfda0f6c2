"""paddle.incubate.nn's GPU-only fused transformer layers (gradc.ops.fused_ffn, ...): PIR programs written by
tools/paddle_gpu_only_handwritten.py (Paddle loaded each and confirmed its op names, operands, results and
attributes), run by gradc against Paddle's own CPU run of the documented unfused composition (expected.npz) and
against numpy written from the CUDA kernel's formula for the intermediates; gradients by float64 central differences
are in tests/gradcheck_cases/transformer_fused.py."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.errors import ProgramError
from gradc.ops.fused_attention import ATTENTION_STATE
from gradc.ops.fused_ffn import FFN_STATE
from gradc.pir import load_pir
from test_extra_math import program_of, round_trips_through_pir, run

GPU_ONLY = Path(__file__).parent / "data" / "paddle" / "pir_gpu_only"
r = np.random.default_rng(31)


def _handwritten(case: str) -> tuple[dict, dict, dict]:
    directory = GPU_ONLY / case
    with np.load(directory / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    with np.load(directory / "expected.npz") as archive:
        expected = {name: archive[name] for name in archive.files}
    fetches = json.loads((directory / "meta.json").read_text())["fetches"]
    got = gradc.Executor().run(load_pir(directory / "program.json"), feed, fetches, gradc.Scope())
    return feed, dict(zip(fetches, got)), expected


FILE_EPSILON = float(np.float32(1e-5))


def _layer_norm(h, scale=None, bias=None, epsilon=FILE_EPSILON):
    """epsilon by default 1e-5 as the files' a_f32 attribute holds it for Paddle's reader (and gradc's): a float32."""
    y = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + epsilon)
    return y * (1 if scale is None else scale) + (0 if bias is None else bias)


def _gelu(h):
    return 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))


FFN_CASES = {"ffn_pre_ln_gelu_eval_downgrade": (True, _gelu, (np.float32(0.8), np.float32(0.7)), True),
             "ffn_post_ln_relu_train_rate0": (False, lambda h: np.maximum(h, 0), (1.0, 1.0), True),
             "ffn_pre_ln_no_residual_no_bias_train_rate0": (True, _gelu, (1.0, 1.0), False)}


@pytest.mark.parametrize("case", sorted(FFN_CASES))
def test_fused_feedforward_gives_paddles_unfused_layer_and_the_kernels_intermediates(case):
    """Paddle's unfused dropout scales by 1 - rate in double, the kernel by 1.0f - rate (0.8f, 0.7f): 1e-7 apart."""
    pre, act, factors, residual = FFN_CASES[case]
    feed, got, expected = _handwritten(case)
    tol = 1e-12 if feed["x"].dtype == np.float64 else 2e-5
    near_paddle = 1e-6 if factors[0] != 1 else max(tol, 1e-10)
    for name, value in expected.items():   # out (and the grads): Paddle's CPU numbers
        assert got[name].dtype == feed["x"].dtype
        np.testing.assert_allclose(got[name], value, rtol=near_paddle, atol=near_paddle, err_msg=name)
    x = feed["x"].astype(np.float64)
    h = _layer_norm(x, feed["ln1_scale"], feed["ln1_bias"]) if pre else x
    linear1 = h @ feed["linear1_weight"]
    a = act(linear1 + feed.get("linear1_bias", 0)) * factors[0]
    s = (a @ feed["linear2_weight"] + feed.get("linear2_bias", 0)) * factors[1] + (x if residual else 0)
    norm = "1" if pre else "2"
    stats = (x if pre else s).reshape(-1, 4)
    for name, value in {"linear1_out": linear1, "dropout1_out": a, "dropout2_out": s, f"ln{norm}_mean":
                        stats.mean(1), f"ln{norm}_variance": stats.var(1), **({"ln1_out": h} if pre else {})}.items():
        np.testing.assert_allclose(got[name], value, rtol=tol, atol=tol, err_msg=name)


def _ffn_inputs(pre=True):
    ln = "Ln1" if pre else "Ln2"
    return {"X": r.standard_normal((2, 3, 4)), "Linear1Weight": r.standard_normal((4, 6)),
            "Linear2Weight": r.standard_normal((6, 4)), "Linear1Bias": r.standard_normal(6),
            f"{ln}Scale": r.uniform(0.5, 1.5, 4), f"{ln}Bias": r.standard_normal(4)}


def test_fused_feedforward_scales_by_each_dropouts_own_factor_at_test():
    """downgrade_in_infer multiplies by 1 - rate at test, upscale_in_train by 1: each dropout reads its own."""
    inputs = _ffn_inputs()
    attrs = {"pre_layer_norm": True, "is_test": True, "dropout1_rate": 0.25, "dropout2_rate": 0.5,
             "dropout2_implementation": "upscale_in_train"}
    (out,) = run("fused_feedforward", inputs, ["Out"], attrs)
    x = inputs["X"]
    normed = _layer_norm(x, inputs["Ln1Scale"], inputs["Ln1Bias"], epsilon=float(np.float32(1e-5)))   # the default
    a = _gelu(normed @ inputs["Linear1Weight"] + inputs["Linear1Bias"])
    np.testing.assert_allclose(out, x + 0.75 * a @ inputs["Linear2Weight"], rtol=1e-12, atol=1e-12)


def test_fused_feedforward_training_program_round_trips_through_pir():
    """gradc's backward of a post layer norm fused_feedforward (rates 0), exported to PIR and read back."""
    inputs = _ffn_inputs(pre=False)
    program, feed = program_of("fused_feedforward", inputs, ["Out", *(slot.rstrip("?") for slot in FFN_STATE)],
                               {"dropout1_rate": 0.0, "dropout2_rate": 0.0}, grads=("X", "Linear1Weight"))
    block = program.global_block
    block.create_var("total", [], gradc.ir.to_var_type(np.dtype("float64")))
    block.append_op("reduce_sum", {"X": ["out"]}, {"Out": ["total"]}, {"reduce_all": True})
    gradc.append_backward(program, "total")
    got = round_trips_through_pir(program, feed, ["total", "x0@GRAD", "linear1weight0@GRAD"],
                                  ("fused_feedforward", "fused_feedforward_grad"))
    assert np.abs(got[1]).min() > 0 and np.abs(got[2]).min() > 0


def test_fused_feedforward_refuses_a_drawn_mask_and_a_post_norm_without_residual():
    with pytest.raises(ProgramError, match="dropout1_rate=0.5 in training draws its mask from Paddle's GPU"):
        run("fused_feedforward", _ffn_inputs(), ["Out"], {"dropout2_rate": 0.0})
    with pytest.raises(ProgramError, match="add_residual=False needs pre_layer_norm"):
        run("fused_feedforward", _ffn_inputs(False), ["Out"], {"is_test": True, "add_residual": False})
    with pytest.raises(ProgramError, match="act_method"):
        run("fused_feedforward", _ffn_inputs(), ["Out"], {"is_test": True, "act_method": "tanh"})


def test_fused_feedforward_drops_everything_at_a_rate_of_one_in_both_modes():
    """The CUDA launchers write zeros for a rate of 1 (upscale_in_train at test too) and, in training, zero masks."""
    inputs = _ffn_inputs()
    for is_test in (True, False):
        attrs = {"pre_layer_norm": True, "is_test": is_test, "dropout1_rate": 1.0, "dropout2_rate": 0.0,
                 "dropout1_implementation": "upscale_in_train"}
        out, mask = run("fused_feedforward", inputs, ["Out", "Dropout1Mask"], attrs)
        np.testing.assert_allclose(out, inputs["X"], rtol=1e-12)   # no Linear2Bias: only the residual is left
        assert (mask == is_test).all()


def _softmax(z):
    e = np.exp(z - z.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _attention_reference(feed: dict, pre: bool, factors: tuple, nh: int = 2) -> dict:
    """The CUDA kernel's steps in numpy (fmha_ref.h): q scaled before q k^T, cache then k, v, mask, softmax, P v."""
    x = feed["x"].astype(np.float64)
    b, s, e = x.shape
    dh = e // nh
    h = _layer_norm(x, feed["ln_scale"], feed["ln_bias"]) if pre else x
    w = feed["qkv_weight"]
    qkv = (h @ (w if w.ndim == 2 else w.reshape(3 * e, e).T) + feed["qkv_bias"].reshape(-1)).reshape(b, s, 3, nh, dh)
    t = qkv.transpose(2, 0, 3, 1, 4)
    q, k, v = t[0] / math.sqrt(dh), t[1], t[2]
    if "cache_kv" in feed:
        k, v = np.concatenate([feed["cache_kv"][0], k], 2), np.concatenate([feed["cache_kv"][1], v], 2)
    qk = q @ k.swapaxes(-1, -2)
    p = _softmax(qk + feed.get("src_mask", 0))
    fmha = (p * factors[0] @ v).transpose(0, 2, 1, 3)
    linear = fmha.reshape(b, s, e) @ feed["out_linear_weight"]
    r = x + (linear + feed["out_linear_bias"]) * factors[1]
    norm = {"ln_out": h} if pre else {"bias_dropout_residual_out": r}
    return {"out": r if pre else _layer_norm(r, feed["ln_scale_2"], feed["ln_bias_2"]), "qk_out": qk,
            "softmax_out": p, "fmha_out": fmha, "out_linear_out": linear, "cache_kv_out": np.stack([k, v]),
            "transpose_out_2": np.stack([q, t[1], t[2]]), **norm}


ATTENTION_CASES = {"attention_pre_ln_eval_cache_mask": (True, (np.float32(0.8), np.float32(0.7))),
                   "attention_post_ln_transposed_train_rate0": (False, (1.0, 1.0)),
                   "attention_pre_ln_no_mask_train_rate0": (True, (1.0, 1.0))}


@pytest.mark.parametrize("case", sorted(ATTENTION_CASES))
def test_fused_attention_gives_paddles_unfused_layer_and_the_kernels_intermediates(case):
    """Out (and the cache, the grads) against Paddle's CPU run of the unfused layer, whose dropouts scale by
    1 - rate in double (the kernel: 1.0f - rate); the intermediates against numpy of the kernel's steps."""
    pre, factors = ATTENTION_CASES[case]
    feed, got, expected = _handwritten(case)
    tol = 1e-12 if feed["x"].dtype == np.float64 else 2e-5
    near_paddle = 1e-6 if factors[0] != 1 else max(tol, 1e-10)
    for name, value in expected.items():
        assert got[name].dtype == feed["x"].dtype
        np.testing.assert_allclose(got[name], value, rtol=near_paddle, atol=near_paddle, err_msg=name)
    for name, value in _attention_reference(feed, pre, factors).items():
        if name in got:
            np.testing.assert_allclose(got[name], value, rtol=tol, atol=tol, err_msg=name)


def test_fused_attention_refuses_a_drawn_mask_and_the_grad_of_a_cached_layer():
    inputs = {"X": np.zeros((1, 2, 4)), "QKVW": np.zeros((3, 2, 2, 4)), "OutLinearW": np.zeros((4, 4))}
    with pytest.raises(ProgramError, match="attn_dropout_rate=0.5 in training draws its mask"):
        run("fused_attention", inputs, ["Y"], {"dropout_rate": 0.0})
    program, _ = program_of("fused_attention", {**inputs, "CacheKV": np.zeros((2, 1, 2, 3, 2))}, ["Y"],
                            {"attn_dropout_rate": 0.0, "dropout_rate": 0.0}, grads=("X",))
    block = program.global_block
    block.create_var("total", [], gradc.ir.to_var_type(np.dtype("float64")))
    block.append_op("reduce_sum", {"X": ["y"]}, {"Out": ["total"]}, {"reduce_all": True})
    with pytest.raises(gradc.errors.GradError, match="Paddle's fused_attention_grad does not read the cache"):
        gradc.append_backward(program, "total")


def test_fused_attention_training_program_round_trips_through_pir():
    """gradc's backward of a pre layer norm fused_attention with a mask (rates 0), exported to PIR and read back."""
    e = 4
    inputs = {"X": r.standard_normal((2, 3, e)), "QKVW": r.standard_normal((3, 2, 2, e)),
              "SrcMask": np.triu(np.full((3, 3), -1e4), 1)[None, None], "OutLinearW": r.standard_normal((e, e)),
              "LnScale": r.uniform(0.5, 1.5, e)}
    outputs = ["Y", *(slot.rstrip("?") for slot in ATTENTION_STATE)]
    attrs = {"pre_layer_norm": True, "attn_dropout_rate": 0.0, "dropout_rate": 0.0}
    program, feed = program_of("fused_attention", inputs, outputs, attrs, grads=("X", "QKVW", "LnScale"))
    block = program.global_block
    block.create_var("total", [], gradc.ir.to_var_type(np.dtype("float64")))
    block.append_op("reduce_sum", {"X": ["y"]}, {"Out": ["total"]}, {"reduce_all": True})
    gradc.append_backward(program, "total")
    got = round_trips_through_pir(program, feed, ["total", "x0@GRAD", "qkvw0@GRAD", "lnscale0@GRAD"],
                                  ("fused_attention", "fused_attention_grad"))
    assert all(np.abs(value).min() > 0 for value in got[1:])


@pytest.mark.parametrize("case, factor", [("dropout_add_eval_downscale", np.float32(0.7)),
                                          ("dropout_add_train_rate1", 0.0)])
def test_paddles_translated_fused_dropout_add_runs_where_no_draw_decides(case, factor):
    """Paddle's translation of the legacy op and its grad (tools/paddle_gpu_only_translated.py): at test
    x (1.0f - p) + y, in training at p = 1 y (the kernel's copy); the grads dout factor and dout."""
    directory = GPU_ONLY / case
    with np.load(directory / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    fetches = json.loads((directory / "meta.json").read_text())["fetches"]
    got = dict(zip(fetches, gradc.Executor().run(load_pir(directory / "program.json"), feed, fetches, gradc.Scope())))
    x, y, dout = (feed[name].astype(np.float64) for name in ("x", "y", "dout"))
    np.testing.assert_allclose(got["out"], x * factor + y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got["x@GRAD"], dout * factor, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(got["y@GRAD"], feed["dout"])
    assert got["seed_offset"].dtype == np.int64


def test_fused_dropout_add_refuses_a_training_rate_that_draws_also_from_ptensor():
    x = np.ones((2, 3))
    with pytest.raises(ProgramError, match="p=0.5 in training keeps x by Paddle's GPU"):
        run("fused_dropout_add", {"x": x, "y": x}, ["out"], {"p": 0.5})
    with pytest.raises(gradc.errors.ExecutionError, match="p=0.25 in training keeps x"):
        run("fused_dropout_add", {"x": x, "y": x, "PTensor": np.array([0.25], np.float32)}, ["out"], {"p": 0.0})
    (out,) = run("fused_dropout_add", {"x": x, "y": x, "PTensor": np.array([1.0], np.float32)}, ["out"], {"p": 0.0})
    np.testing.assert_array_equal(out, x)   # PTensor's rate of 1 drops x whatever p says
