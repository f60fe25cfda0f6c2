"""PIR programs of Paddle 3.3.1's GPU-only fused training steps (fused_linear_param_grad_add,
cross_entropy_with_softmax_bwd_w_downcast, embedding_grad_add_to) and apply_per_channel_scale, written as
tools/paddle_gpu_only_translated.py writes its cases (legacy ops put into a ProgramDesc, named by Paddle's
translator) into tests/data/paddle/pir_gpu_only/fused_grad_steps/, with Paddle's CPU numbers of the same math
composed of ops it runs on CPU (paddle_cpu_composition.npz: matmul and sum for the param grads, the grad of
softmax_with_cross_entropy with ignore_index -100, index_add for the embedding rows, a float32 multiply rounded to
float16 for the scales). tests/test_fused_grad_steps.py runs them. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_fused_grad_steps_translated.py
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import paddle
import paddle_gpu_only_translated as translated

CASE, SEED = "fused_grad_steps", 530
F32, BF16, F16 = "float32", "bfloat16", "float16"
# the translator reads embedding_grad_add_to's legacy slots as grads: main_grad_ as main@GRAD_, out_grad as out@GRAD,
# main_grad_out as main@GRAD_out (the op's own proto names fail: "Input main_grad_ not found")
EMBEDDING_SLOTS = {"token_indices": ["ids"], "main@GRAD_": ["main_grad"], "out@GRAD": ["rows_grad"]}


def spec() -> dict:
    feeds = {"x": ([2, 3, 4], F32), "dout": ([2, 3, 5], F32), "dweight": ([4, 5], F32), "dbias": ([5], F32),
             "label": ([4, 1], "int64"), "softmax": ([4, 6], F32), "loss_grad": ([4, 1], F32),
             "ids": ([2, 3], "int64"), "main_grad": ([5, 4], F32), "rows_grad": ([2, 3, 4], BF16),
             "act": ([3, 8], F16), "scales": ([8], F16)}
    return {"feeds": feeds, "ops": [
        ("fused_linear_param_grad_add", {"x": ["x"], "dout": ["dout"], "dweight": ["dweight"], "dbias": ["dbias"]},
         {"dweight_out": ("dweight_out", [4, 5]), "dbias_out": ("dbias_out", [5])},
         {"multi_precision": True, "has_bias": True}),
        ("fused_linear_param_grad_add", {"x": ["x"], "dout": ["dout"]},
         {"dweight_out": ("fresh_dweight", [4, 5]), "dbias_out": ("fresh_dbias", [5])},
         {"multi_precision": False, "has_bias": False}),
        ("cross_entropy_with_softmax_bwd_w_downcast", {"label": ["label"], "softmax": ["softmax"],
                                                       "loss_grad": ["loss_grad"]},
         {"input_grad": ("input_grad", [4, 6], BF16)}, {}),
        ("embedding_grad_add_to", EMBEDDING_SLOTS, {"main@GRAD_out": ("main_grad_out", [5, 4])}, {}),
        ("apply_per_channel_scale", {"x": ["act"], "scales": ["scales"]}, {"out": ("scaled", [3, 8], F16)}, {})]}


def draw(rng) -> dict:
    softmax = np.exp(rng.standard_normal((4, 6)))
    return {"x": rng.standard_normal((2, 3, 4)).astype(F32), "dout": rng.standard_normal((2, 3, 5)).astype(F32),
            "dweight": rng.standard_normal((4, 5)).astype(F32), "dbias": rng.standard_normal(5).astype(F32),
            "label": np.array([[2], [-100], [5], [0]], np.int64),
            "softmax": (softmax / softmax.sum(1, keepdims=True)).astype(F32),
            "loss_grad": rng.uniform(0.5, 1.5, (4, 1)).astype(F32), "ids": np.array([[1, 3, 1], [0, 4, 1]], np.int64),
            "main_grad": rng.standard_normal((5, 4)).astype(F32),
            "rows_grad": rng.standard_normal((2, 3, 4)).astype(F32),   # fed as bfloat16
            "act": rng.standard_normal((3, 8)).astype(F16), "scales": rng.uniform(0.5, 2.0, 8).astype(F16)}


def composition(feed: dict) -> dict:
    """The same math by ops Paddle runs on CPU."""
    t = {name: paddle.to_tensor(value) for name, value in feed.items()}
    rows, grads = t["x"].reshape([6, 4]), t["dout"].reshape([6, 5])
    logits = paddle.to_tensor(np.log(feed["softmax"]), stop_gradient=False)
    loss = paddle.nn.functional.softmax_with_cross_entropy(logits, t["label"], ignore_index=-100)
    loss.backward(t["loss_grad"])
    rows_grad = paddle.to_tensor(feed["rows_grad"]).astype(BF16).astype(F32).reshape([6, 4])
    return {"dweight_out": (paddle.matmul(rows, grads, transpose_x=True) + t["dweight"]).numpy(),
            "dbias_out": (grads.sum(0) + t["dbias"]).numpy(), "fresh_dweight": paddle.matmul(rows.T, grads).numpy(),
            "fresh_dbias": grads.sum(0).numpy(),
            "input_grad": logits.grad.numpy(),
            "main_grad_out": paddle.index_add(t["main_grad"], t["ids"].reshape([6]), 0, rows_grad).numpy(),
            "scaled": (t["act"].astype(F32) * t["scales"].astype(F32)).astype(F16).numpy()}   # no CPU float16 multiply


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    program, fetches = translated.translated_program(spec())
    directory = translated.saved(program, CASE)
    feed = draw(np.random.default_rng(SEED))
    np.savez_compressed(directory / "feed.npz", **feed)
    ops = sorted({op.name() for op in program.global_block().ops} - {"pd_op.fetch"})
    meta = {"case": CASE, "paddle_version": paddle.__version__, "fetches": fetches, "pir_ops": ops,
            "built_by": "legacy ops written into a ProgramDesc, translated by Paddle"}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    paddle.disable_static()
    np.savez_compressed(directory / "paddle_cpu_composition.npz", **composition(feed))
    print(f"{CASE}: {ops}")
