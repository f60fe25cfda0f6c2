"""A small MoE block as PaddleNLP's MoE layers write it (softmax gate, top 2, moe_permute, each expert's silu FFN by
batched_gemm, moe_unpermute weighted by the gate), compiled by gradc's backward, against Paddle's CPU numbers of the
same block composed of dense ops (tools/paddle_moe_block.py): the loss and the gradients of x and of the three
weights, the gate's through the combine weights."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import gradc
from gradc import registry
from gradc.ir import VarType, to_var_type
from gradc.ops.infer import InferContext

DATA = Path(__file__).parent / "data" / "paddle" / "moe_block"


def _op(block, op_type: str, inputs: dict, outputs: dict, attrs: dict | None = None) -> None:
    """Append the op, its outputs declared as gradc's inference says (the backward reads their shapes)."""
    for names in outputs.values():
        for name in names:
            block.create_var(name, None, None)
    appended = block.append_op(op_type, inputs, outputs, attrs or {})
    for slot, (shape, dtype) in registry.get(op_type).infer(InferContext(appended, block)).items():
        for name in outputs.get(slot, []):
            block.var(name).shape, block.var(name).dtype = shape, dtype


def _block(feed: dict, counts: list[int]) -> gradc.Program:
    """The block over the fed x and weights, tokens_per_expert counted from the routes (PaddleNLP counts them on
    the host), each expert's rows padded to 2."""
    program = gradc.Program()
    block = program.global_block
    for name, value in feed.items():
        block.create_var(name, list(value.shape), to_var_type(value.dtype)).stop_gradient = False
    experts, padded = len(counts), [(count + 1) // 2 * 2 for count in counts]
    _op(block, "matmul_v2", {"X": ["x"], "Y": ["w_gate"]}, {"Out": ["logits"]})
    _op(block, "softmax", {"X": ["logits"]}, {"Out": ["probs"]}, {"axis": -1})
    _op(block, "top_k_v2", {"X": ["probs"]}, {"Out": ["top_probs"], "Indices": ["top_ids"]}, {"k": 2, "axis": -1})
    _op(block, "cast", {"X": ["top_ids"]}, {"Out": ["routes"]},
        {"in_dtype": int(VarType.INT64), "out_dtype": int(VarType.INT32)})
    _op(block, "moe_permute", {"hidden_states": ["x"], "expert_routemap_topk": ["routes"],
                               "expert_prob_topk": ["top_probs"]},
        {"hidden_states_unzipped": ["rows"], "zipped_expertwise_rowmap": ["rowmap"],
         "token_prob_unzipped": ["row_probs"], "scale_unzipped": ["row_scales"], "expert_indices": ["row_experts"]},
        {"num_experts": experts, "tokens_per_expert": counts, "padding_alignment": 2})
    _op(block, "batched_gemm", {"lhs": ["rows"], "rhs": ["w1"]}, {"output": ["hidden"]}, {"batch_sizes": padded})
    _op(block, "silu", {"X": ["hidden"]}, {"Out": ["activated"]})
    _op(block, "batched_gemm", {"lhs": ["activated"], "rhs": ["w2"]}, {"output": ["expert_out"]},
        {"batch_sizes": padded})
    _op(block, "moe_unpermute", {"hidden_states_unzipped": ["expert_out"], "zipped_expertwise_rowmap": ["rowmap"],
                                 "expert_routemap_topk": ["routes"], "token_prob_unzipped": ["row_probs"]},
        {"hidden_states": ["y"], "expert_prob_topk": ["y_probs"]},
        {"total_zipped_tokens_num": feed["x"].shape[0], "num_experts": experts, "using_weighted_combine": True})
    _op(block, "elementwise_mul", {"X": ["y"], "Y": ["y"]}, {"Out": ["squared"]})
    _op(block, "reduce_mean", {"X": ["squared"]}, {"Out": ["loss"]}, {"reduce_all": True})
    return program


def test_moe_block_of_permute_batched_gemm_and_unpermute_trains_as_paddles_composition():
    with np.load(DATA / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    with np.load(DATA / "expected.npz") as archive:
        paddle = {name: archive[name] for name in archive.files}
    experts = json.loads((DATA / "meta.json").read_text())["experts"]
    counts = np.bincount(paddle["routes"].reshape(-1), minlength=experts).tolist()
    assert min(counts) > 0 and any(count % 2 for count in counts)   # every expert used, padding rows present
    program = _block(feed, counts)
    gradc.append_backward(program, "loss", parameter_list=[])
    types = [op.type for op in program.global_block.ops]
    assert {"moe_unpermute_grad", "moe_unpermute"} <= set(types[types.index("moe_unpermute") + 1:])
    assert types.count("batched_gemm") >= 2 + 4   # the forward's and each grad's
    names = ["loss", "routes", *(f"{name}@GRAD" for name in ("x", "w_gate", "w1", "w2"))]
    got = dict(zip(names, gradc.Executor().run(program, feed, names, gradc.Scope())))
    np.testing.assert_array_equal(got["routes"], paddle["routes"])
    np.testing.assert_allclose(got["loss"], paddle["loss"], rtol=1e-12)
    for name in ("x", "w_gate", "w1", "w2"):
        np.testing.assert_allclose(got[f"{name}@GRAD"], paddle[f"{name}@GRAD"], rtol=1e-10, atol=1e-12)
    assert np.abs(paddle["w_gate@GRAD"]).max() > 1e-3   # the gate learns through the combine weights
