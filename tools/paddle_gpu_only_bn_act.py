"""PIR programs of the batch norm + relu fusions Paddle 3.3.1's GPU training passes write (pd_op.fused_batch_norm_act,
pd_op.fused_bn_add_activation, their in-place forms and grads), which its CPU build can neither build (no kernel:
its PIR API refuses the op) nor translate (no legacy proto): written by hand with
tools/paddle_gpu_only_handwritten.py's Writer and loaded back by Paddle, which checks every op's operand, result and
attribute names. expected.npz is Paddle's CPU run of the unfused layer in training mode (dygraph): _C_ops.batch_norm
(channel-last) + add + relu, its updated running mean, saved mean and inverse std, and the gradients of x, z, scale
and bias at the fed out_grad (paddle.grad); the running variance as cuDNN updates it, toward the unbiased batch
variance (paddle.var(unbiased=True); Paddle's CPU batch_norm uses the biased one). Written as
tests/data/paddle/pir_gpu_only/<case>/ program.json, feed.npz, expected.npz and meta.json; tests/test_fused_bn_act.py
runs them. Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_gpu_only_bn_act.py
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import _C_ops

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import paddle_gpu_only_handwritten as handwritten  # noqa: E402

STATS = ["mean_out", "variance_out", "saved_mean", "saved_variance"]


def _case(add: bool, in_place: bool, shape: list[int], dtype: str, momentum: float, epsilon: float) -> dict:
    """One forward op on x (and z) and its grad op at a fed out_grad; every result fetched."""
    c = shape[-1]
    feeds = {"x": shape, **({"z": shape} if add else {}), "scale": [c], "bias": [c], "mean": [c], "variance": [c],
             "out_grad": shape}
    op = ("fused_bn_add_activation" if add else "fused_batch_norm_act") + ("_" if in_place else "")
    # float attributes as Paddle saves them: its float32 value (gradc keeps a written 0.7 as 0.7)
    momentum, epsilon = float(np.float32(momentum)), float(np.float32(epsilon))
    attrs = [("momentum", momentum), ("epsilon", epsilon), ("act_type", "relu")]
    results = [("out", shape, dtype), *[(name, [c], dtype) for name in STATS], ("reserve_space", [-1], "uint8")]
    inputs = ["x", "z", "scale", "bias", "mean", "variance"] if add else ["x", "scale", "bias", "mean", "variance"]
    grads = ["x", "z", "scale", "bias"] if add else ["x", "scale", "bias"]
    grad_op = ("fused_bn_add_activation_grad" if add else "fused_batch_norm_act_grad",
               ["x", "scale", "bias", "out", "saved_mean", "saved_variance", "reserve_space", "out_grad"],
               [(f"{name}@GRAD", feeds[name], dtype) for name in grads], attrs)
    return {"feeds": feeds, "dtype": dtype, "ops": [(op, inputs, results, attrs), grad_op],
            "fetches": ["out", *STATS, *[f"{name}@GRAD" for name in grads]],
            "reference": lambda v: _reference(v, add, momentum, epsilon)}


def _reference(v: dict, add: bool, momentum: float, epsilon: float) -> dict:
    t = {name: paddle.to_tensor(value, stop_gradient=name in ("mean", "variance", "out_grad"))
         for name, value in v.items()}
    normed, mean_out, _, saved_mean, saved_variance, _ = _C_ops.batch_norm(
        t["x"], t["mean"], t["variance"], t["scale"], t["bias"], False, momentum, epsilon, "NHWC",
        False, False)
    # cuDNN's BatchNormalizationForwardTrainingEx moves the running variance toward the unbiased batch variance
    unbiased = paddle.var(t["x"], axis=list(range(t["x"].ndim - 1)), unbiased=True)
    variance_out = paddle.to_tensor(v["variance"]) * momentum + unbiased * (1 - momentum)   # batch_norm wrote t's
    out = F.relu(normed + t["z"] if add else normed)
    names = ["x", "z", "scale", "bias"] if add else ["x", "scale", "bias"]
    grads = paddle.grad([out], [t[name] for name in names], [t["out_grad"]])
    expected = {"out": out, "mean_out": mean_out, "variance_out": variance_out, "saved_mean": saved_mean,
                "saved_variance": saved_variance} | {f"{name}@GRAD": g for name, g in zip(names, grads)}
    return {name: value.numpy() for name, value in expected.items()}


CASES = {
    "bn_act_inplace_nhwc_f32": _case(False, True, [2, 3, 3, 4], "float32", 0.9, 1e-5),
    "bn_act_nlc_f64": _case(False, False, [3, 4, 5], "float64", 0.7, 1e-3),
    "bn_add_act_inplace_nhwc_f32": _case(True, True, [2, 2, 3, 3], "float32", 0.9, 1e-5),
    "bn_add_act_ndhwc_f64": _case(True, False, [2, 2, 2, 2, 3], "float64", 0.5, 1e-4),
}


def _feed(spec: dict, seed: int) -> dict:
    """Standard normal values; the running variance positive."""
    rng = np.random.default_rng(seed)
    feed = {name: rng.standard_normal(shape).astype(spec["dtype"]) for name, shape in spec["feeds"].items()}
    feed["variance"] = rng.uniform(0.5, 1.5, feed["variance"].shape).astype(spec["dtype"])
    return feed


def write(case: str, seed: int) -> str:
    spec = CASES[case]
    feed = _feed(spec, seed)
    writer = handwritten.Writer()
    for name, value in feed.items():
        writer.data(name, list(value.shape), str(value.dtype))
    for op in spec["ops"]:
        writer.op(*op)
    for name in spec["fetches"]:
        writer.fetch(name)
    directory = handwritten.OUT / case
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    (directory / "program.json").write_text(json.dumps(writer.program()))
    handwritten._check_names(directory / "program.json", spec)
    np.savez_compressed(directory / "feed.npz", **feed)
    np.savez_compressed(directory / "expected.npz", **spec["reference"](feed))
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": writer.fetches,
            "pir_ops": sorted({f"pd_op.{op[0]}" for op in spec["ops"]}),
            "built_by": "PIR JSON written by hand, loaded and name-checked by Paddle; expected.npz: Paddle's CPU run "
                        "of batch_norm (training, channel-last) + add + relu and its gradients; variance_out toward "
                        "paddle.var(x, unbiased=True), as cuDNN"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return " ".join(meta["pir_ops"])


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.set_device("cpu")
    for index, case in enumerate(CASES):
        print(f"{case}: {write(case, 700 + index)}")
