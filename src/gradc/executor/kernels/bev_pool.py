"""Kernels of gradc.ops.bev_pool (Paddle3D's bev_pool_v2): each interval's products summed in point order (the
CUDA kernel's order) with np.add.reduceat, written to its cell; the suite's backward op with its assignments."""

from __future__ import annotations

import numpy as np

from . import kernel
from .tensor import numpy_dtype


def _covered(k):
    """(the ranks, the points the intervals cover in order, the interval starts and lengths), checked."""
    ranks = {slot: np.asarray(k.x(slot)).astype(np.int64) for slot in ("_ranks_depth", "_ranks_feat", "_ranks_bev")}
    starts, lengths = (np.asarray(k.x(s)).astype(np.int64) for s in ("_interval_starts", "_interval_lengths"))
    points = len(ranks["_ranks_bev"])
    if len(starts) != len(lengths) or (lengths < 1).any() or (starts < 0).any() or (starts + lengths > points).any():
        raise ValueError(f"_interval_starts {starts.tolist()} and _interval_lengths {lengths.tolist()} do not lie "
                         f"within the {points} ranks")
    members = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths)]) if len(starts) else \
        np.zeros(0, np.int64)
    for slot in ("_ranks_depth", "_ranks_feat"):
        if len(ranks[slot]) != points:
            raise ValueError(f"{slot} is not as long as _ranks_bev ({points})")
    return ranks, members, starts, lengths


def _intervals(k, depth: np.ndarray, feat: np.ndarray):
    """(ranks of depth, feat, bev per point covered, each point's interval start, the interval starts), checked."""
    ranks, members, starts, lengths = _covered(k)
    first = np.repeat(starts, lengths)
    for slot, size in (("_ranks_depth", depth.size), ("_ranks_feat", feat.size // feat.shape[-1])):
        if (ranks[slot][members] < 0).any() or (ranks[slot][members] >= size).any():
            raise ValueError(f"{slot} holds ranks outside [0, {size})")
    return ranks["_ranks_depth"][members], ranks["_ranks_feat"][members], ranks["_ranks_bev"], first, starts, lengths


@kernel("bev_pool_v2")
def bev_pool_v2(k):
    depth, feat = k.x("_depth"), k.x("_feat")
    channels, shape = feat.shape[-1], list(k.attr("_bev_feat_shape"))
    out = np.zeros((int(np.prod(shape)) // channels, channels), feat.dtype)
    rank_depth, rank_feat, rank_bev, _, starts, lengths = _intervals(k, depth, feat)
    if len(starts):
        cells = rank_bev[starts]
        if (cells < 0).any() or (cells >= len(out)).any():
            raise ValueError(f"_ranks_bev holds cells outside the {len(out)} of _bev_feat_shape {shape}")
        products = depth.reshape(-1)[rank_depth, None] * feat.reshape(-1, channels)[rank_feat]
        out[cells] = np.add.reduceat(products, np.concatenate([[0], np.cumsum(lengths)[:-1]]), axis=0)
    return {"out": out.reshape(shape)}


@kernel("bev_pool_v2_grad")
def bev_pool_v2_grad(k):
    depth, feat = k.x("_depth"), k.x("_feat")
    channels = feat.shape[-1]
    dout = k.x("out@GRAD").reshape(-1, channels)
    rank_depth, rank_feat, rank_bev, first, _, _ = _intervals(k, depth, feat)
    upstream = dout[rank_bev[first]]

    def depth_grad():
        grad = np.zeros(depth.size, depth.dtype)
        np.add.at(grad, rank_depth, (upstream * feat.reshape(-1, channels)[rank_feat]).sum(-1))
        return grad.reshape(depth.shape)

    def feat_grad():
        grad = np.zeros((feat.size // channels, channels), feat.dtype)
        np.add.at(grad, rank_feat, upstream * depth.reshape(-1)[rank_depth, None])
        return grad.reshape(feat.shape)

    return k.grads({"_depth@GRAD": depth_grad, "_feat@GRAD": feat_grad})


@kernel("bev_pool_v2_bkwd")
def bev_pool_v2_bkwd(k):
    """The suite's kernel: each point's depth grad assigned, each interval's feat grad assigned at its first
    point's pixel, dOut read at each point's own cell."""
    depth, feat = k.x("_depth"), k.x("_feat")
    channels = feat.shape[-1]
    dout = k.x("_out_grad").reshape(-1, channels)
    rank_depth, rank_feat, rank_bev, first, starts, lengths = _intervals(k, depth, feat)
    members = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths)]) if len(starts) else first
    upstream = dout[rank_bev[members]]
    depth_grad = np.zeros(depth.size, depth.dtype)
    depth_grad[rank_depth] = (upstream * feat.reshape(-1, channels)[rank_feat]).sum(-1)
    feat_grad = np.zeros((feat.size // channels, channels), feat.dtype)
    if len(starts):
        sums = np.add.reduceat(upstream * depth.reshape(-1)[rank_depth, None],
                               np.concatenate([[0], np.cumsum(lengths)[:-1]]), axis=0)
        feat_grad[np.asarray(k.x("_ranks_feat")).astype(np.int64)[starts]] = sums
    return {"_depth_grad": depth_grad.reshape(depth.shape), "_feat_grad": feat_grad.reshape(feat.shape)}


def _last(keys: np.ndarray) -> np.ndarray:
    """1 where no later entry has the same key (the write that stays), else 0."""
    last = np.zeros(len(keys))
    _, from_end = np.unique(keys[::-1], return_index=True)
    last[len(keys) - 1 - from_end] = 1
    return last


@kernel("bev_pool_v2_last_writes")
def bev_pool_v2_last_writes(k):
    """bev_pool_v2_bkwd's assignments point by point (gradc.ops.bev_pool's LAST_WRITES): which one stays is found by
    a unique over the reversed ranks, so the derivative gathers and scatters over them alone."""
    ranks, members, starts, lengths = _covered(k)
    depth, pixels = ranks["_ranks_depth"][members], ranks["_ranks_feat"][starts]
    dtype = numpy_dtype(k.attr("dtype"))
    return {"point_depth": depth, "point_feat": ranks["_ranks_feat"][members],
            "point_cell": ranks["_ranks_bev"][members],
            "interval_feat": np.repeat(pixels, lengths), "depth_last": _last(depth).astype(dtype),
            "feat_last": np.repeat(_last(pixels), lengths).astype(dtype)}
