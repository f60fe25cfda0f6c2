"""A small Llama decoder block as a GPU training run of Paddle 3.3.1 saves it: RMSNorm, rotary embedding
(rotate half), grouped-query attention through the flash_attn op (causal), out projection and residual, RMSNorm,
SwiGLU MLP and residual; loss = mean(y * w). Built in legacy static mode (tools/paddle_legacy_shim); the flash_attn
op (which the CPU build cannot infer through) is written straight into the block with its outputs declared, and
Paddle's own append_backward writes the backward, flash_attn_grad included (its shape inference skipped: it looks
for the CUDA kernel). Paddle's numbers come from its CPU run, in dygraph mode, of the same block with
scaled_dot_product_attention's math path in place of flash_attn (k and v spread to the query heads by
repeat_interleave): the loss and the gradients of every parameter and of x. Written as
tests/data/paddle/flash_attention_llama/forward.pb, backward.pb, feed.npz (x, w, the rope tables and the
parameters), expected.npz and meta.json; tests/test_flash_attention.py trains the block by gradc's backward of
forward.pb and by the program's own flash_attn_grad. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_flash_attention_llama.py
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle.base import core

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "flash_attention_llama"
B, S, HIDDEN, HEADS, KV_HEADS, DIM, FFN, EPS = 2, 6, 16, 4, 2, 4, 24, 1e-6
PARAMS = {"norm1": [HIDDEN], "wq": [HIDDEN, HEADS * DIM], "wk": [HIDDEN, KV_HEADS * DIM],
          "wv": [HIDDEN, KV_HEADS * DIM], "wo": [HEADS * DIM, HIDDEN], "norm2": [HIDDEN],
          "w_gate_up": [HIDDEN, 2 * FFN], "w_down": [FFN, HIDDEN]}


def _rms_norm(x, weight):
    return x * paddle.rsqrt(paddle.mean(x * x, axis=-1, keepdim=True) + EPS) * weight


def _rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = paddle.concat([-x[..., half:], x[..., :half]], axis=-1)
    return x * cos + rotated * sin


def block(t: dict, attention) -> paddle.Tensor:
    """The block over tensors t (x, cos, sin, w and the parameters); attention(q, k, v) -> [b, s, heads, dim]."""
    h = _rms_norm(t["x"], t["norm1"])
    q = _rope(paddle.matmul(h, t["wq"]).reshape([B, S, HEADS, DIM]), t["cos"], t["sin"])
    k = _rope(paddle.matmul(h, t["wk"]).reshape([B, S, KV_HEADS, DIM]), t["cos"], t["sin"])
    v = paddle.matmul(h, t["wv"]).reshape([B, S, KV_HEADS, DIM])
    r = t["x"] + paddle.matmul(attention(q, k, v).reshape([B, S, HEADS * DIM]), t["wo"])
    gate_up = paddle.matmul(_rms_norm(r, t["norm2"]), t["w_gate_up"])
    mlp = paddle.matmul(F.silu(gate_up[..., :FFN]) * gate_up[..., FFN:], t["w_down"])   # SwiGLU
    return paddle.mean((r + mlp) * t["w"])


def _flash_attn_op(q, k, v):
    """flash_attn written into the block as a GPU run's program holds it (causal, no dropout)."""
    block_ = q.block
    names = {"out": [B, S, HEADS, DIM], "softmax": [B, HEADS, 128, 128], "softmax_lse": [B, HEADS, 128],
             "seed_offset": [2]}
    outs = {slot: block_.create_var(name=f"flash_attn_0.{slot}", shape=shape,
                                    dtype="int64" if slot == "seed_offset" else "float32")
            for slot, shape in names.items()}
    desc = block_.desc.append_op()   # not block.append_op: its shape inference looks for the CUDA kernel
    desc.set_type("flash_attn")
    for slot, var in {"q": q, "k": k, "v": v}.items():
        desc.set_input(slot, [var.name])
    for slot, var in outs.items():
        desc.set_output(slot, [var.name])
    for name, value in {"dropout": 0.0, "causal": True, "return_softmax": False, "is_test": False,
                        "rng_name": ""}.items():
        desc._set_attr(name, value)
    block_._sync_with_cpp()
    return outs["out"]


def _math_attention(q, k, v):
    k, v = (paddle.repeat_interleave(x, HEADS // KV_HEADS, axis=2) for x in (k, v))
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def _feed() -> dict:
    rng = np.random.default_rng(77)
    angles = np.arange(S)[:, None] / 10000 ** (np.arange(DIM // 2) / (DIM // 2))
    angles = np.concatenate([angles, angles], axis=-1)[None, :, None, :]
    feed = {"x": rng.standard_normal((B, S, HIDDEN)), "w": rng.standard_normal((B, S, HIDDEN)),
            "cos": np.cos(angles), "sin": np.sin(angles)}
    feed |= {name: (1 + 0.1 * rng.standard_normal(shape)) if name.startswith("norm")
             else rng.standard_normal(shape) / np.sqrt(shape[0]) for name, shape in PARAMS.items()}
    return {name: value.astype(np.float32) for name, value in feed.items()}


def _programs():
    """(forward program, backward program, the grads' names) in legacy static mode."""
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        t = {name: paddle.static.data(name, shape, "float32") for name, shape in
             {"x": [B, S, HIDDEN], "w": [B, S, HIDDEN], "cos": [1, S, 1, DIM], "sin": [1, S, 1, DIM]}.items()}
        t |= {name: paddle.static.create_parameter(shape, "float32", name=name) for name, shape in PARAMS.items()}
        t["x"].stop_gradient = False
        loss = block(t, _flash_attn_op)
        forward = main.clone()
        infer_shape = core.OpDesc.infer_shape   # flash_attn_grad's would look for the CUDA kernel: its grads are
        core.OpDesc.infer_shape = lambda op, block: None if op.type() == "flash_attn_grad" else infer_shape(op, block)
        try:   # shaped like q, k and v by append_backward itself
            grads = paddle.static.append_backward(loss, parameter_list=[*PARAMS, "x"])
        finally:
            core.OpDesc.infer_shape = infer_shape
    return forward, main, loss.name, {param.name: grad.name for param, grad in grads}


def _expected(feed: dict) -> dict:
    with paddle.base.dygraph.guard(paddle.CPUPlace()):
        t = {name: paddle.to_tensor(value, stop_gradient=name not in PARAMS and name != "x")
             for name, value in feed.items()}
        loss = block(t, _math_attention)
        wanted = [*PARAMS, "x"]
        grads = paddle.grad([loss], [t[name] for name in wanted])
        return {"loss": loss.numpy()} | {name: g.numpy() for name, g in zip(wanted, grads)}


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    feed = _feed()
    expected = _expected(feed)
    paddle_legacy_shim.install()   # after the dygraph run: paddle.matmul, rsqrt, ... append legacy ops again
    forward, backward, loss, grads = _programs()
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    (OUT / "forward.pb").write_bytes(forward.desc.serialize_to_string())
    (OUT / "backward.pb").write_bytes(backward.desc.serialize_to_string())
    np.savez_compressed(OUT / "feed.npz", **feed)
    np.savez_compressed(OUT / "expected.npz", **expected)
    ops = [op.type for op in backward.global_block().ops]
    meta = {"paddle_version": paddle.__version__, "loss": loss, "grads": grads, "params": list(PARAMS),
            "ops": ops, "built_by": "legacy static mode, flash_attn written into the block, Paddle's append_backward;"
                                    " expected.npz: Paddle's CPU dygraph run with sdpa's math path"}
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(ops)
