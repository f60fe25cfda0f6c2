"""PaddleNLP's GPU-only fused ops (gradc.ops.fused_rope, ...) against numpy references written element by element
from the formulas of Paddle's CUDA kernels (fused_rope_utils.h, ...); gradients by float64 central differences are
in tests/gradcheck_cases/transformer_fused.py."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.errors import ProgramError
from gradc.ir import to_var_type
from gradc.pir import load_pir
from test_extra_math import program_of, round_trips_through_pir, run

GPU_ONLY = Path(__file__).parent / "data" / "paddle" / "pir_gpu_only"
r = np.random.default_rng(29)


def _rope_reference(x, sin, cos, positions, neox, base=10000.0):
    """The CUDA kernel's loop: per (b, s, head, i), out = x_i cos_i + rot_i sin_i; x [b, s, h, d]."""
    b, s, h, d = x.shape
    out = np.zeros_like(x, dtype=np.float64)
    for bi in range(b):
        for si in range(s):
            pos = si if positions is None else positions[bi, si]
            for i in range(d):
                if sin is None:
                    angle = np.float32(pos) * (np.float32(1) / np.float32(base) ** np.float32((i // 2) * 2 / d))
                    sine, cosine = np.sin(np.float64(angle)), np.cos(np.float64(angle))
                else:
                    sine, cosine = sin.reshape(-1, d)[pos, i], cos.reshape(-1, d)[pos, i]
                for hi in range(h):
                    if neox:
                        rot = -x[bi, si, hi, i + 1] if i % 2 == 0 else x[bi, si, hi, i - 1]
                    else:
                        rot = -x[bi, si, hi, i + d // 2] if i < d // 2 else x[bi, si, hi, i - d // 2]
                    out[bi, si, hi, i] = x[bi, si, hi, i] * cosine + rot * sine
    return out


def _tables(rows, d, four_d=False):
    angles = r.uniform(-3, 3, (rows, d))
    sin, cos = np.sin(angles), np.cos(angles) * 0.7   # cos not sin's partner: each read is checked
    return (sin[None, :, None], cos[None, :, None]) if four_d else (sin, cos)


@pytest.mark.parametrize("neox", [True, False])
@pytest.mark.parametrize("four_d", [True, False])
def test_rope_with_tables_rotates_q_k_v_as_the_cuda_kernel(neox, four_d):
    q, k, v = r.standard_normal((2, 3, 2, 6)), r.standard_normal((2, 3, 1, 6)), r.standard_normal((2, 3, 3, 6))
    sin, cos = _tables(3, 6, four_d)
    got = run("fused_rotary_position_embedding", {"q": q, "k": k, "v": v, "sin": sin, "cos": cos},
              ["out_q", "out_k", "out_v"], {"use_neox_rotary_style": neox})
    for value, out in zip((q, k, v), got):
        np.testing.assert_allclose(out, _rope_reference(value, sin, cos, None, neox), rtol=1e-12, atol=1e-12)


def test_rope_reads_each_rows_position_from_position_ids():
    q = r.standard_normal((2, 3, 2, 4))
    sin, cos = _tables(7, 4)
    positions = np.array([[6, 0, 3], [2, 2, 5]], np.int64)
    (out,) = run("fused_rotary_position_embedding", {"q": q, "sin": sin, "cos": cos, "position_ids": positions},
                 ["out_q"], {"use_neox_rotary_style": False})
    np.testing.assert_allclose(out, _rope_reference(q, sin, cos, positions, False), rtol=1e-12, atol=1e-12)


def test_rope_without_tables_computes_the_angles_in_float32_and_keeps_time_major():
    q = r.standard_normal((5, 2, 2, 8)).astype(np.float32)   # [s, b, h, d]
    (out,) = run("fused_rotary_position_embedding", {"q": q}, ["out_q"], {"time_major": True, "rotary_emb_base": 100.0})
    expected = _rope_reference(q.swapaxes(0, 1).astype(np.float64), None, None, None, True, 100.0).swapaxes(0, 1)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


def test_rope_grad_is_the_transpose_for_any_tables():
    """<rope(x), w> = <x, rope_grad(w)> for sin and cos that are not partners (the kernel reads sin at the partner
    element in the grad)."""
    for neox in (True, False):
        x, w = r.standard_normal((2, 3, 2, 6)), r.standard_normal((2, 3, 2, 6))
        sin, cos = _tables(3, 6)
        (out,) = run("fused_rotary_position_embedding", {"q": x, "sin": sin, "cos": cos}, ["out_q"],
                     {"use_neox_rotary_style": neox})
        (back,) = run("fused_rotary_position_embedding_grad", {"out_q@GRAD": w, "sin": sin, "cos": cos}, ["q@GRAD"],
                      {"use_neox_rotary_style": neox})
        np.testing.assert_allclose(np.sum(out * w), np.sum(x * back), rtol=1e-12)


def test_rope_refuses_tables_of_the_wrong_length_and_odd_head_dims():
    sin, cos = _tables(4, 4)
    with pytest.raises(ProgramError, match="must have q's seq_len 3 rows"):
        run("fused_rotary_position_embedding", {"q": np.zeros((1, 3, 1, 4)), "sin": sin, "cos": cos}, ["out_q"])
    with pytest.raises(ProgramError, match="head_dim must be even"):
        run("fused_rotary_position_embedding", {"q": np.zeros((1, 3, 1, 5))}, ["out_q"])


def _translated(case: str) -> tuple[dict, dict]:
    """Paddle's translation of the legacy ops (tools/paddle_gpu_only_translated.py), run by gradc."""
    directory = GPU_ONLY / case
    with np.load(directory / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    fetches = json.loads((directory / "meta.json").read_text())["fetches"]
    program = load_pir(directory / "program.json")
    return feed, dict(zip(fetches, gradc.Executor().run(program, feed, fetches, gradc.Scope())))


@pytest.mark.parametrize("case, neox, time_major", [("rope_rotate_half_tables_positions", False, False),
                                                    ("rope_neox_time_major_computed", True, True)])
def test_paddles_translated_rope_program_runs_the_formula_and_its_transpose(case, neox, time_major):
    feed, got = _translated(case)
    sin, cos, positions = feed.get("sin"), feed.get("cos"), feed.get("position_ids")
    for slot in ("q", "k"):
        x, dout = (feed[name].astype(np.float64) for name in (slot, f"dout_{slot}"))
        if time_major:
            x, dout = x.swapaxes(0, 1), dout.swapaxes(0, 1)
        out = _rope_reference(x, sin, cos, positions, neox)
        # the transpose: <rope(e_j), dout> for each unit e_j, i.e. dout rotated back
        back = np.array([np.sum(_rope_reference(unit.reshape(x.shape), sin, cos, positions, neox) * dout)
                         for unit in np.eye(x.size)]).reshape(x.shape)
        if time_major:
            out, back = out.swapaxes(0, 1), back.swapaxes(0, 1)
        np.testing.assert_allclose(got[f"out_{slot}"], out, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(got[f"{slot}@GRAD"], back, rtol=1e-5, atol=1e-5)


def test_rope_training_program_round_trips_through_pir_with_a_missing_v():
    """gradc's backward of rope over q and k (no v: Paddle's null out_v), exported to PIR and read back."""
    sin, cos = _tables(4, 4)
    inputs = {"q": r.standard_normal((2, 3, 2, 4)), "k": r.standard_normal((2, 3, 1, 4)), "sin": sin, "cos": cos,
              "position_ids": np.array([[3, 0, 1], [2, 2, 0]], np.int64)}
    program, feed = program_of("fused_rotary_position_embedding", inputs, ["out_q", "out_k"],
                               {"use_neox_rotary_style": False}, grads=("q", "k"))
    block = program.global_block
    for name in ("total_q", "total_k", "total"):
        block.create_var(name, [], to_var_type(np.dtype("float64")))
    block.append_op("reduce_sum", {"X": ["out_q"]}, {"Out": ["total_q"]}, {"reduce_all": True})
    block.append_op("reduce_sum", {"X": ["out_k"]}, {"Out": ["total_k"]}, {"reduce_all": True})
    block.append_op("sum", {"X": ["total_q", "total_k"]}, {"Out": ["total"]})
    gradc.append_backward(program, "total")
    got = round_trips_through_pir(program, feed, ["total", "q0@GRAD", "k0@GRAD"],
                                  ("fused_rotary_position_embedding", "fused_rotary_position_embedding_grad"))
    ones = np.ones((2, 3, 2, 4))
    back = np.array([np.sum(_rope_reference(unit.reshape(ones.shape), sin, cos, inputs["position_ids"], False))
                     for unit in np.eye(ones.size)]).reshape(ones.shape)
    np.testing.assert_allclose(got[1], back, rtol=1e-12, atol=1e-12)


def _gelu_erf(h):
    return 0.5 * h * (1 + np.vectorize(math.erf)(h / math.sqrt(2)))


BIAS_ACTS = {"gelu": _gelu_erf, "relu": lambda h: np.maximum(h, 0), "geglu": _gelu_erf,
             "swiglu": lambda h: h / (1 + np.exp(-h))}


@pytest.mark.parametrize("method", sorted(BIAS_ACTS))
def test_fused_bias_act_adds_the_bias_then_activates_or_gates(method):
    x, bias = r.standard_normal((2, 3, 8)), r.standard_normal(8)
    (out,) = run("fused_bias_act", {"x": x, "bias": bias}, ["out"], {"act_method": method})
    h = x + bias
    expected = BIAS_ACTS[method](h[..., :4]) * h[..., 4:] if method in ("geglu", "swiglu") else BIAS_ACTS[method](h)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case, method", [("fused_bias_act_swiglu", "swiglu"),
                                          ("fused_bias_act_gelu_shift_smooth", "gelu")])
def test_paddles_translated_fused_bias_act_program_runs_the_formula(case, method):
    feed, got = _translated(case)
    h = feed["x"].astype(np.float64) + feed["bias"]
    half = h.shape[-1] // 2
    out = BIAS_ACTS[method](h[..., :half]) * h[..., half:] if method == "swiglu" else BIAS_ACTS[method](h)
    if "shift" in feed:
        out = (out + feed["shift"]) * feed["smooth"]
    np.testing.assert_allclose(got["out"], out, rtol=1e-5, atol=1e-6)


def test_fused_bias_act_refuses_the_quantized_paths_and_a_shift_without_smooth():
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(ProgramError, match="quant_scale=0.5: the quantized paths"):
        run("fused_bias_act", {"x": x}, ["out"], {"quant_scale": 0.5})
    with pytest.raises(ProgramError, match="with dequant_scales: the quantized paths"):
        run("fused_bias_act", {"x": x, "dequant_scales": np.ones(4, np.float32)}, ["out"])
    with pytest.raises(ProgramError, match="shift needs smooth"):
        run("fused_bias_act", {"x": x, "shift": np.ones(4, np.float32)}, ["out"])


def _norm_reference(x, scale, bias, count, centred, epsilon=1e-5):
    """(y, mean, invvar) over the last ``count`` dims, row by row, from the CUDA kernels' formula."""
    rows = x.reshape(-1, int(np.prod(x.shape[x.ndim - count:])))
    y, means, inverses = np.zeros_like(rows), [], []
    for i, row in enumerate(rows):
        mean = row.mean() if centred else 0.0
        inverse = 1 / math.sqrt(np.mean((row - mean) ** 2) + epsilon)
        y[i] = (row - mean) * inverse * scale.reshape(-1) + (0 if bias is None else bias)
        means.append(mean)
        inverses.append(inverse)
    return y.reshape(x.shape), np.array(means), np.array(inverses)


@pytest.mark.parametrize("op, count, centred", [("fast_ln", 1, True), ("fast_rms_norm", 1, False),
                                                ("fused_rms_norm_ext", 1, False), ("rms_norm", 2, False)])
def test_paddles_translated_norm_programs_run_the_formula_and_its_gradient(op, count, centred):
    """y against the row-by-row formula; the grads against central differences of <y, dy> in float64."""
    feed, got = _translated(op)
    x, scale, dy = (feed[name].astype(np.float64) for name in ("x", "scale", "dy"))
    bias = feed["bias"].astype(np.float64) if centred else None
    y, mean, invvar = _norm_reference(x, scale, bias, count, centred)
    np.testing.assert_allclose(got["y"], y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["invvar"], invvar, rtol=1e-5)
    assert got["invvar"].shape == (y.size // scale.size,) and got["invvar"].dtype == np.float32
    if centred:
        np.testing.assert_allclose(got["mean"], mean, rtol=1e-5, atol=1e-6)
    for name, value in (("x", x), ("scale", scale)):
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            shifted = []
            for step in (1e-6, -1e-6):
                moved = value.copy()
                moved[index] += step
                args = (moved, scale) if name == "x" else (x, moved)
                shifted.append(np.sum(_norm_reference(*args, bias, count, centred)[0] * dy))
            numeric[index] = (shifted[0] - shifted[1]) / 2e-6
        np.testing.assert_allclose(got[f"{name}@GRAD"], numeric, rtol=1e-4, atol=1e-4)
    if centred:
        np.testing.assert_allclose(got["bias@GRAD"], dy.reshape(-1, dy.shape[-1]).sum(0), rtol=1e-5, atol=1e-5)


def test_paddles_translated_bias_dropout_residual_layer_norm_runs_the_formula_at_test():
    """h = residual + (x + bias)(1 - rate) (downgrade_in_infer at test), y its layer norm; LnVariance the biased
    variance; the grads against central differences of <y, dy>."""
    feed, got = _translated("bias_dropout_residual_ln_downgrade")
    x, residual, bias, scale, shift, dy = (feed[name].astype(np.float64) for name in
                                           ("x", "residual", "bias", "ln_scale", "ln_bias", "dy"))

    def forward(x, residual, bias, scale, shift):
        h = residual + (x + bias) * 0.75
        return _norm_reference(h, scale, shift, 1, True)[0], h

    y, h = forward(x, residual, bias, scale, shift)
    np.testing.assert_allclose(got["y"], y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got["h"], h, rtol=1e-6, atol=1e-6)
    rows = h.reshape(-1, 8)
    np.testing.assert_allclose(got["ln_variance"], rows.var(axis=1), rtol=1e-5)
    values = [x, residual, bias, scale, shift]
    for i, name in enumerate(("x", "residual", "bias", "ln_scale", "ln_bias")):
        numeric = np.zeros_like(values[i])
        for index in np.ndindex(values[i].shape):
            ends = []
            for step in (1e-6, -1e-6):
                moved = [v.copy() for v in values]
                moved[i][index] += step
                ends.append(np.sum(forward(*moved)[0] * dy))
            numeric[index] = (ends[0] - ends[1]) / 2e-6
        np.testing.assert_allclose(got[f"{name}@GRAD"], numeric, rtol=1e-4, atol=1e-4)


def test_bias_dropout_residual_layer_norm_refuses_a_drawn_mask():
    inputs = {"X": np.zeros((2, 4)), "Residual": np.zeros((2, 4))}
    with pytest.raises(ProgramError, match="dropout_rate=0.5 in training draws its mask"):
        run("fused_bias_dropout_residual_layer_norm", inputs, ["Y"])
