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


def _scale_bias_relu_conv_bn(prologue: bool, stride: int, dtype: str) -> dict:
    """x [2, 5, 5, 3] NHWC through relu(x scale + bias) (with the prologue) and a 3x3 conv of 4 filters, padding 1,
    then the batch statistics of its output folded into eq_scale and eq_bias."""
    out_size = 5 if stride == 1 else 3
    vec4, vec3 = ([4], dtype), ([3], dtype)
    feeds = {"x": ([2, 5, 5, 3], dtype), "w": ([4, 3, 3, 3], dtype), "bn_scale": vec4, "bn_bias": vec4,
             "running_mean": vec4, "running_var": vec4}
    ins = {"x": ["x"], "w": ["w"], "bn_scale": ["bn_scale"], "bn_bias": ["bn_bias"],
           "input_running_mean": ["running_mean"], "input_running_var": ["running_var"]}
    if prologue:
        feeds |= {"scale": vec3, "bias": vec3}
        ins |= {"scale": ["scale"], "bias": ["bias"]}
    outs = {"out": ("out", [2, out_size, out_size, 4], dtype)} | {
        slot: (slot, [4], dtype) for slot in ("out_running_mean", "out_running_var", "saved_mean", "saved_var",
                                              "eq_scale", "eq_bias")}
    attrs = {"paddings": [1, 1], "dilations": [1, 1], "strides": [stride, stride], "padding_algorithm": "EXPLICIT",
             "groups": 1, "data_format": "NHWC", "momentum": 0.9, "epsilon": 1e-5, "fuse_prologue": prologue,
             "exhaustive_search": False, "accumulation_count": ("_set_int64_attr", 0)}

    def reference(t):
        h = F.relu(t["x"] * t["scale"] + t["bias"]) if prologue else t["x"]
        out = F.conv2d(h, t["w"], stride=stride, padding=1, data_format="NHWC")
        _, mean_out, var_out, saved_mean, saved_inv_std, _ = paddle._C_ops.batch_norm(
            out, t["running_mean"], t["running_var"], t["bn_scale"], t["bn_bias"], False, 0.9, 1e-5, "NHWC",
            False, False)
        eq_scale = t["bn_scale"] * saved_inv_std
        return {"out": out, "out_running_mean": mean_out, "out_running_var": var_out, "saved_mean": saved_mean,
                "saved_var": saved_inv_std, "eq_scale": eq_scale, "eq_bias": t["bn_bias"] - saved_mean * eq_scale}

    return {"feeds": feeds, "ops": [("fused_scale_bias_relu_conv_bn", ins, outs, attrs)], "reference": reference,
            "dtype": dtype}


def _scale_bias_add_relu(dual: bool, dtype: str) -> dict:
    """relu(x1 scale1 + bias1 + x2), x2 scaled and biased too with fuse_dual; NHWC [2, 3, 3, 4]."""
    feeds = {"x1": ([2, 3, 3, 4], dtype), "scale1": ([4], dtype), "bias1": ([4], dtype), "x2": ([2, 3, 3, 4], dtype)}
    ins = {name: [name] for name in feeds}
    if dual:
        feeds |= {"scale2": ([4], dtype), "bias2": ([4], dtype)}
        ins |= {"scale2": ["scale2"], "bias2": ["bias2"]}
    op = ("fused_scale_bias_add_relu", ins, {"out": ("out", [2, 3, 3, 4], dtype)},
          {"fuse_dual": dual, "exhaustive_search": False})

    def reference(t):
        other = t["x2"] * t["scale2"] + t["bias2"] if dual else t["x2"]
        return {"out": F.relu(t["x1"] * t["scale1"] + t["bias1"] + other)}

    return {"feeds": feeds, "ops": [op], "reference": reference, "dtype": dtype}


GPU_PASS_CASES = {
    "qkv_unpack_mha": _qkv_unpack_mha("float32"),
    "qkv_unpack_mha_float64": _qkv_unpack_mha("float64"),
    "token_prune_first": _token_prune(True, False, "float32"),
    "token_prune_ordered_float64": _token_prune(False, True, "float64"),
    "scale_bias_relu_conv_bn": _scale_bias_relu_conv_bn(True, 1, "float32"),
    "conv_bn_stride2_float64": _scale_bias_relu_conv_bn(False, 2, "float64"),
    "scale_bias_add_relu": _scale_bias_add_relu(False, "float32"),
    "scale_bias_add_relu_dual_float64": _scale_bias_add_relu(True, "float64"),
}
