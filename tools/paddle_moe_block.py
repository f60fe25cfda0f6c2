"""Paddle's CPU numbers of a small MoE block as PaddleNLP's MoE layers write it (a softmax gate's top 2, the tokens
permuted to 4 experts, each expert's silu FFN, the outputs combined back weighted by the gate), composed of ops
Paddle 3.3.1 runs on CPU (matmul, softmax, topk, silu: each expert's FFN over every token, weighted by the gate's
probability of that expert, 0 where the token did not pick it), in float64, with its loss mean(y^2) and the
gradients of x and the three weights: tests/data/paddle/moe_block/ (feed.npz, expected.npz with Paddle's routes).
tests/test_moe_block.py builds the same block of moe_permute, batched_gemm and moe_unpermute in gradc, compiles its
backward and compares. Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_moe_block.py
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import paddle

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "moe_block"
SEED = 520
TOKENS, DIM, HIDDEN, EXPERTS, TOP = 8, 6, 10, 4, 2


def composed(feed: dict) -> dict:
    """The block's loss, routes and gradients by Paddle's dygraph backward."""
    x, gate, w1, w2 = (paddle.to_tensor(feed[name], stop_gradient=False) for name in ("x", "w_gate", "w1", "w2"))
    probs = paddle.nn.functional.softmax(paddle.matmul(x, gate))
    top_probs, routes = paddle.topk(probs, TOP)
    y = paddle.zeros([TOKENS, DIM], "float64")
    for expert in range(EXPERTS):
        weight = paddle.sum(top_probs * (routes == expert).astype("float64"), axis=1, keepdim=True)
        y = y + weight * paddle.matmul(paddle.nn.functional.silu(paddle.matmul(x, w1[expert])), w2[expert])
    loss = paddle.mean(y * y)
    loss.backward()
    return {"loss": loss.numpy(), "y": y.numpy(), "routes": routes.numpy(), "top_probs": top_probs.numpy(),
            **{f"{name}@GRAD": t.grad.numpy() for name, t in (("x", x), ("w_gate", gate), ("w1", w1), ("w2", w2))}}


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    rng = np.random.default_rng(SEED)
    feed = {"x": rng.standard_normal((TOKENS, DIM)), "w_gate": rng.standard_normal((DIM, EXPERTS)),
            "w1": 0.5 * rng.standard_normal((EXPERTS, DIM, HIDDEN)),
            "w2": 0.5 * rng.standard_normal((EXPERTS, HIDDEN, DIM))}
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT / "feed.npz", **feed)
    with paddle.base.dygraph.guard(paddle.CPUPlace()):
        expected = composed(feed)
    np.savez_compressed(OUT / "expected.npz", **expected)
    meta = {"paddle_version": paddle.__version__, "seed": SEED, "tokens": TOKENS, "experts": EXPERTS, "top_k": TOP,
            "built_by": "tools/paddle_moe_block.py: Paddle's dygraph on CPU, float64"}
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"routes per expert: {np.bincount(expected['routes'].reshape(-1), minlength=EXPERTS).tolist()}")
