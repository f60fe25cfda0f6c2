"""More cases of tools/paddle_gpu_inference_ops.py (added to its CASES): the GPU-pass ops of the second round, each
with ``reference``, Paddle's CPU run of the unfused layers the op replaces on the float64 feeds, and ``dtype``, the
feeds' float dtype (the expected numbers are rounded to it)."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F

F32 = "float32"


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


def _bn_branch(t: dict, data: str, filters: str, suffix: str, stride: int, padding: int):
    """conv2d (NHWC, the KRSC filter as OIHW) + batch_norm in training: (normed, {name: its statistics})."""
    w = t[filters]
    w = w.reshape([w.shape[0], 1, 1, -1]) if w.shape[2:] == [1, 1] and w.shape[1] != 1 else w
    conv = F.conv2d(t[data], w.transpose([0, 3, 1, 2]), stride=stride, padding=padding, data_format="NHWC")
    shape = t[f"scale_{suffix}"].shape
    normed, mean_out, var_out, saved_mean, saved_inv, _ = paddle._C_ops.batch_norm(
        conv, *(t[f"{name}_{suffix}"].reshape([-1]) for name in ("mean", "var", "scale", "bias")), False, 0.9, 1e-5,
        "NHWC", False, False)
    stats = {f"conv_{suffix}": conv, f"saved_mean_{suffix}": saved_mean, f"saved_invstd_{suffix}": saved_inv,
             f"running_mean_{suffix}": mean_out, f"running_var_{suffix}": var_out}
    return normed, {name: value.reshape(shape) if name.startswith(("saved", "running")) else value
                    for name, value in stats.items()}


def _resnet_unit(shortcut: bool, dtype: str) -> dict:
    """resnet_unit and its grad at a fed dY: with the shortcut, 1x1 filters of stride 2 (X [2, 5, 5, 8], KRSC
    FilterX [4, 1, 1, 8]; Z [2, 5, 5, 6], conv2d-shaped FilterZ [4, 6, 1, 1]) and [4] vectors; without, a 3x3
    filter of padding 1 over X [2, 4, 4, 3] and [1, 1, 1, 4] vectors. The running statistics go to vars of their
    own (Paddle's layer shares them with Mean* / Var*), so that both are fetched."""
    stride, padding, size = (2, 0, 3) if shortcut else (1, 1, 4)
    branches = {"x": ([2, 5, 5, 8], [4, 1, 1, 8])} if shortcut else {"x": ([2, 4, 4, 3], [4, 3, 3, 3])}
    if shortcut:
        branches["z"] = ([2, 5, 5, 6], [4, 6, 1, 1])
    vector = [4] if shortcut else [1, 1, 1, 4]
    feeds, ins, outs = {"dy": ([2, size, size, 4], dtype)}, {}, {"Y": ("y", [2, size, size, 4], dtype)}
    grad_ins, grad_outs = {"Y": ["y"], "Y@GRAD": ["dy"]}, {}
    for suffix, (data_shape, filter_shape) in branches.items():
        big = suffix.upper()
        feeds |= {suffix: (data_shape, dtype), f"filter_{suffix}": (filter_shape, dtype)}
        feeds |= {f"{name}_{suffix}": (vector, dtype) for name in ("scale", "bias", "mean", "var")}
        ins |= {big: [suffix], f"Filter{big}": [f"filter_{suffix}"], f"Scale{big}": [f"scale_{suffix}"],
                f"Bias{big}": [f"bias_{suffix}"], f"Mean{big}": [f"mean_{suffix}"], f"Var{big}": [f"var_{suffix}"]}
        outs |= {f"Conv{big}": (f"conv_{suffix}", [2, size, size, 4], dtype)} | {
            f"{slot}{big}": (f"{name}_{suffix}", vector, dtype) for slot, name in (
                ("SavedMean", "saved_mean"), ("SavedInvstd", "saved_invstd"), ("RunningMean", "running_mean"),
                ("RunningVar", "running_var"))}
        grad_ins |= {slot: ins[slot] for slot in (big, f"Filter{big}", f"Scale{big}", f"Bias{big}")}
        grad_ins |= {f"{slot}{big}": [f"{name}_{suffix}"] for slot, name in (
            ("Conv", "conv"), ("SavedMean", "saved_mean"), ("SavedInvstd", "saved_invstd"))}
        grad_outs |= {f"{slot}@GRAD": (f"{name}@GRAD", shape, dtype) for slot, name, shape in (
            (big, suffix, data_shape), (f"Filter{big}", f"filter_{suffix}", filter_shape),
            (f"Scale{big}", f"scale_{suffix}", vector), (f"Bias{big}", f"bias_{suffix}", vector))}
    if not shortcut:   # Paddle's translator wants the shortcut's grads (not optional in PIR): declared, not fetched
        grad_outs |= {f"{slot}@GRAD": [(f"{slot.lower()}@GRAD", [1], dtype)] for slot in ("Z", "FilterZ", "ScaleZ",
                                                                                         "BiasZ")}
    outs["BitMask"] = ("bit_mask", [32, 2, 1], "int32")   # [ceil32(N Ho Wo), ceil64(K) / 32, 1]
    grad_ins["BitMask"] = ["bit_mask"]
    attrs = {"stride": stride, "stride_z": stride, "padding": padding, "dilation": 1, "group": 1, "momentum": 0.9,
             "epsilon": 1e-5, "data_format": "NHWC", "fuse_add": False, "has_shortcut": shortcut,
             "use_global_stats": False, "is_test": False, "use_addto": False, "act_type": "relu"}

    def reference(t):
        params = [name for name in t if name != "dy" and not name.startswith(("mean", "var"))]
        for name in params:
            t[name].stop_gradient = False
        total, expected = _bn_branch(t, "x", "filter_x", "x", stride, padding)
        if shortcut:
            normed_z, stats_z = _bn_branch(t, "z", "filter_z", "z", stride, padding)
            total, expected = total + normed_z, expected | stats_z
        y = F.relu(total)
        grads = paddle.grad([y], [t[name] for name in params], [t["dy"]])
        return expected | {"y": y} | {f"{name}@GRAD": grad for name, grad in zip(params, grads)}

    ops = [("resnet_unit", ins, outs, attrs), ("resnet_unit_grad", grad_ins, grad_outs, attrs)]
    unfetched = () if shortcut else tuple(f"{slot.lower()}@GRAD" for slot in ("Z", "FilterZ", "ScaleZ", "BiasZ"))
    return {"feeds": feeds, "ops": ops, "reference": reference, "dtype": dtype, "unfetched": unfetched}


GPU_PASS_CASES |= {
    "resnet_unit_shortcut": _resnet_unit(True, "float32"),
    "resnet_unit_plain_float64": _resnet_unit(False, "float64"),
}


def _batch_stats(x, gamma, beta, dtype: str) -> tuple:
    """An NHWC x's batch mean and inverse std (epsilon 1e-5), and the eq scale and bias they give gamma and beta."""
    x = x.astype(np.float64)
    mean, inv_std = x.mean((0, 1, 2)), 1 / np.sqrt(x.var((0, 1, 2)) + 1e-5)
    return tuple(v.astype(dtype) for v in (mean, inv_std, gamma * inv_std, beta - mean * gamma * inv_std))


def _dconv_drelu_dbn(mode: str, fuse_add: bool, dtype: str) -> dict:
    """The backward of h = BN1(bn1_input) (+ BN2(bn2_input) in "dual", + residual in "shortcut") -> relu -> 3x3
    conv2d of 4 filters, padding 1, over NHWC [2, 4, 4, 3], at a fed grad_output (and grad_output_add, the relu
    output's other grad, with fuse_add); the statistics fed are bn*_input's batch statistics."""
    act, vec = [2, 4, 4, 3], ([3], dtype)
    feeds = {"grad_output": ([2, 4, 4, 4], dtype), "weight": ([4, 3, 3, 3], dtype), "bn1_input": (act, dtype)}
    feeds |= {f"bn1_{name}": vec for name in ("mean", "inv_std", "gamma", "beta")}
    outs = {"grad_weight": ("grad_weight", [4, 3, 3, 3], dtype), "grad_bn1_input": ("grad_bn1_input", act, dtype),
            "grad_bn1_gamma": ("grad_bn1_gamma", [3], dtype), "grad_bn1_beta": ("grad_bn1_beta", [3], dtype)}
    if mode == "dual":
        feeds |= {"bn2_input": (act, dtype)} | {f"bn2_{name}": vec for name in ("mean", "inv_std", "gamma", "beta")}
        outs |= {"grad_bn2_gamma": ("grad_bn2_gamma", [3], dtype), "grad_bn2_beta": ("grad_bn2_beta", [3], dtype)}
    if mode == "shortcut":
        feeds["residual_input"] = (act, dtype)
    if mode != "plain":
        feeds["conv_input"] = (act, dtype)
        outs["grad_bn2_input"] = ("grad_bn2_input", act, dtype)
    else:
        feeds |= {"bn1_eqscale": vec, "bn1_eqbias": vec}
    if fuse_add:
        feeds["grad_output_add"] = (act, dtype)
    attrs = {"paddings": [1, 1], "dilations": [1, 1], "strides": [1, 1], "padding_algorithm": "EXPLICIT", "groups": 1,
             "data_format": "NHWC", "fuse_shortcut": mode == "shortcut", "fuse_dual": mode == "dual",
             "fuse_add": fuse_add, "exhaustive_search": False}

    def derive(feed):
        derived = {}
        for bn in ("bn1", "bn2") if mode == "dual" else ("bn1",):
            mean, inv_std, eq_scale, eq_bias = _batch_stats(feed[f"{bn}_input"], feed[f"{bn}_gamma"],
                                                            feed[f"{bn}_beta"], dtype)
            derived |= {f"{bn}_mean": mean, f"{bn}_inv_std": inv_std}
            if mode == "plain":
                derived |= {"bn1_eqscale": eq_scale, "bn1_eqbias": eq_bias}
        if mode != "plain":
            h = sum(_normalised(feed, bn) for bn in (("bn1", "bn2") if mode == "dual" else ("bn1",)))
            derived["conv_input"] = np.maximum(h + (feed["residual_input"] if mode == "shortcut" else 0), 0).astype(
                dtype)
        return derived

    def reference(t):
        bns = ("bn1", "bn2") if mode == "dual" else ("bn1",)
        wrt = [f"{bn}_{name}" for bn in bns for name in ("input", "gamma", "beta")] + ["weight"]
        wrt += ["residual_input"] if mode == "shortcut" else []
        for name in wrt:
            t[name].stop_gradient = False
        h = sum(paddle._C_ops.batch_norm(t[f"{bn}_input"], t[f"{bn}_mean"], t[f"{bn}_inv_std"], t[f"{bn}_gamma"],
                                         t[f"{bn}_beta"], False, 0.9, 1e-5, "NHWC", False, False)[0] for bn in bns)
        r = F.relu(h + t["residual_input"] if mode == "shortcut" else h)
        out = F.conv2d(r, t["weight"], padding=1, data_format="NHWC")
        targets, seeds = [out], [t["grad_output"]]
        if fuse_add:
            targets, seeds = [out, r], [t["grad_output"], t["grad_output_add"]]
        grads = dict(zip(wrt, paddle.grad(targets, [t[name] for name in wrt], seeds)))
        expected = {"grad_weight": grads["weight"]} | {
            f"grad_{bn}_{name}": grads[f"{bn}_{name}"] for bn in bns for name in ("input", "gamma", "beta")}
        if mode == "shortcut":
            expected["grad_bn2_input"] = grads["residual_input"]
        return expected

    ins = {name: [name] for name in feeds}
    return {"feeds": feeds, "ops": [("fused_dconv_drelu_dbn", ins, outs, attrs)], "reference": reference,
            "derive": derive, "dtype": dtype}


def _normalised(feed: dict, bn: str):
    x = feed[f"{bn}_input"].astype(np.float64)
    return (x - x.mean((0, 1, 2))) / np.sqrt(x.var((0, 1, 2)) + 1e-5) * feed[f"{bn}_gamma"] + feed[f"{bn}_beta"]


GPU_PASS_CASES |= {
    "dconv_drelu_dbn": _dconv_drelu_dbn("plain", False, "float32"),
    "dconv_drelu_dbn_dual_add_float64": _dconv_drelu_dbn("dual", True, "float64"),
    "dconv_drelu_dbn_shortcut": _dconv_drelu_dbn("shortcut", False, "float32"),
}


def _basic_block(shortcut: bool, stride: int, dtype: str) -> dict:
    """resnet_basic_block over NCHW X [2, 3, 5, 5]: conv1 3x3 of 4 filters of padding 1, with the shortcut a 1x1
    conv3 of the same stride and the grad op at a fed dY; without, X of 4 channels and no grad op (Paddle's translator
    wants the shortcut's inputs of resnet_basic_block_grad, not optional in PIR); conv2 3x3 padding 1. The running
    statistics go to vars of their own (Paddle's layer shares them with Mean* / Var*)."""
    channels = 3 if shortcut else 4
    size = 3 if stride == 2 else 5
    act = [2, 4, size, size]
    filters = {"1": [4, channels, 3, 3], "2": [4, 4, 3, 3]} | ({"3": [4, channels, 1, 1]} if shortcut else {})
    feeds = {"x": ([2, channels, 5, 5], dtype), "dy": (act, dtype)}
    ins, grad_ins = {"X": ["x"]}, {"X": ["x"], "Y@GRAD": ["dy"]}
    outs = {"Y": ("y", act, dtype), "Conv1": ("conv1", act, dtype), "Conv2Input": ("conv2_input", act, dtype),
            "Conv2": ("conv2", act, dtype)}
    grad_outs = {"X@GRAD": ("x@GRAD", [2, channels, 5, 5], dtype)}
    for b, shape in filters.items():
        feeds |= {f"filter{b}": (shape, dtype)} | {f"{name}{b}": ([4], dtype) for name in ("scale", "bias", "mean",
                                                                                            "var")}
        ins |= {f"{slot}{b}": [f"{slot.lower()}{b}"] for slot in ("Filter", "Scale", "Bias", "Mean", "Var")}
        outs |= {f"{slot}{b}": (f"{slot.lower()}{b}", [4], dtype) for slot in ("SavedMean", "SavedInvstd")}
        outs |= {f"Mean{b}Out": (f"mean{b}_out", [4], dtype), f"Var{b}Out": (f"var{b}_out", [4], dtype)}
        outs |= {f"Max{kind}{b}": (f"max_{kind.lower()}{b}", [6], "float32") for kind in ("Input", "Filter")}
        grad_ins |= {slot: [name] for slot, name in ((f"Filter{b}", f"filter{b}"), (f"Scale{b}", f"scale{b}"),
                                                      (f"Bias{b}", f"bias{b}"), (f"SavedMean{b}", f"savedmean{b}"),
                                                      (f"SavedInvstd{b}", f"savedinvstd{b}"))}
        grad_ins |= {f"Max{kind}{b}": [f"max_{kind.lower()}{b}"] for kind in ("Input", "Filter")}
        grad_outs |= {f"{slot}{b}@GRAD": (f"{slot.lower()}{b}@GRAD", shape if slot == "Filter" else [4], dtype)
                      for slot in ("Filter", "Scale", "Bias")}
    if shortcut:
        outs["Conv3"] = ("conv3", act, dtype)
    grad_ins |= {slot: [outs[slot][0]] for slot in outs if slot.startswith("Conv") or slot == "Y"}
    attrs = {"stride1": stride, "stride2": 1, "stride3": stride, "padding1": 1, "padding2": 1, "padding3": 0,
             "dilation1": 1, "dilation2": 1, "dilation3": 1, "group": 1, "momentum": 0.9, "epsilon": 1e-5,
             "data_format": "NCHW", "has_shortcut": shortcut, "use_global_stats": False, "is_test": False,
             "trainable_statistics": False, "act_type": "relu", "find_conv_input_max": True}

    def bn(t, h, b):
        normed, mean_out, var_out, saved_mean, saved_inv, _ = paddle._C_ops.batch_norm(
            h, t[f"mean{b}"], t[f"var{b}"], t[f"scale{b}"], t[f"bias{b}"], False, 0.9, 1e-5, "NCHW", False, False)
        return normed, {f"savedmean{b}": saved_mean, f"savedinvstd{b}": saved_inv, f"mean{b}_out": mean_out,
                        f"var{b}_out": var_out}

    def reference(t):
        params = ["x"] + [f"{name}{b}" for b in filters for name in ("filter", "scale", "bias")]
        for name in params:
            t[name].stop_gradient = False
        conv1 = F.conv2d(t["x"], t["filter1"], stride=stride, padding=1)
        normed1, expected = bn(t, conv1, "1")
        hidden = F.relu(normed1)
        conv2 = F.conv2d(hidden, t["filter2"], padding=1)
        normed2, more = bn(t, conv2, "2")
        expected |= more | {"conv1": conv1, "conv2_input": hidden, "conv2": conv2}
        other = t["x"]
        if shortcut:
            conv3 = F.conv2d(t["x"], t["filter3"], stride=stride)
            other, more = bn(t, conv3, "3")
            expected |= more | {"conv3": conv3}
        y = F.relu(normed2 + other)
        if not shortcut:
            return expected | {"y": y}
        grads = paddle.grad([y], [t[name] for name in params], [t["dy"]])
        return expected | {"y": y} | {f"{name}@GRAD": grad for name, grad in zip(params, grads)}

    ops = [("resnet_basic_block", ins, outs, attrs)]
    if shortcut:
        ops.append(("resnet_basic_block_grad", grad_ins, grad_outs, attrs))
    else:
        del feeds["dy"]
    return {"feeds": feeds, "ops": ops, "reference": reference, "dtype": dtype}


GPU_PASS_CASES |= {
    "basic_block_shortcut": _basic_block(True, 2, "float32"),
    "basic_block_shortcut_float64": _basic_block(True, 1, "float64"),
    "basic_block_identity": _basic_block(False, 1, "float32"),
}


YOLO_ANCHORS = ([30, 40, 50, 60], [12, 16, 20, 24], [4, 6, 8, 10])


def _yolo_box_post() -> dict:
    """yolo_box_fuse_pass's program: three yolo_box_head (grids 2, 4, 8, ratios 32, 16, 8, two anchors, two classes)
    and yolo_box_post over two images, nms_threshold 1 (no box is suppressed: the NMS is checked by hand in
    tests/test_gpu_inference.py). Expected: Paddle's CPU yolo_box of each head (the unfused decoding: the same boxes
    and class scores), its kept boxes [argmax class, objectness, x1, y1, x2, y2] sorted by class and score."""
    sizes, ratios = (2, 4, 8), (32, 16, 8)
    feeds = {f"x{i}": ([2, 14, size, size], F32) for i, size in enumerate(sizes)}
    feeds |= {"image_shape": ([2, 2], F32), "image_scale": ([2, 2], F32)}
    heads = [("yolo_box_head", {"X": [f"x{i}"]}, {"Out": (f"head{i}", [2, 14, size, size])},
              {"anchors": YOLO_ANCHORS[i], "class_num": 2}) for i, size in enumerate(sizes)]
    attrs = {f"anchors{i}": YOLO_ANCHORS[i] for i in range(3)} | {
        f"downsample_ratio{i}": ratio for i, ratio in enumerate(ratios)} | {
        "class_num": 2, "conf_thresh": 0.5, "clip_bbox": True, "scale_x_y": 1.0, "nms_threshold": 1.0}
    post = ("yolo_box_post", {"Boxes0": ["head0"], "Boxes1": ["head1"], "Boxes2": ["head2"],
                              "ImageShape": ["image_shape"], "ImageScale": ["image_scale"]},
            {"Out": ("out", [-1, 6]), "NmsRoisNum": ("rois_num", [2], "int32")}, attrs)

    def derive(feed):
        return {"image_shape": np.array([[320, 320], [256, 320]], np.float32), "image_scale": np.ones((2, 2),
                                                                                                     np.float32)}

    def reference(t):
        rows, counts = [], []
        for n in range(2):
            image = []
            for i, ratio in enumerate(ratios):
                x = t[f"x{i}"][n:n + 1]
                boxes, scores = paddle.vision.ops.yolo_box(
                    x, t["image_shape"][n:n + 1].astype("int32"), YOLO_ANCHORS[i], 2, 0.5, ratio, clip_bbox=True)
                objectness = F.sigmoid(x.reshape([2, 7, -1])[:, 4]).reshape([-1])
                keep = (objectness >= 0.5).numpy()
                best = scores[0].argmax(-1).astype(boxes.dtype)
                image.append(paddle.concat([best[:, None], objectness[:, None], boxes[0]], -1).numpy()[keep])
                image[-1] = np.concatenate([image[-1], scores[0].max(-1).numpy()[keep, None]], -1)
            image = np.concatenate(image)
            order = np.lexsort((-image[:, 6], image[:, 0]))
            rows.append(image[order, :6])
            counts.append(len(order))
        return {"out": paddle.to_tensor(np.concatenate(rows)), "rois_num": paddle.to_tensor(np.array(counts, np.int32))}

    return {"feeds": feeds, "ops": [*heads, post], "reference": reference, "derive": derive}


GPU_PASS_CASES["yolo_box_post"] = _yolo_box_post()


def _squeeze_excitation(acts: list[int], params: list[float], extras: bool, dtype: str) -> dict:
    """squeeze_excitation_fuse_pass's op over x [2, 8, 3, 3], reduction ratio 4 (two hidden channels): the int16 filter
    and its maxima 0.5 (W1) and 0.8 (W2) drawn, with bias and branch when ``extras``. Expected: Paddle's CPU adaptive
    average pool, 1x1 conv2d with the dequantized weights (+ bias) and activations, multiply (+ branch)."""
    feeds = {"x": ([2, 8, 3, 3], dtype), "filter": ([32], "int16"), "filter_max": ([12], "float32")}
    if extras:
        feeds |= {"bias": ([10], "float32"), "branch": ([2, 8, 3, 3], dtype)}
    op = ("squeeze_excitation_block", {name: [name] for name in feeds}, {"out": ("out", [2, 8, 3, 3], dtype)},
          {"act_type": acts, "act_param": params, "filter_dims": [4, 8]})
    activations = {0: lambda v, a: v, 1: lambda v, a: F.relu(v), 2: lambda v, a: F.sigmoid(v),
                   5: lambda v, a: F.leaky_relu(v, a), 14: lambda v, a: F.hardswish(v)}

    def derive(feed):
        rng = np.random.default_rng(len(acts) + extras)
        return {"filter": rng.integers(-32767, 32768, 32).astype(np.int16),
                "filter_max": np.repeat(np.float32([0.5, 0.8]), 6)}

    def reference(t):
        q = t["filter"].astype("float64")
        w1 = (q[:16].reshape([8, 2]) * 0.5 / 32767).transpose([1, 0]).reshape([2, 8, 1, 1])
        w2 = (q[16:].reshape([2, 8]) * float(np.float32(0.8)) / 32767).transpose([1, 0]).reshape([8, 2, 1, 1])
        b1, b2 = (t["bias"][:2].astype("float64"), t["bias"][2:].astype("float64")) if extras else (None, None)
        pooled = F.adaptive_avg_pool2d(t["x"], 1)
        h = activations[acts[0]](F.conv2d(pooled, w1.astype(t["x"].dtype), b1), params[0])
        s = activations[acts[1]](F.conv2d(h, w2.astype(t["x"].dtype), b2), params[1])
        out = t["x"] * s + (t["branch"] if extras else 0)
        return {"out": activations[acts[2]](out, params[2])}

    return {"feeds": feeds, "ops": [op], "reference": reference, "derive": derive, "dtype": dtype}


GPU_PASS_CASES |= {
    "squeeze_excitation": _squeeze_excitation([1, 2, 1], [0.0, 0.0, 0.0], True, "float32"),
    "squeeze_excitation_float64": _squeeze_excitation([5, 2, 14], [0.1, 0.0, 0.0], False, "float64"),
}
