"""gradc's op definitions against Paddle 3.3.1's (tests/data/paddle/op_protos.json, made by
tools/paddle_op_protos.py): every slot and non-extra attribute Paddle defines exists in gradc's OpDef
with the same name, flags and wire type, and gradc declares nothing Paddle lacks.

Paddle's "extra" attributes (use_mkldnn, op_callstack, ...) are runtime hints it strips from new ops:
gradc carries them through files untouched and does not declare them. Grad ops have no proto in
Paddle; their records (from Paddle's grad makers) give slot names and duplicability, not defaults.
"""

from __future__ import annotations

import json
import struct
from functools import cache
from pathlib import Path

from gradc import registry
from gradc.ops.families import FAMILIES

DATA = Path(__file__).parent / "data" / "paddle"
PENDING = DATA / "conformance_pending.txt"
# ops gradc registers that Paddle 3.3.1 does not, and why
GRADC_ONLY = {"fill_zeros_like": "older Paddle programs zero-fill grads with it",
              "c_allreduce_sum": "Paddle 2.x programs hold it (c_identity's grad then); 3.3.1 has it in PIR only",
              **dict.fromkeys(("c_allgather", "c_reducescatter", "c_broadcast", "c_allreduce_max", "c_allreduce_min",
                               "c_allreduce_prod", "c_reduce_sum", "c_reduce_max", "c_reduce_min", "c_reduce_prod"),
                              "Paddle 2.x's static sharding and data-parallel programs hold it (3.3.1 writes "
                              "all_gather, reduce_scatter, broadcast, all_reduce, reduce); slots of its 2.x OpMaker"),
              "multiclass_nms2": "Paddle 2.x detection models hold it (3.3.1 registers multiclass_nms and _nms3 only)",
              "reshard": "auto-parallel's PIR dist_op.reshard, which has no legacy op; gradc's holds its op_dist_attr",
              **dict.fromkeys(("fused_gemm_epilogue", "fused_gemm_epilogue_grad", "fused_feedforward",
                               "fused_feedforward_grad", "fused_attention", "fused_attention_grad"),
                              "3.3.1 registers it in CUDA builds only; gradc has the slots of its OpMaker"),
              **dict.fromkeys(("fused_batch_norm_act", "fused_batch_norm_act_grad", "fused_bn_add_activation",
                               "fused_bn_add_activation_grad"),
                              "3.3.1 registers it in CUDA builds only (a PIR op on CPU); gradc has the slots its "
                              "phi_ops_map gives the legacy op"),
              "fusion_seqexpand_concat_fc": "3.3.1's seq_concat_fc_fuse_pass still writes it, but 3.3.1 registers no "
                                            "such op; gradc has the slots of its last OpMaker",
              "moe_unpermute_grad": "Paddle 3.3.1 has no grad op of moe_unpermute; gradc's is its adjoint",
              "sparse_coalesce_grad": "Paddle's sparse coalesce has no backward; gradc's is each entry's site's",
              "sparse_maxpool_grad_grad": "Paddle's sparse maxpool has no double grad; gradc's: its adjoint",
              **dict.fromkeys((op for family in ("ms_deform_attn", "pointnet2", "voxelize", "bev_pool", "rotated_boxes",
                                                 "assign_score") for op in FAMILIES[family]),
                              "a custom C++ op of Paddle's model suites (PD_BUILD_OP), not Paddle's: docs/ext-ops.md"),
              **dict.fromkeys(("warpctc_grad_grad", "warprnnt_grad_grad"),
                              "Paddle has no second derivative of the sequence losses: gradc's takes a complex step "
                              "through the kernel where sizes are known at run time only"),
              **dict.fromkeys(("lstm_grad_grad", "gru_grad_grad", "rnn_grad_grad", "cumprod_grad_grad",
                               "reduce_prod_grad_grad", "put_along_axis_grad_grad"),
                              "Paddle has no derivative of these grads: gradc's takes them along any number of "
                              "directions, on nested duals (gradc.ops.directional_double)"),
              **dict.fromkeys(("grid_sampler_grad_grad", "deformable_conv_grad_grad", "deformable_conv_v1_grad_grad",
                               "ms_deform_attn_grad_grad", "ms_deformable_attn_grad_grad"),
                              "Paddle has no such op: gradc's holds the bilinear weights' derivatives along one or"
                              " more directions of the sampling positions (gradc.ops.multilinear_double)"),
              "bev_pool_v2_last_writes": "gradc's own op: which of bev_pool_v2_bkwd's writes stay, for its "
                                         "derivative (gradc.ops.bev_pool_double)",
              **dict.fromkeys(("array_pop", "slice_array"), "a PIR-only op of 3.3.1 (dy2static's list.pop() and "
                              "list[a:b]): gradc's has the slots of its PIR op"),
              **dict.fromkeys(("enable_check_model_nan_inf", "enable_check_model_nan_inf_grad",
                               "disable_check_model_nan_inf", "disable_check_model_nan_inf_grad"),
                              "a PIR-only op of 3.3.1 (paddle.amp.debugging): gradc's has the slots of its PIR op")}
