"""Kernel of gradc.ops.reshard: the rank's part of the reshard (gradc.executor.reshard lowers it to the collectives
and sends it does, with the other ranks of run_ranks' job; run alone, only a reshard within one rank runs)."""

from __future__ import annotations

from .. import reshard as lowering
from . import kernel


@kernel("reshard")
def reshard(k):
    if k.state is None:   # once per plan
        k.state = lowering.placements(k.attr("op_dist_attr"))
    src, dst = k.state
    channel = lowering.Channel(k.where, _alone_rank(src, dst))
    if channel.rank not in src.process_ids + dst.process_ids:
        if channel.job is None:
            raise ValueError(f"the reshard spans ranks {sorted(set(src.process_ids + dst.process_ids))}, and this "
                             f"process runs one rank: the others are missing (run every rank's program together: "
                             f"gradc run-ranks, or gradc.executor.ranks.run_ranks)")
        raise ValueError(f"rank {channel.rank} is in neither mesh of the reshard (src {src.text()}; dst {dst.text()})")
    value = k.x("x") if channel.rank in src.process_ids else None
    out = lowering.reshard(src, dst, value, channel)
    return {"out": k.x("x") if out is None else out}   # a rank outside dst's mesh: nothing on it reads out


def _alone_rank(src, dst) -> int:
    """Run alone, the one rank both meshes hold, if they hold one."""
    held = set(src.process_ids) | set(dst.process_ids)
    return next(iter(held)) if len(held) == 1 else -1
