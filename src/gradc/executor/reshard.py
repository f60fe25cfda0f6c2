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
keep it everywhere). Nothing to do is a local copy. Across meshes: meshes of one shape pair their ranks in order,
each of src's sends its block to its partner (send/recv), which reshards on dst's mesh; a dst mesh whose ranks are
some of src's takes the value made whole (replicated) on src's mesh; a src mesh that is one slice of dst's mesh
sends its whole value along the other slices (Paddle's broadcast).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np

from . import ranks

REDUCE_NAMES = {0: "sum", 1: "max", 2: "min", 3: "prod", 4: "avg"}   # Paddle's ReduceType


@dataclass(frozen=True)
class Placement:
    mesh_shape: tuple[int, ...]
    process_ids: tuple[int, ...]
    dims_mapping: tuple[int, ...]
    partial: tuple[tuple[int, int], ...]   # (mesh axis, reduce type), by axis

    def coordinates(self, rank: int) -> tuple[int, ...]:
        return tuple(int(c) for c in np.unravel_index(self.process_ids.index(rank), self.mesh_shape))

    def group(self, rank: int, axis: int) -> list[int]:
        """The ranks along mesh ``axis`` through ``rank``, in the axis's order."""
        grid = np.asarray(self.process_ids).reshape(self.mesh_shape)
        where = list(self.coordinates(rank))
        where[axis] = slice(None)
        return [int(r) for r in grid[tuple(where)]]

    def same_mesh(self, other: Placement) -> bool:
        return (self.mesh_shape, self.process_ids) == (other.mesh_shape, other.process_ids)

    def text(self) -> str:
        partial = "".join(f", Partial({REDUCE_NAMES.get(kind, kind)}) on axis {axis}" for axis, kind in self.partial)
        return f"mesh {list(self.process_ids)} {list(self.mesh_shape)}, dims_mapping {list(self.dims_mapping)}{partial}"


def _placement(tensor_dist: dict) -> Placement:
    mesh, mapping, partial = tensor_dist["D"]
    shape, ids, _ = mesh["D"]
    pairs = sorted((entry[0], entry[1]) if isinstance(entry, list) else (entry, 0) for entry in partial)
    return Placement(tuple(shape), tuple(ids), tuple(mapping), tuple(pairs))


def placements(op_dist_attr: str) -> tuple[Placement, Placement]:
    """(src, dst) of a reshard op's op_dist_attr (its operand's and its result's tensor_dist)."""
    try:
        _, operands, results, *_ = json.loads(op_dist_attr)["D"]
        return _placement(operands[0]), _placement(results[0])
    except (ValueError, KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"op_dist_attr is not a reshard's (mesh, [operand tensor_dist], [result tensor_dist]): "
                         f"{exc}") from None


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


def _slice_axis(outer: Placement, inner: Placement) -> int | None:
    """The axis of ``outer``'s mesh of which ``inner``'s mesh is one slice (its other axes in order), or None."""
    if not set(inner.process_ids) < set(outer.process_ids):
        return None
    for axis in range(len(outer.mesh_shape)):
        grid = np.moveaxis(np.asarray(outer.process_ids).reshape(outer.mesh_shape), axis, 0)
        for layer in grid:
            if tuple(int(r) for r in layer.ravel()) == inner.process_ids and \
                    tuple(d for d in layer.shape if d != 1) == tuple(d for d in inner.mesh_shape if d != 1):
                return axis
    return None


def reshard(src: Placement, dst: Placement, value, channel: Channel):
    """Rank channel.rank's part of a reshard: its dst block, or None where dst's mesh does not hold it."""
    rank = channel.rank
    if src.same_mesh(dst):
        return on_mesh(src, dst, value, channel)
    if src.mesh_shape == dst.mesh_shape:   # pair the meshes' ranks in order: send/recv, then reshard on dst's
        moved = None
        for sender, receiver in zip(src.process_ids, dst.process_ids):
            if rank == sender and sender != receiver:
                channel.send(receiver, value)
            if rank == receiver:
                moved = value if sender == receiver else channel.receive(sender)
        if rank not in dst.process_ids:
            return None
        return on_mesh(replace(src, mesh_shape=dst.mesh_shape, process_ids=dst.process_ids), dst, moved, channel)
    whole_src = replace(src, dims_mapping=(-1,) * len(src.dims_mapping), partial=())
    if set(dst.process_ids) < set(src.process_ids) and not any(a != -1 for a in dst.dims_mapping) and not dst.partial:
        whole = on_mesh(src, whole_src, value, channel) if rank in src.process_ids else None
        return whole if rank in dst.process_ids else None
    axis = _slice_axis(dst, src)
    if axis is not None and not dst.partial:
        whole = on_mesh(src, whole_src, value, channel) if rank in src.process_ids else None
        base = dst.coordinates(src.process_ids[0])[axis]
        for sender in src.process_ids:   # each of src's ranks sends along dst's axis through it
            where = list(dst.coordinates(sender))
            for place in range(dst.mesh_shape[axis]):
                where[axis] = place
                receiver = dst.process_ids[int(np.ravel_multi_index(where, dst.mesh_shape))]
                if place != base and rank == sender:
                    channel.send(receiver, whole)
                if place != base and rank == receiver:
                    whole = channel.receive(sender)
        whole_dst = replace(dst, dims_mapping=(-1,) * len(dst.dims_mapping))
        return on_mesh(whole_dst, dst, whole, channel) if rank in dst.process_ids else None
    raise ValueError(f"gradc reshards between meshes of one shape, to a sub-mesh (replicated) and from one slice of "
                     f"a mesh; not from {src.text()} to {dst.text()}")
