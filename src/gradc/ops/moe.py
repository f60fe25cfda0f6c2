"""The mixture-of-experts ops of PaddleNLP's MoE models (paddle.incubate.nn.functional), GPU-only in Paddle 3.3.1;
gradc follows the CUDA kernels' formulas.

moe_gate_dispatch: x [s, d] routed by gate_logits [s, e] (taken as probabilities: the kernel applies no softmax) and
corr_bias [e] (float32; it moves the choice only). Each token picks its top k experts by probability + bias (ties:
the lower expert), combine_weights [s, k] = their probabilities, expert_id [s, k]. The s k choices, taken row-major,
are sorted stably by expert (with use_pad by expert, then by the choice's rank j); expert_offset [e] (int64) counts
the choices of experts <= e. A choice at place p of its expert's run is kept while p < capacity, at row d of the
sorted order (use_pad: row expert * capacity + p); scatter_index [k, s] (int32) holds that row, y that row of x;
a dropped choice gets scatter_index 0 and combine weight 0.
moe_gate_dispatch_permute: the use_pad dispatch with y [e / world_size, world_size, capacity, d], expert
e = rank (e / world_size) + local expert at y[local, rank] (scatter_index still e capacity + place); its grad reads
y@GRAD back in that layout. y is [e capacity, d] with use_pad, else [s k, d]
(zeros where nothing lands). Grad (moe_gate_dispatch_grad): x@GRAD[t] = sum of y@GRAD[scatter_index[j, t]] over
the choices with combine weight > 0; gate_logits@GRAD[t, expert_id[t, j]] = combine_weights@GRAD[t, j] there.

moe_combine: y [s, d] = sum over j of combine_weights[t, j] x[scatter_index[t, j]] (scatter_index [s, k] as the
kernel reads it: the transpose of moe_gate_dispatch's); its grad is the adjoint in x and combine_weights.
moe_gate_dispatch_auto and moe_combine_auto (the ops Paddle's API picks for auto-parallel tensors) compute the same.
moe_combine_no_weight: y [s, d] = sum over j of x[scatter_index[t, j]], x [s k, d]; combine_weight is an operand the
kernel never reads (nor epsilon), so it has no gradient; x@GRAD[scatter_index[t, j]] += y@GRAD[t].

moe_gate_dispatch_partial_nosoftmaxtopk: the dispatch of given routes (expert_id [s, k] int32, combine_weights
[s, k]: no softmax, no top k; the kernel reads combine_weights as float32 whatever its dtype, gradc keeps its dtype)
to the experts expert_start_index .. expert_end_index - 1 of num_experts (a rank's share); the rules are
gradc.executor.kernels.moe_partial's. Its grad: x@GRAD[t] = sum of y@GRAD[scatter_index[j, t]] and
combine_weights@GRAD = combine_weights_out@GRAD, both over the choices with combine_weights_out > 0.

cal_aux_loss: the load-balancing loss of a router. gate_prob [s, e] (each token's probabilities over the e local
experts, s >= e, e <= 1024), dispatch_mask int64 [s, e] (summed over tokens) or [e]: how many tokens each expert took.

    seqlen_float = sum(dispatch_tokens_mask)             with dispatch_tokens_mask (bool [n]), else
                   sum(tokens_mask)                      with tokens_mask ([s], gate_prob's dtype), else
                   s e / num_experts;                    then at least clip_min
    ce = counts / seqlen_float,  me = sum over tokens of gate_prob / seqlen_float
    l_aux_loss = scale num_experts sum(ce me) (/ moe_k with use_group),
    scale = seqlen_float / max(sum(tokens_mask), clip_min) when both masks are given and n != s, else 1

Its grad (cal_aux_loss_grad) reads the saved ce and seqlen_float: gate_prob@GRAD[i, j] = dl num_experts ce[j] /
seqlen_float (/ moe_k), without the scale: the kernel's "forward local, backward global" loss, which Paddle's own
composition (math_cal_aux_loss) writes as l + (scale - 1) stop_gradient(l). Second derivatives: gradc.ops.moe_double.
"""

