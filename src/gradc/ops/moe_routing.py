"""The index ops that route tokens to experts, GPU-only in Paddle 3.3.1 (gradc follows the CUDA kernels); none has
a gradient (their outputs are counts and indices), but for the exchange of the rows themselves.

The older MoE layer's gate (paddle.distributed.models.moe.utils, FastMoE's ops):
    number_count: Out[e] = how many entries of numbers equal e, for e < upper_range (-1 and larger values ignored)
    assign_pos: cum_count the inclusive running counts per expert; each entry i of X with expert e >= 0 takes
                place --cum_count[e] of Out (eff_num_len[0] places): one thread running the kernel's loop in order,
                so an expert's run lists its entries last to first (on a GPU their order within the run is a race)
    limit_by_capacity: expert_count [n_worker, n_expert] (flat), capacity [n_expert]; worker by worker, each takes
                what its expert still has: Out = min(count, left) (0 once spent)
    prune_gate_by_capacity: each entry of GateIdx, in order, spends one of ExpertCount[its expert]; past the count
                it becomes -1 (a -1 entry stays -1)
    random_routing: TopK_Idx [N, 2] with its second choice set to -1 where 2 TopK_Value[i, 1] < Prob[i]
PaddleNLP's MoE helpers (paddle.incubate.nn.functional):
    int_bincount: out [high - low] counts of x's values v in [low, high) at v - low, in dtype
    expand_modality_expert_id: expert_id [s, k] -> e + j group_size (is_group_expert, j the column), then with
                n = num_expert_per_modality > 0: (e / n) 2n + e % n + modality_offset n
    build_src_rank_and_local_expert_id: expert e's expert_num_global_tensor[e] rows get vector (the source rank)
                e / num_local_experts and local_expert_id e % num_local_experts; sum(expert_num_global) rows
The older MoE layer's exchange of rows between ranks (NCCL sends and receives, ring_id's group of S ranks):
local_count and global_count hold E S counts, entry i + j E for local expert i of rank j (global expert j E + i).
global_scatter sends X's rows, laid out by that index, local_count[i + j E] of them to rank j, and receives
global_count[i + j E] rows from rank j, Out ordered expert by expert, then rank by rank; global_gather sends such an
Out back (global_count's chunks) and receives into local_count's layout. Under run_ranks the ranks exchange their
rows (gradc.executor.kernels.moe_routing); run alone, each expert's rows go to the one rank: Out = X, with local_count
and global_count equal and counting X's rows (refused otherwise). Each one's grad is the other (Paddle's makers).
"""

from __future__ import annotations

from math import prod

from ..ir import EMPTY_VAR, AttrType, VarType, dtype_name
from ..registry import NO_GRAD, defop, typed

INDEX_DTYPES = (VarType.INT32, VarType.INT64)


def _int64(ctx, *slots: str) -> None:
    for slot in slots:
        if ctx.dtype(slot) not in (VarType.INT64, None):
            ctx.fail(f"{slot} must be int64, got {dtype_name(ctx.dtype(slot))}")


def _number_count_infer(ctx):
    _int64(ctx, "numbers")
    if ctx.attr("upper_range") <= 0:
        ctx.fail(f"upper_range must be positive, got {ctx.attr('upper_range')}")
    return {"Out": ([ctx.attr("upper_range")], VarType.INT64)}


defop("number_count", ["numbers"], attrs={"upper_range": 0}, infer=_number_count_infer, grad=NO_GRAD)


def _assign_pos_infer(ctx):
    _int64(ctx, "X", "cum_count", "eff_num_len")
    if ctx.shape("cum_count") is not None and len(ctx.shape("cum_count")) != 1:
        ctx.fail(f"cum_count must be 1-D (one running count per expert), got {ctx.shape('cum_count')}")
    return {"Out": ([-1], VarType.INT64)}


defop("assign_pos", ["X", "cum_count", "eff_num_len"], infer=_assign_pos_infer, grad=NO_GRAD)


def _limit_infer(ctx):
    _int64(ctx, "expert_count", "capacity")
    count, capacity, workers = ctx.shape("expert_count"), ctx.shape("capacity"), ctx.attr("n_worker")
    if workers <= 0:
        ctx.fail(f"n_worker must be positive, got {workers}")
    known = count is not None and capacity is not None and min(count + capacity, default=0) >= 0
    if known and (len(capacity) != 1 or prod(count) != workers * capacity[0]):
        ctx.fail(f"expert_count must hold n_worker * experts = {workers} * {capacity} counts, got {count}")
    return {"Out": (count, VarType.INT64)}


defop("limit_by_capacity", ["expert_count", "capacity"], attrs={"n_worker": 0}, infer=_limit_infer, grad=NO_GRAD)


def _prune_infer(ctx):
    _int64(ctx, "GateIdx", "ExpertCount")
    experts, workers, count = ctx.attr("n_expert"), ctx.attr("n_worker"), ctx.shape("ExpertCount")
    if experts <= 0 or workers <= 0:
        ctx.fail(f"n_expert={experts} and n_worker={workers} must be positive")
    if count is not None and count != [-1] and count != [experts * workers]:
        ctx.fail(f"ExpertCount must be [n_expert * n_worker] = [{experts * workers}], got {count}")
    return {"NewGateIdx": (ctx.shape("GateIdx"), VarType.INT64)}


