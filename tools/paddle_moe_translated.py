"""PIR programs of Paddle 3.3.1's GPU-only MoE ops (cal_aux_loss, moe_gate_dispatch, moe_combine, moe_combine_no_weight,
moe_gate_dispatch_permute, moe_gate_dispatch_auto, moe_combine_auto and their grad ops), written as
tools/paddle_gpu_only_translated.py writes its cases (legacy ops put into a ProgramDesc, named by Paddle's translator)
into tests/data/paddle/pir_gpu_only/<case>/, with Paddle's CPU numbers of its own unfused cal_aux_loss and
moe_gate_dispatch where it has them (paddle_cpu_composition.npz); tests/test_moe.py and tests/test_moe_more.py run
them against the CUDA kernels' formulas. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_moe_translated.py [case ...]
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
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
    spec = _moe(True)
    twin = {op: f"{op}_auto" for op in ("moe_gate_dispatch", "moe_combine")}
    renamed = [(twin.get(op.removesuffix("_grad"), op.removesuffix("_grad")) + op[len(op.removesuffix("_grad")):],
                *rest) for op, *rest in spec["ops"]]
    op, ins, grads, attrs = renamed[-1]   # moe_combine_auto_grad also has a scatter_index@GRAD output: declared only
    renamed[-1] = (op, ins, {**grads, "scatter_index@GRAD": [("routes@GRAD", [6, 2], "int32")]}, attrs)
    return {**spec, "ops": renamed}


def _aux_loss(masks: bool) -> dict:
    """cal_aux_loss and its grad op at a fed dy: with both token masks (a global batch of 12 tokens: the scaled
    loss) and a per-token dispatch mask, or with neither and the counts per expert given."""
    tokens, experts = (8, 4) if masks else (6, 3)
    feeds = {"gate_prob": ([tokens, experts], F32), "dy": ([], F32),
             "dispatch_mask": ([tokens, experts] if masks else [experts], "int64")}
    ins = {"gate_prob": ["gate_prob"], "dispatch_mask": ["dispatch_mask"]}
    if masks:
        feeds |= {"tokens_mask": ([tokens], F32), "dispatch_tokens_mask": ([12], "bool")}
        ins |= {"tokens_mask": ["tokens_mask"], "dispatch_tokens_mask": ["dispatch_tokens_mask"]}
    outs = {"l_aux_loss": ("l_aux_loss", []), "seqlen_float": ("seqlen_float", []), "ce": ("ce", [experts])}
    attrs = {"num_experts": ("_set_int64_attr", 4 if masks else 6), "use_group": masks,
             "moe_k": ("_set_int64_attr", 2), "clip_min": 1.0}
    grad_ins = {"gate_prob": ["gate_prob"], "seqlen_float": ["seqlen_float"], "ce": ["ce"], "l_aux_loss@GRAD": ["dy"]}
    grads = {"gate_prob@GRAD": ("gate_prob@GRAD", [tokens, experts])}
    return {"feeds": feeds, "ops": [("cal_aux_loss", ins, outs, attrs), ("cal_aux_loss_grad", grad_ins, grads, attrs)]}


def _moe(use_pad: bool) -> dict:
    """moe_gate_dispatch of 6 tokens over 4 experts (top 2, capacity 2: some tokens dropped), its grad op at fed
    dy and dcombine_weights, then moe_combine of the dispatched rows (scatter_index fed [s, k], as the kernel reads
    it) and its grad op at a fed dy."""
    tokens, experts, dim, k, capacity = 6, 4, 8, 2, 2
    rows = experts * capacity if use_pad else tokens * k
    feeds = {"x": ([tokens, dim], F32), "gate_logits": ([tokens, experts], F32), "corr_bias": ([experts], F32),
             "dy": ([rows, dim], F32), "dweights": ([tokens, k], F32), "expert_rows": ([tokens * k, dim], F32),
             "routes": ([tokens, k], "int32"), "dcombined": ([tokens, dim], F32)}
    attrs = {"k": ("_set_int64_attr", k), "capacity": ("_set_int64_attr", capacity), "use_pad": use_pad}
    outs = {"y": ("y", [rows, dim]), "combine_weights": ("combine_weights", [tokens, k]),
            "scatter_index": ("scatter_index", [k, tokens], "int32"), "expert_offset": ("expert_offset", [experts],
                                                                                      "int64"),
            "expert_id": ("expert_id", [tokens, k], "int32")}
    ins = {"x": ["x"], "gate_logits": ["gate_logits"], "corr_bias": ["corr_bias"]}
    grad_ins = {"combine_weights": ["combine_weights"], "scatter_index": ["scatter_index"],
                "expert_id": ["expert_id"], "y@GRAD": ["dy"], "combine_weights@GRAD": ["dweights"]}
    grads = {"x@GRAD": ("x@GRAD", [tokens, dim]), "gate_logits@GRAD": ("gate_logits@GRAD", [tokens, experts])}
    combine_ins = {"x": ["expert_rows"], "combine_weights": ["combine_weights"], "scatter_index": ["routes"]}
    combine_grads = {"x@GRAD": ("expert_rows@GRAD", [tokens * k, dim]),
                     "combine_weights@GRAD": ("combine_weights@GRAD", [tokens, k])}
    return {"feeds": feeds, "ops": [
        ("moe_gate_dispatch", ins, outs, attrs), ("moe_gate_dispatch_grad", grad_ins, grads, attrs),
        ("moe_combine", combine_ins, {"y": ("combined", [tokens, dim])}, {}),
        ("moe_combine_grad", {**combine_ins, "y@GRAD": ["dcombined"]}, combine_grads, {})]}


def aux_loss_composition(case: str) -> None:
    """Paddle's CPU numbers of its own unfused cal_aux_loss (math_cal_aux_loss: sums, clip, a detached scale) and
    of its gradient at the fed dy, on the case's feed: paddle_cpu_composition.npz."""
    from paddle.incubate.nn.functional.cal_aux_loss import math_cal_aux_loss

    directory, attrs = translated.OUT / case, CASES[case]["ops"][0][3]
    paddle.disable_static()
    with np.load(directory / "feed.npz") as archive:
        feed = {name: paddle.to_tensor(archive[name]) for name in archive.files}
    gate = paddle.to_tensor(feed["gate_prob"].numpy(), stop_gradient=False)
    loss, seqlen, ce = math_cal_aux_loss(gate, feed["dispatch_mask"], feed.get("tokens_mask"),
                                         feed.get("dispatch_tokens_mask"), attrs["num_experts"][1],
                                         attrs["use_group"], attrs["moe_k"][1], attrs["clip_min"])
    loss.backward(feed["dy"])
    np.savez_compressed(directory / "paddle_cpu_composition.npz", l_aux_loss=loss.numpy(), seqlen_float=seqlen.numpy(),
                        ce=ce.numpy(), gate_prob_grad=gate.grad.numpy())
    paddle.enable_static()