from __future__ import annotations

from ..ir import AttrType, VarType, dtype_name
from ..makers import grad_op
from ..registry import defop, typed
from .infer import check_float

AUX_ATTRS = {"num_experts": typed(0, AttrType.LONG), "use_group": False, "moe_k": typed(1, AttrType.LONG),
             "clip_min": 0.0}


def _aux_infer(ctx):
    check_float(ctx, "gate_prob")
    dtype, gate = ctx.dtype("gate_prob"), ctx.shape("gate_prob")
    if ctx.dtype("dispatch_mask") not in (VarType.INT64, None):
        ctx.fail(f"dispatch_mask must be int64, got {dtype_name(ctx.dtype('dispatch_mask'))}")
    if ctx.has("tokens_mask") and ctx.dtype("tokens_mask") not in (dtype, None):
        ctx.fail(f"tokens_mask must have gate_prob's dtype {dtype_name(dtype)}, got "
                 f"{dtype_name(ctx.dtype('tokens_mask'))}")
    if ctx.has("dispatch_tokens_mask") and ctx.dtype("dispatch_tokens_mask") not in (VarType.BOOL, None):
        ctx.fail(f"dispatch_tokens_mask must be bool, got {dtype_name(ctx.dtype('dispatch_tokens_mask'))}")
    if ctx.attr("num_experts") <= 0 or ctx.attr("moe_k") <= 0:
        ctx.fail(f"num_experts={ctx.attr('num_experts')} and moe_k={ctx.attr('moe_k')} must be positive")
    if gate is None:
        return {"l_aux_loss": ([], dtype), "seqlen_float": ([], dtype), "ce": ([-1], dtype)}
    if len(gate) != 2 or (min(gate) >= 0 and (gate[0] < gate[1] or gate[1] > 1024)):
        ctx.fail(f"gate_prob must be [tokens, experts] with tokens >= experts and experts <= 1024, got {gate}")
    mask = ctx.shape("dispatch_mask")
    if mask is not None and (len(mask) not in (1, 2) or mask[-1] not in (gate[1], -1) or gate[1] < 0):
        ctx.fail(f"dispatch_mask must be [experts] or [tokens, experts] with gate_prob's {gate[1]} experts, got {mask}")
    for slot, length in (("tokens_mask", gate[0]), ("dispatch_tokens_mask", None)):
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and (len(shape) != 1 or length not in (None, shape[0], -1) and shape[0] >= 0):
            ctx.fail(f"{slot} must be 1-D{f' [{length}]' if length is not None else ''}, got {shape}")
    return {"l_aux_loss": ([], dtype), "seqlen_float": ([], dtype), "ce": ([gate[1]], dtype)}


defop("cal_aux_loss", ["gate_prob", "dispatch_mask", "tokens_mask?", "dispatch_tokens_mask?"],
      ["l_aux_loss", "seqlen_float", "ce"], attrs=AUX_ATTRS, infer=_aux_infer,
      no_grad_inputs=["dispatch_mask", "tokens_mask", "dispatch_tokens_mask"], no_grad_outputs=["seqlen_float", "ce"],
      grad=grad_op("gate_prob", "seqlen_float", "ce"))


