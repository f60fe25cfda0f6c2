"""Cases of tools/paddle_gpu_inference_ops.py (through paddle_gpu_pass_cases.GPU_PASS_CASES) for the cuDNN frontend
fusions and the ResNet fusions: fused_scale_bias_relu_conv_bn, fused_scale_bias_add_relu, resnet_unit (+ grad),
fused_dconv_drelu_dbn and resnet_basic_block (+ grad), each with ``reference``, Paddle's CPU run of the unfused layers
(conv2d, batch_norm, relu, paddle.grad) on the float64 feeds, and ``dtype``, the feeds' float dtype. The running
variance of resnet_unit and fused_scale_bias_relu_conv_bn is cuDNN's BN finalize's: momentum * running + (1 -
momentum) * the unbiased batch variance (paddle.var, unbiased), not the biased one Paddle's CPU batch_norm blends in
(docs/inference-optimized.md); resnet_basic_block's (XPU) stays Paddle's batch_norm's."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F


def _finalized_var(out, running_var, shape=None):
    """cuDNN's BN finalize: 0.9 running_var + 0.1 the unbiased batch variance of NHWC ``out``."""
    batch = paddle.var(out, axis=[0, 1, 2], unbiased=True)
    return 0.9 * running_var + 0.1 * (batch if shape is None else batch.reshape(shape))


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
        running_var = _finalized_var(out, t["running_var"])   # before batch_norm updates t["running_var"] in place
        _, mean_out, _, saved_mean, saved_inv_std, _ = paddle._C_ops.batch_norm(
            out, t["running_mean"], t["running_var"], t["bn_scale"], t["bn_bias"], False, 0.9, 1e-5, "NHWC",
            False, False)
        eq_scale = t["bn_scale"] * saved_inv_std
        return {"out": out, "out_running_mean": mean_out, "out_running_var": running_var,
                "saved_mean": saved_mean,
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


def _bn_branch(t: dict, data: str, filters: str, suffix: str, stride: int, padding: int):
    """conv2d (NHWC, the KRSC filter as OIHW) + batch_norm in training: (normed, {name: its statistics})."""
    w = t[filters]
    w = w.reshape([w.shape[0], 1, 1, -1]) if w.shape[2:] == [1, 1] and w.shape[1] != 1 else w
    conv = F.conv2d(t[data], w.transpose([0, 3, 1, 2]), stride=stride, padding=padding, data_format="NHWC")
    shape = t[f"scale_{suffix}"].shape
    running_var = _finalized_var(conv, t[f"var_{suffix}"], shape)   # before batch_norm updates it in place
    normed, mean_out, _, saved_mean, saved_inv, _ = paddle._C_ops.batch_norm(
        conv, *(t[f"{name}_{suffix}"].reshape([-1]) for name in ("mean", "var", "scale", "bias")), False, 0.9, 1e-5,
        "NHWC", False, False)
    stats = {f"conv_{suffix}": conv, f"saved_mean_{suffix}": saved_mean, f"saved_invstd_{suffix}": saved_inv,
             f"running_mean_{suffix}": mean_out,
             f"running_var_{suffix}": running_var}
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


RESNET_CASES = {
    "scale_bias_relu_conv_bn": _scale_bias_relu_conv_bn(True, 1, "float32"),
    "conv_bn_stride2_float64": _scale_bias_relu_conv_bn(False, 2, "float64"),
    "scale_bias_add_relu": _scale_bias_add_relu(False, "float32"),
    "scale_bias_add_relu_dual_float64": _scale_bias_add_relu(True, "float64"),
    "resnet_unit_shortcut": _resnet_unit(True, "float32"),
    "resnet_unit_plain_float64": _resnet_unit(False, "float64"),
    "dconv_drelu_dbn": _dconv_drelu_dbn("plain", False, "float32"),
    "dconv_drelu_dbn_dual_add_float64": _dconv_drelu_dbn("dual", True, "float64"),
    "dconv_drelu_dbn_shortcut": _dconv_drelu_dbn("shortcut", False, "float32"),
    "basic_block_shortcut": _basic_block(True, 2, "float32"),
    "basic_block_shortcut_float64": _basic_block(True, 1, "float64"),
    "basic_block_identity": _basic_block(False, 1, "float32"),
}