defop("prune_gate_by_capacity", ["GateIdx", "ExpertCount"], ["NewGateIdx"],
      attrs={"n_expert": typed(0, AttrType.LONG), "n_worker": typed(0, AttrType.LONG)}, infer=_prune_infer,
      grad=NO_GRAD)


def _random_routing_infer(ctx):
    _int64(ctx, "TopK_Idx")
    if ctx.dtype("Prob") not in (ctx.dtype("TopK_Value"), None):
        ctx.fail(f"Prob must have TopK_Value's dtype {dtype_name(ctx.dtype('TopK_Value'))}")
    index, value, prob = ctx.shape("TopK_Idx"), ctx.shape("TopK_Value"), ctx.shape("Prob")
    if index is not None and (len(index) != 2 or index[1] not in (2, -1) or value not in (None, index)
                              or prob is not None and len(prob) != 1):
        ctx.fail(f"TopK_Idx and TopK_Value must be [N, 2] (top 2) and Prob [N], got {index}, {value} and {prob}")
    return {"Out": (index, VarType.INT64)}


defop("random_routing", ["Prob", "TopK_Value", "TopK_Idx"], infer=_random_routing_infer, grad=NO_GRAD)


def _bincount_infer(ctx):
    if ctx.dtype("x") not in (*INDEX_DTYPES, None):
        ctx.fail(f"x must be int32 or int64, got {dtype_name(ctx.dtype('x'))}")
    low, high, dtype = ctx.attr("low"), ctx.attr("high"), ctx.attr("dtype")
    if low >= high or dtype not in INDEX_DTYPES:
        ctx.fail(f"int_bincount needs low < high and an int32 or int64 dtype, got low={low} high={high} "
                 f"dtype={dtype}")
    return {"out": ([high - low], VarType(dtype))}


defop("int_bincount", ["x"], ["out"], attrs={"low": typed(0, AttrType.LONG), "high": typed(0, AttrType.LONG),
                                             "dtype": typed(int(VarType.INT64), AttrType.LONG)},
      infer=_bincount_infer, grad=NO_GRAD)


def _expand_infer(ctx):
    if ctx.dtype("expert_id") not in (*INDEX_DTYPES, None):
        ctx.fail(f"expert_id must be int32 or int64, got {dtype_name(ctx.dtype('expert_id'))}")
    shape = ctx.shape("expert_id")
    if shape is not None and len(shape) != 2:
        ctx.fail(f"expert_id must be [tokens, k], got {shape}")
    return {"expert_id_out": (shape, ctx.dtype("expert_id"))}


defop("expand_modality_expert_id", ["expert_id"], ["expert_id_out"],
      attrs={"num_expert_per_modality": typed(0, AttrType.LONG), "group_size": typed(0, AttrType.LONG),
             "modality_offset": typed(0, AttrType.LONG), "is_group_expert": False},
      infer=_expand_infer, grad=NO_GRAD)


def _src_rank_infer(ctx):
    _int64(ctx, "expert_num_global_tensor")
    counts, local = ctx.attr("expert_num_global"), ctx.attr("num_local_experts")
    shape = ctx.shape("expert_num_global_tensor")
    if local <= 0 or min(counts, default=0) < 0 or shape is not None and shape != [-1] and shape != [len(counts)]:
        ctx.fail(f"expert_num_global_tensor must be [{len(counts)}] (one count per expert of expert_num_global, "
                 f"none negative) and num_local_experts positive, got {shape} and {local}")
    rows = [sum(counts)]
    return {"vector": (rows, VarType.INT32), "local_expert_id": (rows, VarType.INT32)}


defop("build_src_rank_and_local_expert_id", ["expert_num_global_tensor"], ["vector", "local_expert_id"],
      attrs={"expert_num_global": typed([], AttrType.LONGS), "num_local_experts": typed(0, AttrType.LONG)},
      infer=_src_rank_infer, grad=NO_GRAD)


def _exchange_infer(ctx):
    _int64(ctx, "local_count", "global_count")
    x, local, remote = ctx.shape("X"), ctx.shape("local_count"), ctx.shape("global_count")
    if x is not None and len(x) != 2 or local is not None and remote is not None and local != remote:
        ctx.fail(f"X must be [rows, dim] and local_count, global_count of one shape, got {x}, {local} and {remote}")
    return {"Out": ([-1, x[1] if x else -1], ctx.dtype("X"))}


def _exchange_grad(twin: str):
    """global_scatter's grad sends the grads back by global_gather, and the other way round (Paddle's makers)."""
    def maker(g):
        wanted = g.IG("X")
        if not wanted or wanted[0] == EMPTY_VAR:
            return []
        return [g.op(twin, {"X": g.OG("Out"), "local_count": g.I("local_count"), "global_count": g.I("global_count")},
                     {"Out": wanted}, forward_attrs=True)]

    return maker


for exchange, twin in (("global_scatter", "global_gather"), ("global_gather", "global_scatter")):
    defop(exchange, ["X", "local_count", "global_count"], attrs={"ring_id": 0}, infer=_exchange_infer,
          no_grad_inputs=["local_count", "global_count"], grad=_exchange_grad(twin))
