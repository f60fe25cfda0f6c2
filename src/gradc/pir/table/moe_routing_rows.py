"""Rows: the MoE index ops (gradc.ops.moe_routing), named as Paddle 3.3.1's translation of their legacy ops names
them (tools/paddle_moe_routing_translated.py). int_bincount's dtype is an i64 holding the legacy VarType code, as the
translator keeps it."""

from __future__ import annotations

from . import row

ROWS = [
    row("pd_op.number_count", "number_count", "numbers:numbers", "out:Out", "upper_range:i32"),
    row("pd_op.assign_pos", "assign_pos", "x:X cum_count:cum_count eff_num_len:eff_num_len", "out:Out"),
    row("pd_op.limit_by_capacity", "limit_by_capacity", "expert_count:expert_count capacity:capacity", "out:Out",
        "n_worker:i32"),
    row("pd_op.prune_gate_by_capacity", "prune_gate_by_capacity", "gate_idx:GateIdx expert_count:ExpertCount",
        "out_gate_idx:NewGateIdx", "n_expert:i64 n_worker:i64"),
    row("pd_op.random_routing", "random_routing", "prob:Prob topk_value:TopK_Value topk_idx:TopK_Idx", "out:Out"),
    row("pd_op.int_bincount", "int_bincount", "x:x", "out:out", "low:i64 high:i64 dtype:i64"),
    row("pd_op.expand_modality_expert_id", "expand_modality_expert_id", "expert_id:expert_id",
        "expert_id_out:expert_id_out",
        "num_expert_per_modality:i64 group_size:i64 modality_offset:i64 is_group_expert:bool"),
    row("pd_op.build_src_rank_and_local_expert_id", "build_src_rank_and_local_expert_id",
        "expert_num_global_tensor:expert_num_global_tensor", "vector:vector local_expert_id:local_expert_id",
        "expert_num_global:i64s num_local_experts:i64"),
    *(row(f"pd_op.{exchange}", exchange, "x:X local_count:local_count global_count:global_count", "out:Out",
          "ring_id:i32") for exchange in ("global_scatter", "global_gather")),
]
