"""PIR programs of depthwise_conv2d_bias and depthwise_conv3d_bias, which a CUDA build of Paddle 3.3.1 writes for a
depthwise Conv2D / Conv3D under FLAGS_use_accuracy_compatible_kernel (docs/gpu-build.md), and their grad ops: the
CPU build has neither kernel (its PIR API refuses the op) nor a legacy proto of the grad ops (its translator cannot
write them), so the program's JSON is written here with tools/paddle_gpu_only_handwritten.py's Writer, and Paddle
loads it and checks every operand, result and attribute name against its op definitions. expected.npz is Paddle's
CPU run of the composition the CUDA kernels compute (F.conv2d / F.conv3d with groups and a bias) and its gradients
at the fed dout. Written as tests/data/paddle/pir_gpu_only/<case>/ (program.json, feed.npz, expected.npz, meta.json);
tests/test_gpu_build.py runs them. Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_gpu_build_conv_bias.py
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_gpu_only_handwritten import OUT, Writer, _attr, _flags, save_case

# case -> (dims, input shape, filter shape, with a bias, attributes in the order of Paddle's op definition)
CASES = {
    "depthwise_conv2d_bias": (2, [2, 3, 6, 5], [6, 1, 3, 3], True,
                              {"strides": [2, 1], "paddings": [1, 0], "padding_algorithm": "EXPLICIT", "groups": 3,
                               "dilations": [1, 2], "data_format": "NCHW"}),
    "depthwise_conv2d_bias_nhwc_no_bias": (2, [1, 5, 5, 4], [4, 1, 3, 3], False,
                                           {"strides": [1, 1], "paddings": [1, 1], "padding_algorithm": "EXPLICIT",
                                            "groups": 4, "dilations": [1, 1], "data_format": "NHWC"}),
    "depthwise_conv3d_bias": (3, [1, 2, 4, 5, 4], [4, 1, 2, 3, 2], True,
                              {"strides": [1, 2, 1], "paddings": [0, 1, 1], "padding_algorithm": "EXPLICIT",
                               "groups": 2, "dilations": [1, 1, 1], "data_format": "NCDHW"}),
}


def _list_attr(name: str, value) -> dict:
    """An attribute as Paddle's JSON writes it: a list of int32 as an a_array."""
    if isinstance(value, list):
        return {"AT": {"#": "0.a_array", "D": [{"#": "0.a_i32", "D": v} for v in value]}, "N": name}
    return _attr(name, value)


def _op(writer: Writer, name: str, operands: list, results: list, attrs: dict) -> None:
    """Writer.op with list attributes."""
    ins = [{"%": writer.values[o][0] if o is not None else 0} for o in operands]
    outs = [writer._result(*r) if r is not None else writer._result(None) for r in results]
    writer.ops.append({"#": f"1.{name}", "A": [_list_attr(n, v) for n, v in attrs.items()], "I": ins, "O": outs,
                       "OA": _flags(len(outs), persistable=False, stop_gradient=False)})


def _conv(dims: int, t: dict, attrs: dict):
    """Paddle's CPU convolution with groups (and the bias when t has one)."""
    conv = F.conv2d if dims == 2 else F.conv3d
    return conv(t["input"], t["filter"], t.get("bias"), attrs["strides"], attrs["paddings"], attrs["dilations"],
                attrs["groups"], attrs["data_format"])


def _reference(dims: int, feed: dict, attrs: dict) -> dict:
    """The convolution and its gradients at dout."""
    t = {name: paddle.to_tensor(value, stop_gradient=name == "dout") for name, value in feed.items()}
    out = _conv(dims, t, attrs)
    names = [name for name in ("input", "filter", "bias") if name in t]
    grads = paddle.grad([out], [t[name] for name in names], [t["dout"]])
    return {"out": out.numpy(), **{f"{name}@GRAD": g.numpy() for name, g in zip(names, grads)}}


def write(case: str, seed: int) -> str:
    dims, x_shape, w_shape, with_bias, attrs = CASES[case]
    rng = np.random.default_rng(seed)
    feed = {"input": x_shape, "filter": w_shape, **({"bias": [w_shape[0]]} if with_bias else {})}
    feed = {name: rng.standard_normal(shape).astype("float32") for name, shape in feed.items()}
    paddle.disable_static()
    out_shape = list(_conv(dims, {name: paddle.to_tensor(value) for name, value in feed.items()}, attrs).shape)
    feed["dout"] = rng.standard_normal(out_shape).astype("float32")
    writer = Writer()
    for name, value in feed.items():
        writer.data(name, list(value.shape), "float32")
    bias, op_type = "bias" if with_bias else None, f"depthwise_conv{dims}d_bias"
    _op(writer, op_type, ["input", "filter", bias], [("out", out_shape, "float32")], attrs)
    grads = [("input@GRAD", x_shape, "float32"), ("filter@GRAD", w_shape, "float32"),
             ("bias@GRAD", [w_shape[0]], "float32") if with_bias else None]
    _op(writer, f"{op_type}_grad", ["input", "filter", bias, "dout"], grads, attrs)
    for name in ["out", *(g[0] for g in grads if g is not None)]:
        writer.fetch(name)
    spec_ops = [(op_type, ["input", "filter", bias], [("out",)], list(attrs.items())),
                (f"{op_type}_grad", ["input", "filter", bias, "dout"], grads, list(attrs.items()))]
    pir_ops = [f"pd_op.{op_type}", f"pd_op.{op_type}_grad"]
    save_case(OUT / case, writer, spec_ops, feed, _reference(dims, feed, attrs), pir_ops,
              f"Paddle's CPU F.conv{dims}d with groups and a bias, and its gradients at dout")
    return " ".join(pir_ops)


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, 700 + index)}")
    sys.exit(0)
