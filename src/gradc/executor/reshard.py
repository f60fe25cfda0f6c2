"""Auto-parallel's dist_op.reshard, lowered at run time to what each rank does (Paddle's reshard pass does it ahead,
in paddle/distributed/auto_parallel/static/reshard_funcs): a value spread over a process mesh by one set of
placements (src) becomes the same global value spread by another (dst).

A placement is a tensor_dist: the mesh (shape, process ids), dims_mapping (per tensor dim the mesh axis splitting
it, -1 for none) and the partial axes (mesh axis -> reduce type: the ranks along it hold parts to reduce). A dim of
n split over k ranks is in chunks of ceil(n / k), the last one shorter (Paddle's uneven split). On one mesh, per
mesh axis and in this order: a partial axis src has and dst has not is reduced, to the rank's chunk where dst
splits a dim along it (reduce_scatter) or whole (all_reduce); a dim src splits along an axis where dst does not is
gathered (all_gather + concat); a dim dst splits and the value does not yet is sliced (the rank's chunk); a partial
axis dst has and src has not keeps the value at the axis's first rank and zeros elsewhere (a sum; max and avg
keep it everywhere). Nothing to do is a local copy; on a 1-D mesh a shard moving to another dim goes by all_to_all
(Paddle's s_to_s). Across meshes: meshes of one shape pair their ranks in order, each of src's sends its block to its
partner (send/recv), which reshards on dst's mesh. Meshes of different shapes reshard where Paddle has a function
for them (gradc.executor.reshard_funcs): a sub-mesh takes the value made whole on src's mesh (global_to_sub); a src
mesh that is one layer of dst's, placed as dst is there, broadcasts each rank's block along the other layers
(sub_to_global); any other pair is refused in one line, as Paddle's pass has no function for it.
"""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np

from . import ranks
from .reshard_funcs import decomposed, paddle_function, split_mesh, sub_mesh_axis
from .reshard_placement import REDUCE_NAMES, Placement, placements


def mesh_ranks(op) -> set[int]:
    """The ranks an op with an op_dist_attr runs on: its mesh's, and for a reshard its src's and dst's meshes'."""
    document = json.loads(op.attrs["op_dist_attr"])["D"]
    held = set(document[0]["D"][1])
    if op.type == "reshard":
        src, dst = placements(op.attrs["op_dist_attr"])
        held |= set(src.process_ids) | set(dst.process_ids)
    return held


def for_rank(program, rank: int):
    """``program`` as ``rank`` runs it: without the global block's ops whose mesh does not hold the rank (Paddle's
    remove_other_rank_op_pass); the program itself when it has none."""
    block = program.global_block
    dropped = [i for i, op in enumerate(block.ops)
               if isinstance(op.attrs.get("op_dist_attr"), str) and rank not in mesh_ranks(op)]
    if not dropped:
        return program
    copy = program.clone()
    for i in reversed(dropped):
        del copy.global_block.ops[i]
    return copy


def holds_reshard(program) -> bool:
    return any(op.type == "reshard" for op in program.global_block.ops)


class Channel:
    """What a reshard op of one rank exchanges with the others: all through gradc.executor.ranks' job, or alone."""

    def __init__(self, where: str, rank: int | None):
        self.where, joined = where, ranks.current()
        self.job, self.rank = joined if joined is not None else (None, rank)

    def gather(self, group: list[int], value) -> list:
        if len(group) == 1:
            return [value]
        if self.job is None:
            raise ValueError(f"the reshard exchanges values between ranks {group}, and this process runs one rank: "
                             f"the others are missing (run every rank's program together: gradc run-ranks, or "
                             f"gradc.executor.ranks.run_ranks)")
        return self.job.meet(self.rank, f"mesh group {group}", group, "reshard", self.where, value)

    def send(self, receiver: int, value) -> None:
        self._need_job([self.rank, receiver])
        self.job.post(self.rank, f"mesh pair {sorted((self.rank, receiver))}", receiver, value)

    def receive(self, sender: int):
        self._need_job([sender, self.rank])
        return self.job.take(self.rank, f"mesh pair {sorted((self.rank, sender))}", sender, self.where)

    def _need_job(self, pair: list[int]) -> None:
        if self.job is None:
            raise ValueError(f"the reshard sends a value from rank {pair[0]} to rank {pair[1]}, and this process runs "
                             f"one rank: the other is missing (run every rank's program together: gradc run-ranks, "
                             f"or gradc.executor.ranks.run_ranks)")