# differences where Paddle's record does not say what its programs hold, and why
PADDLE_RECORD_SLIPS = {"einsum_grad: x_shape duplicable: gradc True, Paddle False":
                       "Paddle's einsum grad maker fills x_shape with einsum's XShape: one var per operand",
                       **dict.fromkeys((f"batch_norm_grad_grad: inputs has {slot}, which Paddle lacks"
                                        for slot in ("Mean", "Variance")),
                                       "Paddle's maker passes the running statistics where use_global_stats is set "
                                       "(its record's op had it unset)")}


@cache
def paddle_ops() -> dict:
    return json.loads((DATA / "op_protos.json").read_text())["ops"]


def _float32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def _same_default(kind: str, theirs, ours) -> bool:
    if kind == "FLOAT":
        return not isinstance(ours, bool) and isinstance(ours, (int, float)) and _float32(ours) == theirs
    if kind == "FLOATS":
        return isinstance(ours, list) and [_float32(v) for v in ours] == theirs
    return ours == theirs and type(ours) is type(theirs)


def _slot_findings(theirs: dict, opdef) -> list[str]:
    """Paddle's slots against gradc's. gradc may leave out a slot Paddle marks extra (a runtime hint); one it
    declares has Paddle's flags."""
    found = []
    is_proto = theirs.get("proto", True)
    for side in ("inputs", "outputs"):
        ours = getattr(opdef, side)
        slots = {s["name"]: s for s in theirs[side]}
        found += [f"{side} lacks {name}" for name, slot in slots.items() if name not in ours and not slot.get("extra")]
        found += [f"{side} has {name}, which Paddle lacks" for name in ours if name not in slots]
        for name, slot in slots.items():
            if name not in ours:
                continue
            mine = opdef.slot(name)
            if mine.duplicable != bool(slot.get("duplicable")):
                found.append(f"{name} duplicable: gradc {mine.duplicable}, Paddle {bool(slot.get('duplicable'))}")
            if is_proto and mine.dispensable != bool(slot.get("dispensable")):
                found.append(f"{name} dispensable: gradc {mine.dispensable}, Paddle {bool(slot.get('dispensable'))}")
            if is_proto and side == "outputs" and mine.extra != bool(slot.get("extra")):
                found.append(f"{name} extra: gradc {mine.extra}, Paddle {bool(slot.get('extra'))}")
    return found


def _attr_findings(theirs: dict, opdef) -> list[str]:
    """Paddle's attributes against gradc's. gradc may also declare one Paddle marks extra (a runtime hint
    it honours, such as dropout's seed): then with Paddle's type."""
    found = []
    for name, attr in theirs["attrs"].items():
        if name not in opdef.attrs:
            found += [] if attr.get("extra") else [f"attr {name} missing"]
        elif attr["type"] is not None and opdef.attr_types[name].name != attr["type"]:
            found.append(f"attr {name} type: gradc {opdef.attr_types[name].name}, Paddle {attr['type']}")
        elif "default" in attr and not _same_default(attr["type"], attr["default"], opdef.attrs[name]):
            found.append(f"attr {name} default: gradc {opdef.attrs[name]!r}, Paddle {attr['default']!r}")
    found += [f"attr {name}: Paddle has no such attribute" for name in opdef.attrs if name not in theirs["attrs"]]
    return found


def findings() -> set[str]:
    """'op: what differs' for every difference between gradc's registry and Paddle's definitions."""
    ops = paddle_ops()
    found = set()
    for op_type, opdef in registry.OPS.items():
        theirs = ops.get(op_type)
        if theirs is None or not theirs.get("registered"):
            if op_type not in GRADC_ONLY:
                found.add(f"{op_type}: not a Paddle 3.3.1 op")
            continue
        if "inputs" not in theirs:   # registered, with slots no program of Paddle's shows (its sparse grad ops)
            continue
        found.update(f"{op_type}: {f}" for f in _slot_findings(theirs, opdef) + _attr_findings(theirs, opdef))
    return found - PADDLE_RECORD_SLIPS.keys()


def pending() -> set[str]:
    """Known differences still to fix, one per line (the to-do list this test burns down)."""
    lines = PENDING.read_text().splitlines() if PENDING.exists() else []
    return {line for line in lines if line and not line.startswith("#")}
