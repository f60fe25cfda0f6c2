"""The MoE token permutation of Paddle 3.3.1 (paddle.nn.functional.moe_permute / moe_unpermute) and the grouped
GEMM of its experts (paddle.incubate.nn.functional.batched_gemm), GPU-only; gradc follows the CUDA kernels.

moe_permute: hidden_states [s, d] routed by expert_routemap_topk [s, k] (int32, -1: no expert) with
expert_prob_topk [s, k]. Expert e owns rows offset[e] .. offset[e] + tokens_per_expert[e] of hidden_states_unzipped,
offset[e] = sum over i < e of tokens_per_expert[i] rounded up to padding_alignment (a row count, though the API's
docstring says bytes); its tokens fill them in token order. zipped_expertwise_rowmap [s, num_experts] (int32) holds
each token's row per expert (-1: none), token_prob_unzipped [rows] the row's probability, scale_unzipped the row's
scale (the float8 path; [rows, 0] without one), expert_indices [rows] (int32, return_expert_indices) the row's expert;
padding rows are zeros (-1 in expert_indices). rows = the padded total, or override_buffer_size when positive. The
kernel trusts tokens_per_expert; gradc refuses counts that miss the routes, and a token that lists an expert twice.

moe_unpermute: hidden_states [total_zipped_tokens_num, d] = sum over experts e with a row r of the token of
hidden_states_unzipped[r] (times token_prob_unzipped[r] with using_weighted_combine), and expert_prob_topk [s, k]
the probability of the row of each choice (0 where the choice is -1); use_mix_precision only rounds (gradc sums
in float64).

Paddle 3.3.1 registers no grad op for either (nor for batched_gemm); gradc's makers are its own:
    moe_permute: its adjoint is moe_unpermute (unweighted) of the row grads and the row probability grads
    moe_unpermute: moe_unpermute_grad (gradc's op), the adjoint: row r of token t gets w hidden_states@GRAD[t]
                   (w = its probability, or 1), its probability gets expert_prob_topk@GRAD of its choice (plus
                   <row, hidden_states@GRAD[t]> when weighted); padding rows get zeros
    batched_gemm: batched_gemm again (so every order is batched_gemm's)
Second derivatives: gradc.ops.moe_permute_double.

batched_gemm: lhs [M, K] in groups of batch_sizes rows; out_i = lhs_i rhs[i] (rhs [E, K, N]; trans_rhs: rhs [E, N, K]
transposed), out [M, N]; with trans_lhs, rhs [M, N] in the same groups and out [E, K, N], out[i] = lhs_i^T rhs_i
(trans_rhs ignored).
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, AttrType, VarType, dtype_name
from ..registry import defop, grad_op, typed
from .composite import Formula, first
from .infer import check_float

PERMUTE_ATTRS = {"num_experts": 0, "tokens_per_expert": typed([], AttrType.INTS), "padding_alignment": 1,
                 "do_gather": True, "using_ue8m0_scale": False, "return_expert_indices": False,
                 "override_buffer_size": -1}
UNPERMUTE_ATTRS = {"total_zipped_tokens_num": 0, "num_experts": 0, "use_mix_precision": True,
                   "using_weighted_combine": False}


def permuted_rows(ctx_attr) -> int:
    """hidden_states_unzipped's rows: each expert's count rounded up to padding_alignment, or the override."""
    if ctx_attr("override_buffer_size") > 0:
        return ctx_attr("override_buffer_size")
    align = ctx_attr("padding_alignment")
    return sum((count + align - 1) // align * align for count in ctx_attr("tokens_per_expert"))


def _routes(ctx, routes: str, probs: str, tokens) -> None:
    if ctx.dtype(routes) not in (VarType.INT32, None):
        ctx.fail(f"{routes} must be int32, got {dtype_name(ctx.dtype(routes))}")
    route, prob = ctx.shape(routes), ctx.shape(probs)
    if route is not None and (len(route) != 2 or prob not in (None, route) or tokens not in (None, -1, route[0])):
        ctx.fail(f"{routes} and {probs} must be [tokens{f' = {tokens}' if tokens else ''}, k], got {route} and "
                 f"{prob}")


def _permute_infer(ctx):
    check_float(ctx, "hidden_states")
    experts, counts, align = ctx.attr("num_experts"), ctx.attr("tokens_per_expert"), ctx.attr("padding_alignment")
    if not 0 < experts <= 64 or len(counts) != experts or min(counts, default=0) < 0 or align <= 0:
        ctx.fail(f"num_experts={experts} must be 1 .. 64 with one count of tokens_per_expert each (got {counts}) and "
                 f"padding_alignment={align} positive")
    x = ctx.shape("hidden_states")
    if x is not None and len(x) != 2:
        ctx.fail(f"hidden_states must be [tokens, dim], got {x}")
    _routes(ctx, "expert_routemap_topk", "expert_prob_topk", x and x[0])
    rows, dim = permuted_rows(ctx.attr), x[1] if x else -1
    scale = ctx.shape("scale") if ctx.has("scale") else None
    scale_dtype = ctx.dtype("scale") if ctx.has("scale") else VarType.FP32
    return {"hidden_states_unzipped": ([rows, dim], ctx.dtype("hidden_states")),
            "zipped_expertwise_rowmap": ([x[0] if x else -1, experts], VarType.INT32),
            "token_prob_unzipped": ([rows], ctx.dtype("expert_prob_topk")),
            "scale_unzipped": ([rows, scale[1] if scale else 0], scale_dtype),
            "expert_indices": ([rows], VarType.INT32)}


def _permute_grad(g):
    """The adjoint of the permutation: moe_unpermute (unweighted) of the row grads and row probability grads."""
    f = Formula(g)
    wanted = {slot: first(g.IG(slot)) for slot in ("hidden_states", "expert_prob_topk")}
    if all(name in (None, EMPTY_VAR) for name in wanted.values()):
        return []
    rows_grad, probs_grad = (first(g.OG(slot)) or f.fill_like(first(g.O(slot)), 0.0)
                             for slot in ("hidden_states_unzipped", "token_prob_unzipped"))
    ins = {"hidden_states_unzipped": rows_grad, "zipped_expertwise_rowmap": first(g.O("zipped_expertwise_rowmap")),
           "expert_routemap_topk": first(g.I("expert_routemap_topk")), "token_prob_unzipped": probs_grad}
    tokens = (g.shape(first(g.I("hidden_states"))) or [-1])[0]
    attrs = {"total_zipped_tokens_num": tokens, "num_experts": g.attr("num_experts"), "use_mix_precision": True,
             "using_weighted_combine": False}
    outs = {slot: name if name not in (None, EMPTY_VAR) else g.tmp(first(g.I(slot))) for slot, name in wanted.items()}
    f.emit("moe_unpermute", ins, outs, attrs)
    return f.ops


defop("moe_permute", ["hidden_states", "scale?", "expert_routemap_topk", "expert_prob_topk"],
      ["hidden_states_unzipped", "zipped_expertwise_rowmap", "token_prob_unzipped", "scale_unzipped",
       "expert_indices"], attrs=PERMUTE_ATTRS, infer=_permute_infer, grad=_permute_grad,
      no_grad_inputs=["scale", "expert_routemap_topk"],
      no_grad_outputs=["zipped_expertwise_rowmap", "scale_unzipped", "expert_indices"])


def _unpermute_infer(ctx):
    check_float(ctx, "hidden_states_unzipped")
    tokens, experts = ctx.attr("total_zipped_tokens_num"), ctx.attr("num_experts")
    if not 0 < experts <= 64 or tokens < -1:
        ctx.fail(f"num_experts={experts} must be 1 .. 64 and total_zipped_tokens_num={tokens} not negative")
    rows, rowmap = ctx.shape("hidden_states_unzipped"), ctx.shape("zipped_expertwise_rowmap")
    if ctx.dtype("zipped_expertwise_rowmap") not in (VarType.INT32, None):
        ctx.fail(f"zipped_expertwise_rowmap must be int32, got {dtype_name(ctx.dtype('zipped_expertwise_rowmap'))}")
    if rowmap is not None and rowmap != [tokens, experts] and min(rowmap) >= 0:
        ctx.fail(f"zipped_expertwise_rowmap must be [total_zipped_tokens_num, num_experts] = [{tokens}, {experts}], "
                 f"got {rowmap}")
    probs = ctx.shape("token_prob_unzipped")
    if rows is not None and (len(rows) != 2 or probs is not None and probs not in ([rows[0]], [rows[0], 1])):
        ctx.fail(f"hidden_states_unzipped must be [rows, dim] and token_prob_unzipped [rows], got {rows} and {probs}")
    _routes(ctx, "expert_routemap_topk", "expert_routemap_topk", tokens)
    topk = (ctx.shape("expert_routemap_topk") or [tokens, -1])[1]
    return {"hidden_states": ([tokens, rows[1] if rows else -1], ctx.dtype("hidden_states_unzipped")),
            "expert_prob_topk": ([tokens, topk], ctx.dtype("token_prob_unzipped"))}


defop("moe_unpermute", ["hidden_states_unzipped", "zipped_expertwise_rowmap", "expert_routemap_topk",
                        "token_prob_unzipped"], ["hidden_states", "expert_prob_topk"], attrs=UNPERMUTE_ATTRS,
      infer=_unpermute_infer, no_grad_inputs=["zipped_expertwise_rowmap", "expert_routemap_topk"],
      grad=grad_op("hidden_states_unzipped", "zipped_expertwise_rowmap", "expert_routemap_topk",
                   "token_prob_unzipped"))


def _gemm_infer(ctx):
    check_float(ctx, "lhs")
    if ctx.dtype("rhs") not in (ctx.dtype("lhs"), None):
        ctx.fail(f"rhs must have lhs's dtype {dtype_name(ctx.dtype('lhs'))}, got {dtype_name(ctx.dtype('rhs'))}")
    sizes, lhs, rhs = ctx.attr("batch_sizes"), ctx.shape("lhs"), ctx.shape("rhs")
    if not sizes or min(sizes) < 0:
        ctx.fail(f"batch_sizes must list each group's rows, none negative, got {sizes}")
    if lhs is None or rhs is None:
        return {"output": (None, ctx.dtype("lhs"))}
    total = sum(sizes)
    if len(lhs) != 2 or lhs[0] not in (-1, total):
        ctx.fail(f"lhs must be [sum(batch_sizes) = {total}, K], got {lhs}")
    if ctx.attr("trans_lhs"):
        if len(rhs) != 2 or rhs[0] not in (-1, total):
            ctx.fail(f"with trans_lhs, rhs must be [sum(batch_sizes) = {total}, N], got {rhs}")
        return {"output": ([len(sizes), lhs[1], rhs[1]], ctx.dtype("lhs"))}
    inner, width = (rhs[2], rhs[1]) if ctx.attr("trans_rhs") and len(rhs) == 3 else (rhs[1:] + [-1])[:2]
    if len(rhs) != 3 or rhs[0] != len(sizes) or -1 not in (inner, lhs[1]) and inner != lhs[1]:
        ctx.fail(f"rhs must be [{len(sizes)} groups, K = {lhs[1]}, N] ([groups, N, K] with trans_rhs), got {rhs}")
    return {"output": ([lhs[0], width], ctx.dtype("lhs"))}


def _gemm_grad(g):
    """Each gradient is a batched_gemm: out = lhs_i W_i gives dlhs = dout W_i^T, dW_i = lhs_i^T dout_i (with
    trans_rhs dW_i = dout_i^T lhs_i); out_i = lhs_i^T rhs_i gives dlhs_i = rhs_i dout_i^T, drhs_i = lhs_i dout_i."""
    f = Formula(g)
    lhs, rhs, dout = first(g.I("lhs")), first(g.I("rhs")), first(g.OG("output"))
    trans_lhs, trans_rhs = g.attr("trans_lhs"), g.attr("trans_rhs")
    if trans_lhs:
        plans = {"lhs": (rhs, dout, False, True), "rhs": (lhs, dout, False, False)}
    else:
        plans = {"lhs": (dout, rhs, False, not trans_rhs),
                 "rhs": (dout, lhs, True, False) if trans_rhs else (lhs, dout, True, False)}
    for slot, (a, b, t_lhs, t_rhs) in plans.items():
        f.into(first(g.IG(slot)), "batched_gemm", {"lhs": a, "rhs": b}, slot="output",
               attrs={"batch_sizes": list(g.attr("batch_sizes")), "trans_lhs": t_lhs, "trans_rhs": t_rhs})
    return f.ops


defop("batched_gemm", ["lhs", "rhs"], ["output"],
      attrs={"batch_sizes": typed([], AttrType.LONGS), "trans_lhs": False, "trans_rhs": False},
      infer=_gemm_infer, grad=_gemm_grad)
