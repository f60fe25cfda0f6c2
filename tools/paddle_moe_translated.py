"""PIR programs of Paddle 3.3.1's further GPU-only MoE ops (moe_combine_no_weight, moe_gate_dispatch_permute,
moe_gate_dispatch_auto, moe_combine_auto and their grad ops), written as tools/paddle_gpu_only_translated.py writes
its cases (legacy ops put into a ProgramDesc, named by Paddle's translator) into
tests/data/paddle/pir_gpu_only/<case>/; tests/test_moe_more.py runs them against the CUDA kernels' formulas. Not
part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_moe_translated.py [case ...]
"""

from __future__ import annotations

import sys
import warnings

import paddle
import paddle_gpu_only_translated as translated

F32 = translated.F32


def _combine_no_weight() -> dict:
    """moe_combine_no_weight of 6 dispatched rows back to 3 tokens (top 2; combine_weight fed, which the kernel
    ignores) and its grad op at a fed dy; scatter_index [s, k] a permutation of the rows (routes)."""
    tokens, k, dim = 3, 2, 4
    feeds = {"expert_rows": ([tokens * k, dim], F32), "combine_weights": ([tokens, k], F32),
             "routes": ([tokens, k], "int32"), "dcombined": ([tokens, dim], F32)}
    ins = {"x": ["expert_rows"], "combine_weight": ["combine_weights"], "scatter_index": ["routes"]}
    return {"feeds": feeds, "ops": [
        ("moe_combine_no_weight", ins, {"y": ("combined", [tokens, dim])}, {"epsilon": 1e-15}),
        ("moe_combine_no_weight_grad", {**ins, "y@GRAD": ["dcombined"]},
         {"x@GRAD": ("expert_rows@GRAD", [tokens * k, dim])}, {"epsilon": 1e-15})]}


def _dispatch_permute() -> dict:
    """moe_gate_dispatch_permute of 6 tokens over 4 experts on 2 ranks (top 2, capacity 2: some choices dropped)
    and its grad op at fed dy and dweights."""
    tokens, experts, dim, k, capacity, world = 6, 4, 8, 2, 2, 2
    y = [experts // world, world, capacity, dim]
    feeds = {"x": ([tokens, dim], F32), "gate_logits": ([tokens, experts], F32), "corr_bias": ([experts], F32),
             "dy": (y, F32), "dweights": ([tokens, k], F32)}
    attrs = {"k": ("_set_int64_attr", k), "capacity": ("_set_int64_attr", capacity),
             "world_size": ("_set_int64_attr", world)}
    outs = {"y": ("y", y), "combine_weights": ("combine_weights", [tokens, k]),
            "scatter_index": ("scatter_index", [k, tokens], "int32"),
            "expert_offset": ("expert_offset", [experts], "int64"), "expert_id": ("expert_id", [tokens, k], "int32")}
    grad_ins = {"combine_weights": ["combine_weights"], "scatter_index": ["scatter_index"],
                "expert_id": ["expert_id"], "y@GRAD": ["dy"], "combine_weights@GRAD": ["dweights"]}
    grads = {"x@GRAD": ("x@GRAD", [tokens, dim]), "gate_logits@GRAD": ("gate_logits@GRAD", [tokens, experts])}
    ins = {"x": ["x"], "gate_logits": ["gate_logits"], "corr_bias": ["corr_bias"]}
    return {"feeds": feeds, "ops": [("moe_gate_dispatch_permute", ins, outs, attrs),
                                    ("moe_gate_dispatch_permute_grad", grad_ins, grads, attrs)]}


def _auto() -> dict:
    """The _auto variants (the ops Paddle's API picks for auto-parallel tensors) on the moe_dispatch_combine_pad
    case of tools/paddle_gpu_only_translated.py: each op type renamed to its _auto twin."""
    spec = translated._moe(True)
    twin = {op: f"{op}_auto" for op in ("moe_gate_dispatch", "moe_combine")}
    renamed = [(twin.get(op.removesuffix("_grad"), op.removesuffix("_grad")) + op[len(op.removesuffix("_grad")):],
                *rest) for op, *rest in spec["ops"]]
    op, ins, grads, attrs = renamed[-1]   # moe_combine_auto_grad also has a scatter_index@GRAD output: declared only
    renamed[-1] = (op, ins, {**grads, "scatter_index@GRAD": [("routes@GRAD", [6, 2], "int32")]}, attrs)
    return {**spec, "ops": renamed}


CASES = {"moe_combine_no_weight": _combine_no_weight(), "moe_dispatch_permute": _dispatch_permute(),
         "moe_dispatch_combine_auto": _auto()}

if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    translated.CASES.update(CASES)
    for index, case in enumerate(CASES):   # the cases named on the command line, or all
        if not sys.argv[1:] or case in sys.argv[1:]:
            print(f"{case}: {translated.write(case, 400 + index)}")
    sys.exit(0)
