"""More cases of tools/paddle_gpu_inference_ops.py (added to its CASES): the GPU-pass ops of the second round, each
with ``reference``, Paddle's CPU run of the unfused layers the op replaces on the float64 feeds, and ``dtype``, the
feeds' float dtype (the expected numbers are rounded to it)."""

from __future__ import annotations

import paddle
import paddle.nn.functional as F


def _qkv_unpack_mha(dtype: str) -> dict:
    """One decoding step: q [2, 1, 2, 16] over k, v [2, 5, 2, 16]; the kernel never reads src_mask (fed here)."""
    feeds = {"q": ([2, 1, 2, 16], dtype), "k": ([2, 5, 2, 16], dtype), "v": ([2, 5, 2, 16], dtype),
             "mask": ([2, 1, 1, 5], dtype)}
    op = ("qkv_unpack_mha", {"q": ["q"], "k": ["k"], "v": ["v"], "src_mask": ["mask"]},
          {"out": ("out", [2, 1, 2, 16], dtype)}, {})

    def reference(t):
        q, k, v = (t[n].transpose([0, 2, 1, 3]) for n in "qkv")
        weights = F.softmax(paddle.matmul(q, k, transpose_y=True) / 4.0)
        return {"out": paddle.matmul(weights, v).transpose([0, 2, 1, 3])}

    return {"feeds": feeds, "ops": [op], "reference": reference, "dtype": dtype}


def _token_prune(keep_first: bool, keep_order: bool, dtype: str) -> dict:
    """Attn and Mask [2, 2, 6, 6], X [2, 6, 3], NewMask [2, 2, 4, 4]: four of six tokens kept."""
    feeds = {"attn": ([2, 2, 6, 6], dtype), "x": ([2, 6, 3], dtype), "mask": ([2, 2, 6, 6], dtype),
             "new_mask": ([2, 2, 4, 4], dtype)}
    ins = {"Attn": ["attn"], "X": ["x"], "Mask": ["mask"], "NewMask": ["new_mask"]}
    outs = {"SlimmedX": ("slimmed_x", [2, 4, 3], dtype), "CLSInds": ("cls_inds", [2, 4], "int64")}
    attrs = {"keep_first_token": keep_first, "keep_order": keep_order}

    def reference(t):
        scores = paddle.where(t["mask"] >= 0, t["attn"], paddle.zeros_like(t["attn"])).sum([1, 2])
        if keep_first:
            scores[:, 0] = paddle.finfo(paddle.float32 if dtype == "float32" else paddle.float64).max
        order = paddle.argsort(scores, axis=1, descending=True, stable=True)[:, :4]
        if keep_order:
            order = paddle.sort(order, axis=1)
        return {"slimmed_x": paddle.take_along_axis(t["x"], order.unsqueeze(-1), axis=1), "cls_inds": order}

    return {"feeds": feeds, "ops": [("fused_token_prune", ins, outs, attrs)], "reference": reference, "dtype": dtype}


GPU_PASS_CASES = {
    "qkv_unpack_mha": _qkv_unpack_mha("float32"),
    "qkv_unpack_mha_float64": _qkv_unpack_mha("float64"),
    "token_prune_first": _token_prune(True, False, "float32"),
    "token_prune_ordered_float64": _token_prune(False, True, "float64"),
}
