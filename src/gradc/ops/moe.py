"""The mixture-of-experts ops of PaddleNLP's MoE models (paddle.incubate.nn.functional), GPU-only in Paddle 3.3.1;
gradc follows the CUDA kernels' formulas.

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
