"""Paddle's paddle.sparse fixtures (tools/paddle_sparse_tensor_fixtures.py): each case's legacy forward program, its
feed, initial weights and what Paddle computed, for tests/test_sparse.py and the float64 gradcheck cases."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import gradc
from gradc.ir import VarType

DATA = Path(__file__).parent / "data" / "paddle" / "sparse_tensor"
CASES = sorted(p.name for p in DATA.iterdir() if (p / "forward.pb").exists())


def load(case: str, float64: bool = False) -> dict:
    """program, feed, params, expected, loss (name), wrt (val and the trainable parameters, Paddle's grads' order)."""
    folder = DATA / case
    program = gradc.load(str(folder / "forward.pb"))
    feed, params = dict(np.load(folder / "feed.npz")), dict(np.load(folder / "params.npz"))
    expected = dict(np.load(folder / "expected.npz"))
    if float64:
        for var in program.global_block.vars.values():
            var.dtype = VarType.FP64 if var.dtype == VarType.FP32 else var.dtype
        feed = {k: v.astype(np.float64) if v.dtype == np.float32 else v for k, v in feed.items()}
        params = {k: v.astype(np.float64) for k, v in params.items()}
    wrt = [name.removeprefix("grad:") for name in expected if name.startswith("grad:")]
    return {"program": program, "feed": feed, "params": params, "expected": expected,
            "loss": program.global_block.ops[-1].outputs["Out"][0], "wrt": wrt}
