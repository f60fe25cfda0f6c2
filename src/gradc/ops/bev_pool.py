"""Paddle3D's bev_pool_v2 (paddle3d/ops/bev_pool_v2: BEVDet4D, RTEBev), the custom op that lifts camera features
into a bird's-eye-view grid, and the suite's separate backward op bev_pool_v2_bkwd, under the suite's names. Frustum
point i (of depth bin ranks_depth[i] and pixel ranks_feat[i]) falls into BEV cell ranks_bev[i]; the points come
sorted by cell, in intervals (_interval_starts, _interval_lengths) of one cell each:

    out [_bev_feat_shape] (flat [cells, C]): out[ranks_bev[s]] = sum over i in the interval from s of
                                             depth[ranks_depth[i]] * feat[ranks_feat[i]]   (other cells 0)

with depth [N, D, H, W] and feat [N, H, W, C] flat. The suite differentiates it by hand: bev_pool_v2_bkwd is its
CUDA backward as an op (assignments, not sums: correct for intervals of one pixel each, which its caller sorts by
ranks_feat), registered here as the suite defines it. gradc's own grad op of bev_pool_v2, bev_pool_v2_grad (same
slots, with out@GRAD), is the adjoint for any intervals:

    _depth@GRAD[ranks_depth[i]] += <dOut[ranks_bev[s]], feat[ranks_feat[i]]>,
    _feat@GRAD[ranks_feat[i]] += dOut[ranks_bev[s]] * depth[ranks_depth[i]]    (s the start of i's interval)

Its second derivative is in gradc.ops.bev_pool_double (bev_pool_v2 is bilinear in depth and feat).
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import defop, grad_op
from ..shapes import dims_match
from .infer import check_float, one_dtype

RANKS = ("_ranks_depth", "_ranks_feat", "_ranks_bev", "_interval_lengths", "_interval_starts")


def _check_ranks(ctx) -> None:
    for slot in RANKS:
        shape = ctx.shape(slot)
        if ctx.dtype(slot) not in (None, VarType.INT32):
            ctx.fail(f"{ctx.op.type} needs int32 {slot} (the suite's kernel reads int)")
        if shape is not None and len(shape) != 1:
            ctx.fail(f"{ctx.op.type} needs 1-D {slot}, got {shape}")


def _check_maps(ctx, depth_slot: str = "_depth", feat_slot: str = "_feat") -> tuple:
    depth, feat = ctx.shape(depth_slot), ctx.shape(feat_slot)
    check_float(ctx, feat_slot)
    if depth is not None and feat is not None and (
            len(depth) != 4 or len(feat) != 4 or not all(dims_match(a, b) for a, b in zip(
                (depth[0], depth[2], depth[3]), feat[:3]))):
        ctx.fail(f"{ctx.op.type} needs {depth_slot} [N, D, H, W] and {feat_slot} [N, H, W, C], got {depth} and {feat}")
    return depth, feat


def _infer(ctx):
    _check_ranks(ctx)
    _, feat = _check_maps(ctx)
    dtype = one_dtype(ctx, "_depth", "_feat")
    shape = list(ctx.attr("_bev_feat_shape"))
    if len(shape) != 4 or min(shape) < 1:
        ctx.fail(f"bev_pool_v2 needs _bev_feat_shape of 4 positive dims (the suite's shape inference reads 4), "
                 f"got {shape}")
    if feat is not None and not dims_match(feat[3], shape[3]):
        ctx.fail(f"bev_pool_v2 needs _bev_feat_shape's last dim {shape[3]} to be _feat's channels {feat[3]}")
    return {"out": (shape, dtype)}


defop("bev_pool_v2", ["_depth", "_feat", *RANKS], ["out"], attrs={"_bev_feat_shape": [1, 1, 1, 1]}, infer=_infer,
      grad=grad_op("_depth", "_feat", *RANKS), no_grad_inputs=list(RANKS))


def _bkwd_infer(ctx):
    _check_ranks(ctx)
    depth, feat = _check_maps(ctx)
    return {"_depth_grad": (depth, ctx.dtype("_depth")), "_feat_grad": (feat, ctx.dtype("_feat"))}


defop("bev_pool_v2_bkwd", ["_out_grad", "_depth", "_feat", *RANKS], ["_depth_grad", "_feat_grad"],
      infer=_bkwd_infer, no_grad_inputs=list(RANKS))   # its maker: gradc.ops.bev_pool_double

# bev_pool_v2_bkwd's assignments, point by point in its kernel's order (the points its intervals cover): each
# point's depth, feat and cell ranks, the feat rank its interval's sum is written to, and 1 where the point's depth
# assignment (its interval's feat assignment) is the last to that element, 0 where a later one overwrites it
LAST_WRITES = ("point_depth", "point_feat", "point_cell", "interval_feat", "depth_last", "feat_last")


def _last_writes_infer(ctx):
    _check_ranks(ctx)
    masks = ("depth_last", "feat_last")
    return {slot: ([-1], ctx.attr("dtype") if slot in masks else VarType.INT64) for slot in LAST_WRITES}


defop("bev_pool_v2_last_writes", list(RANKS), list(LAST_WRITES), attrs={"dtype": int(VarType.FP32)},
      infer=_last_writes_infer)