def dispatch_composition(case: str) -> None:
    """Paddle's CPU numbers of its own unfused moe_gate_dispatch (math_moe_gate_dispatch, the NPU path) with
    use_pad on the case's feed: paddle_cpu_composition.npz. Its combine weights include corr_bias, which the CUDA
    kernel's leave out."""
    from paddle.incubate.nn.functional.moe_gate_dispatch import math_moe_gate_dispatch

    directory, attrs = translated.OUT / case, CASES[case]["ops"][0][3]
    paddle.disable_static()
    with np.load(directory / "feed.npz") as archive:
        feed = {name: paddle.to_tensor(archive[name]) for name in ("x", "gate_logits", "corr_bias")}
    results = math_moe_gate_dispatch(*feed.values(), attrs["k"][1], attrs["capacity"][1], True)
    names = ("y", "combine_weights", "scatter_index", "expert_offset", "expert_id")
    np.savez_compressed(directory / "paddle_cpu_composition.npz", **{n: r.numpy() for n, r in zip(names, results)})
    paddle.enable_static()


CASES = {"cal_aux_loss_masks": _aux_loss(True), "cal_aux_loss_counts": _aux_loss(False),
         "moe_dispatch_combine_pad": _moe(True), "moe_dispatch_combine": _moe(False),
         "moe_combine_no_weight": _combine_no_weight(), "moe_dispatch_permute": _dispatch_permute(),
         "moe_dispatch_combine_auto": _auto()}
# each case's feed seed, the one its committed fixture was made with, so that rerunning a case rewrites the same feed
SEEDS = {"cal_aux_loss_masks": 310, "cal_aux_loss_counts": 311, "moe_dispatch_combine_pad": 312,
         "moe_dispatch_combine": 313, "moe_combine_no_weight": 400, "moe_dispatch_permute": 401,
         "moe_dispatch_combine_auto": 402}

if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    translated.CASES.update(CASES)
    for case in CASES:   # the cases named on the command line, or all
        if not sys.argv[1:] or case in sys.argv[1:]:
            print(f"{case}: {translated.write(case, SEEDS[case])}")
            if case.startswith("cal_aux_loss"):
                aux_loss_composition(case)
            if case == "moe_dispatch_combine_pad":
                dispatch_composition(case)
    sys.exit(0)
