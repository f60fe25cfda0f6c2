"""PIR programs of the GPU-only ops paddle.compat and SyncBatchNorm write, which Paddle 3.3.1's PIR API refuses
to build without a GPU (no kernel of the dtype) and its CPU build has no legacy proto to translate: max_with_index
and min_with_index (paddle.compat.max / min along a dim) and sync_batch_norm_ (a SyncBatchNorm's forward in
training), each with its grad op at a fed output grad. The JSON is written by hand with
tools/paddle_gpu_only_handwritten.py's Writer, then Paddle loads it and checks every op's operand, result and
attribute names. The numbers are Paddle's CPU run of what the op computes in one process, in dygraph: compat.max /
min's own CPU branch (argmax / argmin and take_along_axis) and BatchNorm2D in training, and their gradients at the
fed grad (expected.npz). Written to tests/data/paddle/pir_gpu_only/<case>/; tests/test_compat_ops.py runs them.
Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_compat_gpu_only.py
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import paddle
import paddle_gpu_only_handwritten as handwritten
from paddle_gpu_only_handwritten import OUT, Writer

F32 = "float32"
handwritten.TYPE_TAGS.setdefault("int64", "0.t_i64")


class TypedAttrs(Writer):
    """The Writer, with attributes given as (name, PIR attribute tag, value): int64 and float where the Writer
    would write an int32."""

    def op(self, name, operands, results, attrs):
        super().op(name, operands, results, [])
        self.ops[-1]["A"] = [{"AT": {"#": tag, "D": value}, "N": attr} for attr, tag, value in attrs]


def _with_index(extreme: str, shape: list[int], dim: int, keepdim: bool) -> dict:
    reduced = [1 if i == dim % len(shape) else d for i, d in enumerate(shape)] if keepdim else \
        [d for i, d in enumerate(shape) if i != dim % len(shape)]
    feeds = {"x": shape, "dvalues": reduced}
    ops = [(f"{extreme}_with_index", ["x"], [("values", reduced, F32), ("indices", reduced, "int64")],
            [("dim", "0.a_i64", dim), ("keepdim", "0.a_bool", keepdim), ("flatten", "0.a_bool", False)]),
           (f"{extreme}_with_index_grad", ["x", "values", "indices", "dvalues"], [("x_grad", shape, F32)],
            [("dim", "0.a_f32", float(dim)), ("keepdim", "0.a_bool", keepdim)])]

    def reference(feed):
        x = paddle.to_tensor(feed["x"], stop_gradient=False)
        values, indices = getattr(paddle.compat, extreme)(x, dim=dim, keepdim=keepdim)
        (values * paddle.to_tensor(feed["dvalues"])).sum().backward()
        return {"values": values.numpy(), "indices": indices.numpy(), "x_grad": x.grad.numpy()}
    return {"feeds": feeds, "ops": ops, "fetches": ["values", "indices", "x_grad"], "reference": reference}


def _sync_batch_norm(shape: list[int], layout: str) -> dict:
    channels = shape[1] if layout == "NCHW" else shape[-1]
    stats = [channels]
    feeds = {"x": shape, "mean": stats, "variance": stats, "scale": stats, "bias": stats, "dy": shape}
    attrs = [("is_test", "0.a_bool", False), ("momentum", "0.a_f32", 0.9), ("epsilon", "0.a_f32", 1e-5),
             ("data_format", "0.a_str", layout), ("use_global_stats", "0.a_bool", False),
             ("trainable_statistics", "0.a_bool", False)]
    grad_attrs = [attrs[1], attrs[2], attrs[3], attrs[0], attrs[4], attrs[5]]
    ops = [("sync_batch_norm_", ["x", "mean", "variance", "scale", "bias"],
            [("out", shape, F32), ("mean_out", stats, F32), ("variance_out", stats, F32),
             ("saved_mean", stats, F32), ("saved_variance", stats, F32), None], attrs),
           ("sync_batch_norm_grad", ["x", "scale", "bias", "saved_mean", "saved_variance", None, "dy"],
            [("x_grad", shape, F32), ("scale_grad", stats, F32), ("bias_grad", stats, F32)], grad_attrs)]

    def reference(feed):
        x = paddle.to_tensor(feed["x"], stop_gradient=False)
        scale = paddle.to_tensor(feed["scale"], stop_gradient=False)
        bias = paddle.to_tensor(feed["bias"], stop_gradient=False)
        mean, variance = paddle.to_tensor(feed["mean"]), paddle.to_tensor(feed["variance"])
        out = paddle.nn.functional.batch_norm(x, mean, variance, scale, bias, training=True, momentum=0.9,
                                              epsilon=1e-5, data_format=layout)
        (out * paddle.to_tensor(feed["dy"])).sum().backward()
        return {"out": out.numpy(), "mean_out": mean.numpy(), "variance_out": variance.numpy(),
                "x_grad": x.grad.numpy(), "scale_grad": scale.grad.numpy(), "bias_grad": bias.grad.numpy()}
    return {"feeds": feeds, "ops": ops, "reference": reference,
            "fetches": ["out", "mean_out", "variance_out", "x_grad", "scale_grad", "bias_grad"]}


CASES = {
    "compat_max_with_index": _with_index("max", [3, 4], 1, False),
    "compat_min_with_index_keepdim": _with_index("min", [2, 3, 4], -3, True),
    "sync_batch_norm_nchw": _sync_batch_norm([4, 3, 2, 2], "NCHW"),
    "sync_batch_norm_nhwc": _sync_batch_norm([2, 3, 2, 3], "NHWC"),
}


def _feed(rng, name: str, shape: list[int]) -> np.ndarray:
    if name == "variance":
        return rng.uniform(0.5, 2.0, shape).astype(F32)
    return rng.standard_normal(shape).astype(F32)


def write(case: str, seed: int) -> str:
    spec = CASES[case]
    rng = np.random.default_rng(seed)
    feed = {name: _feed(rng, name, shape) for name, shape in spec["feeds"].items()}
    writer = TypedAttrs()
    for name, value in feed.items():
        writer.data(name, list(value.shape), str(value.dtype))
    for op in spec["ops"]:
        writer.op(*op)
    for name in spec["fetches"]:
        writer.fetch(name)
    named = [(name, operands, results, [(attr, value) for attr, _, value in attrs])
             for name, operands, results, attrs in spec["ops"]]
    pir_ops = sorted({f"pd_op.{op[0]}" for op in spec["ops"]})
    handwritten.save_case(OUT / case, writer, named, feed, spec["reference"]({k: v.copy() for k, v in feed.items()}),
                          pir_ops, "Paddle's CPU run in dygraph of what the op computes in one process")
    return " ".join(pir_ops)


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.set_device("cpu")
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, 700 + index)}")
    sys.exit(0)