def chunk(size: int, parts: int, index: int) -> slice:
    """The index-th of ``parts`` chunks of ceil(size / parts) (the last one shorter)."""
    step = -(-size // parts)
    return slice(min(index * step, size), min((index + 1) * step, size))


def _reduce(values: list, kind: int):
    name = REDUCE_NAMES.get(kind)
    if name in ("sum", "avg"):
        total = values[0].copy()
        for value in values[1:]:
            total += value
        return total if name == "sum" else (total / len(values)).astype(values[0].dtype)
    if name is None:
        raise ValueError(f"reduce type {kind} is none of Paddle's {REDUCE_NAMES}")
    return {"max": np.maximum, "min": np.minimum, "prod": np.multiply}[name].reduce(np.stack(values), axis=0)


def on_mesh(src: Placement, dst: Placement, value, channel: Channel):
    """The reshard on one mesh (src and dst on it), as rank channel.rank does it."""
    rank, mapping, partial = channel.rank, list(src.dims_mapping), dict(src.partial)
    wanted = dict(dst.partial)
    where = src.coordinates(rank)
    for axis in sorted(partial):
        if wanted.get(axis) == partial[axis]:
            continue
        values = channel.gather(src.group(rank, axis), value)
        value = _reduce(values, partial.pop(axis))
        scattered = [d for d, a in enumerate(dst.dims_mapping) if a == axis and mapping[d] == -1]
        if scattered:   # reduce_scatter: the rank keeps its chunk of the reduction
            dim = scattered[0]
            index = [slice(None)] * value.ndim
            index[dim] = chunk(value.shape[dim], src.mesh_shape[axis], where[axis])
            value, mapping[dim] = value[tuple(index)], axis
    for dim, axis in enumerate(mapping):
        if axis != -1 and dst.dims_mapping[dim] != axis:   # all_gather + concat
            value, mapping[dim] = np.concatenate(channel.gather(src.group(rank, axis), value), axis=dim), -1
    for dim, axis in enumerate(dst.dims_mapping):
        if axis != -1 and mapping[dim] == -1:   # the rank's chunk of a whole dim
            index = [slice(None)] * value.ndim
            index[dim] = chunk(value.shape[dim], src.mesh_shape[axis], where[axis])
            value, mapping[dim] = value[tuple(index)], axis
    for axis, kind in sorted(wanted.items()):
        if axis not in partial and REDUCE_NAMES.get(kind) == "sum" and where[axis] != 0:
            value = np.zeros_like(value)   # a sum's parts: the whole at the axis's first rank
    return np.array(value, copy=True)


def all_to_all(src: Placement, dst: Placement, value, channel: Channel):
    """Paddle's s_to_s on a 1-D mesh: the rank sends the j-th chunk of dst's split dim of its block to the mesh's
    j-th rank and joins what each rank sends it along src's split dim, in mesh order (all_to_all traffic: each rank
    sends and receives (n - 1) / n of its block, where an all_gather would bring it the whole value)."""
    rank, group = channel.rank, list(src.process_ids)
    gathered_dim, split_dim = src.dims_mapping.index(0), dst.dims_mapping.index(0)
    pieces = []
    for place in range(len(group)):
        index = [slice(None)] * value.ndim
        index[split_dim] = chunk(value.shape[split_dim], len(group), place)
        pieces.append(np.array(value[tuple(index)], copy=True))
    for place, receiver in enumerate(group):
        if receiver != rank:
            channel.send(receiver, pieces[place])
    mine = group.index(rank)
    received = [pieces[mine] if sender == rank else channel.receive(sender) for sender in group]
    return np.concatenate(received, axis=gathered_dim)


def sub_to_global(src: Placement, dst: Placement, value, channel: Channel):
    """Paddle's sub_to_global: src's mesh is one layer of dst's along an axis; its i-th rank broadcasts its block to
    the i-th rank of every other layer. Paddle's pass gets here with dst placed as src is (replicated along the
    axis); a dst split or partial along it is then resharded on dst's mesh."""
    rank, axis = channel.rank, sub_mesh_axis(dst, src)
    layers = [ids for _, ids in split_mesh(dst.mesh_shape, dst.process_ids, axis)]
    block = value
    for layer in layers:
        if layer == src.process_ids:
            continue
        for sender, receiver in zip(src.process_ids, layer):
            if rank == sender:
                channel.send(receiver, value)
            if rank == receiver:
                block = channel.receive(sender)
    mapping = tuple(-1 if a == axis else a for a in dst.dims_mapping)
    held = replace(dst, dims_mapping=mapping, partial=tuple(p for p in dst.partial if p[0] != axis))
    return on_mesh(held, dst, block, channel)


def _function(src: Placement, dst: Placement) -> str:
    """Paddle's function for one step between meshes of different shapes, or a one-line refusal."""
    try:
        function = paddle_function(src, dst)
    except ValueError as exc:
        raise ValueError(f"{exc}; gradc refuses it too: from {src.text()} to {dst.text()}") from None
    if function not in ("global_to_sub", "sub_to_global"):
        raise ValueError(f"Paddle 3.3.1's reshard pass has no function for meshes of different shapes but a "
                         f"sub-mesh (global_to_sub: dst replicated) or one layer of dst's mesh (sub_to_global: its "
                         f"placements dst's there), nor has gradc: not from {src.text()} to {dst.text()}")
    return function


def _step(src: Placement, dst: Placement, value, channel: Channel):
    """One step of Paddle's decomposed reshard, as rank channel.rank does it."""
    rank = channel.rank
    if src.same_mesh(dst):
        if len(src.mesh_shape) == 1 and paddle_function(src, dst) == "s_to_s":
            return all_to_all(src, dst, value, channel)
        return on_mesh(src, dst, value, channel)
    if src.mesh_shape == dst.mesh_shape:   # same_status: pair the meshes' ranks in order, send/recv
        moved = None
        for sender, receiver in zip(src.process_ids, dst.process_ids):
            if rank == sender and sender != receiver:
                channel.send(receiver, value)
            if rank == receiver:
                moved = value if sender == receiver else channel.receive(sender)
        if rank not in dst.process_ids:
            return None
        return on_mesh(replace(src, mesh_shape=dst.mesh_shape, process_ids=dst.process_ids), dst, moved, channel)
    if _function(src, dst) == "global_to_sub":   # made whole on src's mesh; dst's ranks, all in it, keep it
        whole_src = replace(src, dims_mapping=(-1,) * len(src.dims_mapping), partial=())
        whole = on_mesh(src, whole_src, value, channel) if rank in src.process_ids else None
        return whole if rank in dst.process_ids else None
    return sub_to_global(src, dst, value, channel)


def reshard(src: Placement, dst: Placement, value, channel: Channel):
    """Rank channel.rank's part of a reshard: its dst block, or None where dst's mesh does not hold it. Its steps are
    those of Paddle's decompose_reshard_pass, each refused (before any exchange) where Paddle has no function."""
    steps = decomposed(src, dst)
    for step_src, step_dst in steps:
        if step_src.mesh_shape != step_dst.mesh_shape:
            _function(step_src, step_dst)
    for step_src, step_dst in steps:
        held = channel.rank in step_src.process_ids or channel.rank in step_dst.process_ids
        value = _step(step_src, step_dst, value, channel) if held else None
    return value if channel.rank in dst.process_ids else None