def _dispatch_infer(ctx, pad: bool | None = None):
    check_float(ctx, "x")
    check_float(ctx, "gate_logits")
    if ctx.has("corr_bias") and ctx.dtype("corr_bias") not in (ctx.dtype("gate_logits"), None):
        ctx.fail(f"corr_bias must have gate_logits' dtype {dtype_name(ctx.dtype('gate_logits'))}")
    k, capacity = ctx.attr("k"), ctx.attr("capacity")
    x, gate = ctx.shape("x"), ctx.shape("gate_logits")
    if k <= 0 or capacity <= 0:
        ctx.fail(f"k={k} and capacity={capacity} must be positive")
    if x is None or gate is None:
        return {}
    if len(x) != 2 or len(gate) != 2 or x[0] != gate[0] or 0 <= gate[1] < k:
        ctx.fail(f"x must be [tokens, dim] and gate_logits [tokens, experts >= k={k}], got {x} and {gate}")
    bias = ctx.shape("corr_bias") if ctx.has("corr_bias") else None
    if bias is not None and bias != [gate[1]]:
        ctx.fail(f"corr_bias must be [{gate[1]}] (one per expert), got {bias}")
    rows = gate[1] * capacity if (ctx.attr("use_pad") if pad is None else pad) else x[0] * k
    choices = [x[0], k]
    return {"y": ([rows, x[1]], ctx.dtype("x")), "combine_weights": (choices, ctx.dtype("gate_logits")),
            "scatter_index": ([k, x[0]], VarType.INT32), "expert_offset": ([gate[1]], VarType.INT64),
            "expert_id": (choices, VarType.INT32)}


for dispatch in ("moe_gate_dispatch", "moe_gate_dispatch_auto"):   # _auto: the twin for auto-parallel tensors
    defop(dispatch, ["x", "gate_logits", "corr_bias?"],
          ["y", "combine_weights", "scatter_index", "expert_offset", "expert_id"],
          attrs={"k": typed(2, AttrType.LONG), "capacity": typed(1, AttrType.LONG), "use_pad": True},
          infer=_dispatch_infer, no_grad_inputs=["corr_bias"],
          no_grad_outputs=["scatter_index", "expert_offset", "expert_id"],
          grad=grad_op("combine_weights", "scatter_index", "expert_id"))


