"""The mixture-of-experts ops (gradc.ops.moe) on Paddle's translations of their legacy ops
(tools/paddle_gpu_only_translated.py), against numpy references written from the CUDA kernels and against Paddle's
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
    """The case's feed, gradc's fetches of Paddle's translated program, and Paddle's CPU composition numbers."""
    directory = GPU_ONLY / case
    with np.load(directory / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    fetches = json.loads((directory / "meta.json").read_text())["fetches"]
    got = dict(zip(fetches, gradc.Executor().run(load_pir(directory / "program.json"), feed, fetches, gradc.Scope())))
    with np.load(directory / "paddle_cpu_composition.npz") as archive:
        paddle = {name: archive[name] for name in archive.files}
    return feed, got, paddle


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
