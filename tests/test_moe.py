"""The mixture-of-experts ops (gradc.ops.moe) on Paddle's translations of their legacy ops
(tools/paddle_moe_translated.py), against numpy references written from the CUDA kernels and against Paddle's
CPU numbers of its own unfused composition (paddle_cpu_composition.npz)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import gradc
from gradc.pir import load_pir

GPU_ONLY = Path(__file__).parent / "data" / "paddle" / "pir_gpu_only"


def _translated(case: str) -> tuple[dict, dict, dict]:
    """The case's feed, gradc's fetches of Paddle's translated program, and Paddle's CPU composition numbers
    (none for a case without them)."""
    directory = GPU_ONLY / case
    with np.load(directory / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    fetches = json.loads((directory / "meta.json").read_text())["fetches"]
    got = dict(zip(fetches, gradc.Executor().run(load_pir(directory / "program.json"), feed, fetches, gradc.Scope())))
    composition = directory / "paddle_cpu_composition.npz"
    if not composition.exists():
        return feed, got, {}
    with np.load(composition) as archive:
        return feed, got, {name: archive[name] for name in archive.files}


def _aux_reference(gate, counts, tokens, dispatched, num_experts, use_group, moe_k, clip_min):
    """(loss, seqlen, ce, scale) as the kernel computes them, in float64."""
    scale = 1.0
    if dispatched is not None:
        seqlen = float(dispatched.sum())
        if tokens is not None and len(dispatched) != len(gate):
            scale = seqlen / max(tokens.sum(), clip_min)
    else:
        seqlen = tokens.sum() if tokens is not None else gate.size / num_experts
    seqlen = max(seqlen, clip_min)
    ce = (counts.sum(0) if counts.ndim == 2 else counts) / seqlen
    loss = np.sum(ce * gate.sum(0) / seqlen) * num_experts / (moe_k if use_group else 1)
    return loss * scale, seqlen, ce, scale


@pytest.mark.parametrize("case, num_experts, use_group, scaled", [("cal_aux_loss_masks", 4, True, True),
                                                                   ("cal_aux_loss_counts", 6, False, False)])
def test_paddles_translated_cal_aux_loss_runs_the_kernels_formula(case, num_experts, use_group, scaled):
    """The loss, seqlen_float and ce against the reference and Paddle's CPU composition; the grad against central
    differences of the loss without its scale (the kernel's forward-local, backward-global loss)."""
    feed, got, paddle = _translated(case)
    gate = feed["gate_prob"].astype(np.float64)
    masks = (feed.get("tokens_mask"), feed.get("dispatch_tokens_mask"))
    args = (feed["dispatch_mask"], *masks, num_experts, use_group, 2, 1.0)
    loss, seqlen, ce, scale = _aux_reference(gate, *args)
    assert (scale != 1.0) == scaled
    for name, value in (("l_aux_loss", loss), ("seqlen_float", seqlen), ("ce", ce)):
        np.testing.assert_allclose(got[name], value, rtol=1e-6)
        np.testing.assert_allclose(got[name], paddle[name], rtol=1e-6)
    assert got["l_aux_loss"].shape == () and got["ce"].shape == (gate.shape[1],)
    numeric = np.zeros_like(gate)
    for index in np.ndindex(gate.shape):
        moved = [gate.copy(), gate.copy()]
        moved[0][index] += 1e-6
        moved[1][index] -= 1e-6
        plus, minus = (_aux_reference(value, *args)[0] / scale for value in moved)
        numeric[index] = (plus - minus) / 2e-6 * feed["dy"]
    np.testing.assert_allclose(got["gate_prob@GRAD"], numeric, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got["gate_prob@GRAD"], paddle["gate_prob_grad"], rtol=1e-6)


def _dispatch_reference(x, probs, bias, k, capacity, pad):
    """(y, weights, scatter [k, s], offsets, ids) choice by choice: each expert's queue filled in the kernel's sorted
    order (by expert; with use_pad by expert, then rank j; then token), a choice past capacity dropped."""
    tokens, experts = probs.shape
    ids = np.array([sorted(range(experts), key=lambda e: (-(probs[t, e] + bias[e]), e))[:k] for t in range(tokens)])
    weights = np.array([[probs[t, e] for e in row] for t, row in enumerate(ids)])
    choices = sorted((ids[t, j], j if pad else 0, t, j) for t in range(tokens) for j in range(k))
    offsets = np.cumsum([sum(1 for c in choices if c[0] == e) for e in range(experts)])
    y = np.zeros((experts * capacity if pad else tokens * k, x.shape[1]))
    scatter = np.zeros((k, tokens), int)
    for row, (expert, _, t, j) in enumerate(choices):
        place = row - (offsets[expert - 1] if expert else 0)
        if place >= capacity:
            weights[t, j] = 0
            continue
        scatter[j, t] = expert * capacity + place if pad else row
        y[scatter[j, t]] = x[t]
    return y, weights, scatter, offsets, ids


@pytest.mark.parametrize("case, pad", [("moe_dispatch_combine_pad", True), ("moe_dispatch_combine", False),
                                       ("moe_dispatch_combine_auto", True)])   # the _auto twins (paddle_moe_translated)
def test_paddles_translated_moe_dispatch_and_combine_run_the_kernels_formula(case, pad):
    """moe_gate_dispatch (top 2 of 4 experts, capacity 2: tokens dropped) against the choice-by-choice reference and,
    with use_pad, Paddle's CPU composition (the same routing; its weights carry corr_bias and its y takes dropped
    choices into the next expert's rows); the dispatch grad and
    moe_combine with its grad against the adjoints written with numpy, and central differences of the combine."""
    feed, got, paddle = _translated(case)
    x, probs, bias = (feed[name].astype(np.float64) for name in ("x", "gate_logits", "corr_bias"))
    y, weights, scatter, offsets, ids = _dispatch_reference(x, probs, bias, 2, 2, pad)
    assert 0 < np.count_nonzero(weights == 0) < weights.size   # some choices dropped, not all
    np.testing.assert_array_equal(got["expert_id"], ids)
    np.testing.assert_array_equal(got["scatter_index"], scatter)
    np.testing.assert_array_equal(got["expert_offset"], offsets)
    np.testing.assert_allclose(got["combine_weights"], weights, rtol=1e-6)
    np.testing.assert_allclose(got["y"], y, rtol=1e-6)
    if paddle:
        for name in ("scatter_index", "expert_offset", "expert_id"):   # its y: dropped choices overwrite rows
            np.testing.assert_array_equal(got[name], paddle[name])
        kept = weights > 0
        np.testing.assert_allclose(got["combine_weights"][kept],
                                   (paddle["combine_weights"] - bias[ids])[kept], rtol=1e-5)
    kept = weights > 0
    dx = sum(feed["dy"][scatter[j]] * kept[:, j, None] for j in range(2))
    np.testing.assert_allclose(got["x@GRAD"], dx, rtol=1e-6)
    dgate = np.zeros_like(probs)
    for t, j in zip(*np.nonzero(kept)):
        dgate[t, ids[t, j]] = feed["dweights"][t, j]
    np.testing.assert_allclose(got["gate_logits@GRAD"], dgate, rtol=1e-6)
    rows, routes, dy = feed["expert_rows"].astype(np.float64), feed["routes"], feed["dcombined"].astype(np.float64)

    def combine(rows, weights):
        return np.einsum("tj,tjd->td", weights, rows[routes])

    np.testing.assert_allclose(got["combined"], combine(rows, weights), rtol=1e-5, atol=1e-6)
    for name, value in (("expert_rows", rows), ("combine_weights", weights)):
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            moved = [value.copy(), value.copy()]
            moved[0][index] += 1e-6
            moved[1][index] -= 1e-6
            args = [(m, weights) if name == "expert_rows" else (rows, m) for m in moved]
            numeric[index] = np.sum((combine(*args[0]) - combine(*args[1])) * dy) / 2e-6
        np.testing.assert_allclose(got[f"{name}@GRAD"], numeric, rtol=1e-5, atol=1e-6)