def _permute_infer(ctx):
    world, experts = ctx.attr("world_size"), (ctx.shape("gate_logits") or [0, -1])[-1]
    if world <= 0 or experts >= 0 and experts % world:
        ctx.fail(f"world_size={world} must be positive and divide gate_logits' {experts} experts")
    outs = _dispatch_infer(ctx, pad=True)
    if "y" in outs:
        dim = outs["y"][0][1]
        outs["y"] = ([experts // world if experts >= 0 else -1, world, ctx.attr("capacity"), dim], ctx.dtype("x"))
    return outs


defop("moe_gate_dispatch_permute", ["x", "gate_logits", "corr_bias?"],
      ["y", "combine_weights", "scatter_index", "expert_offset", "expert_id"],
      attrs={"k": typed(2, AttrType.LONG), "capacity": typed(1, AttrType.LONG), "world_size": typed(1, AttrType.LONG)},
      infer=_permute_infer, no_grad_inputs=["corr_bias"],
      no_grad_outputs=["scatter_index", "expert_offset", "expert_id"],
      grad=grad_op("combine_weights", "scatter_index", "expert_id"))


def _combine_infer(ctx):
    check_float(ctx, "x")
    if ctx.dtype("combine_weights") not in (ctx.dtype("x"), None):
        ctx.fail(f"combine_weights must have x's dtype {dtype_name(ctx.dtype('x'))}")
    if ctx.dtype("scatter_index") not in (VarType.INT32, None):
        ctx.fail(f"scatter_index must be int32, got {dtype_name(ctx.dtype('scatter_index'))}")
    x, weights, index = ctx.shape("x"), ctx.shape("combine_weights"), ctx.shape("scatter_index")
    if x is None or weights is None:
        return {}
    if len(x) != 2 or len(weights) != 2 or index not in (None, weights):
        ctx.fail(f"x must be [rows, dim], combine_weights [tokens, k] and scatter_index shaped like it, got {x}, "
                 f"{weights} and {index}")
    return {"y": ([weights[0], x[1]], ctx.dtype("x"))}


for combine, fixed in (("moe_combine", ["scatter_index"]), ("moe_combine_auto", [])):
    # moe_combine_auto_grad declares scatter_index@GRAD as Paddle's does; an int32 var is never differentiated
    defop(combine, ["x", "combine_weights", "scatter_index"], ["y"], infer=_combine_infer,
          no_grad_inputs=fixed, grad=grad_op("x", "combine_weights", "scatter_index"))


def _combine_no_weight_infer(ctx):
    check_float(ctx, "x")
    if ctx.dtype("scatter_index") not in (VarType.INT32, None):
        ctx.fail(f"scatter_index must be int32, got {dtype_name(ctx.dtype('scatter_index'))}")
    x, index = ctx.shape("x"), ctx.shape("scatter_index")
    if x is None or index is None:
        return {}
    if len(x) != 2 or len(index) != 2 or min(x[0], *index) >= 0 and x[0] != index[0] * index[1]:
        ctx.fail(f"x must be [tokens * k, dim] and scatter_index [tokens, k], got {x} and {index}")
    return {"y": ([index[0], x[1]], ctx.dtype("x"))}


defop("moe_combine_no_weight", ["x", "combine_weight", "scatter_index"], ["y"], attrs={"epsilon": 1e-15},
      infer=_combine_no_weight_infer, no_grad_inputs=["combine_weight", "scatter_index"],
      grad=grad_op("x", "combine_weight", "scatter_index"))


def _partial_infer(ctx):
    """moe_gate_dispatch_partial_nosoftmaxtopk: the routing of gradc.executor.kernels.moe_partial."""
    check_float(ctx, "x")
    if ctx.dtype("expert_id") not in (VarType.INT32, None):
        ctx.fail(f"expert_id must be int32 (the kernel reads int), got {dtype_name(ctx.dtype('expert_id'))}")
    k, capacity, experts = ctx.attr("k"), ctx.attr("capacity"), ctx.attr("num_experts")
    start, end = ctx.attr("expert_start_index"), ctx.attr("expert_end_index")
    if min(k, capacity) <= 0 or not 0 <= start < end <= experts:
        ctx.fail(f"k={k} and capacity={capacity} must be positive and 0 <= expert_start_index={start} < "
                 f"expert_end_index={end} <= num_experts={experts}")
    x, weights, ids = ctx.shape("x"), ctx.shape("combine_weights"), ctx.shape("expert_id")
    if x is not None and (len(x) != 2 or weights not in (None, [x[0], k]) or ids not in (None, [x[0], k])):
        ctx.fail(f"x must be [tokens, dim] and combine_weights, expert_id [tokens, k={k}], got {x}, {weights} and "
                 f"{ids}")
    tokens, dim = x if x is not None else (-1, -1)
    rows = (end - start) * capacity if ctx.attr("use_pad") else -1
    return {"y": ([rows, dim], ctx.dtype("x")), "combine_weights_out": ([tokens, k], ctx.dtype("combine_weights")),
            "scatter_index": ([k, tokens], VarType.INT32), "scatter_index_rev": ([rows], VarType.INT32),
            "expert_offset": ([experts], VarType.INT64), "expert_nums_local": ([experts], VarType.INT64)}


defop("moe_gate_dispatch_partial_nosoftmaxtopk", ["x", "combine_weights", "expert_id"],
      ["y", "combine_weights_out", "scatter_index", "scatter_index_rev", "expert_offset", "expert_nums_local"],
      attrs={"k": typed(2, AttrType.LONG), "capacity": typed(1, AttrType.LONG),
             "num_experts": typed(1, AttrType.LONG), "use_pad": True, "expert_start_index": typed(0, AttrType.LONG),
             "expert_end_index": typed(1, AttrType.LONG), "reverse_token_drop": False},
      infer=_partial_infer, no_grad_inputs=["expert_id"],
      no_grad_outputs=["scatter_index", "scatter_index_rev", "expert_offset", "expert_nums_local"],
      grad=grad_op("combine_weights_out", "scatter_index", "scatter_index_rev", "expert_offset", "expert_nums_local"))
