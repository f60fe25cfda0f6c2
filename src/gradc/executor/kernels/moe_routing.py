"""Kernels of gradc.ops.moe_routing: the index ops of MoE routing, each a loop of the CUDA kernel run in order."""

from __future__ import annotations

import numpy as np

from ...ir import VarType
from .. import ranks
from . import kernel
from .collective import peers  # the rendezvous of a collective's group (ring_id)


@kernel("number_count")
def number_count(k):
    numbers, upper = k.x("numbers").reshape(-1), k.attr("upper_range")
    kept = numbers[(numbers >= 0) & (numbers < upper)]
    return {"Out": np.bincount(kept, minlength=upper).astype(np.int64)}


@kernel("assign_pos")
def assign_pos(k):
    experts, left = k.x("X").reshape(-1), k.x("cum_count").astype(np.int64).copy()
    out = np.zeros(int(k.x("eff_num_len").reshape(-1)[0]), np.int64)
    for i, expert in enumerate(experts):
        if expert < 0:
            continue
        if expert >= left.size or not 0 < left[expert] <= out.size:
            raise ValueError(f"entry {i} of X (expert {expert}) has no place left: cum_count must "
                                 f"be X's running counts per expert, ending at eff_num_len {out.size}")
        left[expert] -= 1
        out[left[expert]] = i
    return {"Out": out}


@kernel("limit_by_capacity")
def limit_by_capacity(k):
    counts, left = k.x("expert_count"), k.x("capacity").astype(np.int64).copy()
    proposals = counts.reshape(k.attr("n_worker"), -1)
    out = np.zeros_like(proposals)
    for worker, expert in np.ndindex(proposals.shape):
        before = left[expert]
        left[expert] -= proposals[worker, expert]
        out[worker, expert] = min(proposals[worker, expert], max(before, 0))
    return {"Out": out.reshape(counts.shape)}


@kernel("prune_gate_by_capacity")
def prune_gate_by_capacity(k):
    gates, left = k.x("GateIdx"), k.x("ExpertCount").astype(np.int64).copy()
    out = gates.reshape(-1).copy()
    for i, expert in enumerate(out):
        if expert < 0:   # already dropped: the kernel's decrement lands outside ExpertCount, its result is -1
            continue
        if expert >= left.size:
            raise ValueError(f"GateIdx entry {i} is expert {expert}, past ExpertCount's {left.size}")
        left[expert] -= 1
        out[i] = expert if left[expert] >= 0 else -1
    return {"NewGateIdx": out.reshape(gates.shape)}


@kernel("random_routing")
def random_routing(k):
    index, value, prob = k.x("TopK_Idx"), k.x("TopK_Value"), k.x("Prob")
    out = index.copy()
    out[2 * value[:, 1] < prob, 1] = -1
    return {"Out": out}


@kernel("int_bincount")
def int_bincount(k):
    values, low, high = k.x("x").reshape(-1).astype(np.int64), k.attr("low"), k.attr("high")
    inside = values[(values >= low) & (values < high)] - low
    dtype = np.int32 if k.attr("dtype") == VarType.INT32 else np.int64
    return {"out": np.bincount(inside, minlength=high - low).astype(dtype)}


@kernel("expand_modality_expert_id")
def expand_modality_expert_id(k):
    ids = k.x("expert_id").astype(np.int64)
    per_modality = k.attr("num_expert_per_modality")
    if k.attr("is_group_expert"):
        ids = ids + np.arange(ids.shape[1]) * k.attr("group_size")
    if per_modality > 0:
        ids = ids // per_modality * 2 * per_modality + ids % per_modality + k.attr("modality_offset") * per_modality
    return {"expert_id_out": ids.astype(k.x("expert_id").dtype)}


@kernel("build_src_rank_and_local_expert_id")
def build_src_rank_and_local_expert_id(k):
    counts, local = k.x("expert_num_global_tensor").astype(np.int64), k.attr("num_local_experts")
    rows = sum(k.attr("expert_num_global"))
    if counts.sum() != rows or (counts < 0).any():
        raise ValueError(f"expert_num_global_tensor {counts.tolist()} must hold the counts of "
                             f"expert_num_global {list(k.attr('expert_num_global'))} ({rows} rows)")
    experts = np.repeat(np.arange(counts.size), counts)
    return {"vector": (experts // local).astype(np.int32), "local_expert_id": (experts % local).astype(np.int32)}


def _chunks(x: np.ndarray, lengths: np.ndarray) -> list[np.ndarray]:
    """x's rows cut into consecutive chunks of ``lengths``."""
    if lengths.sum() != x.shape[0] or (lengths < 0).any():
        raise ValueError(f"counts {lengths.tolist()} must be non-negative and add up to X's {x.shape[0]} rows")
    return np.split(x, np.cumsum(lengths)[:-1])


def _exchanged(scatter: bool, place: int, values: list) -> np.ndarray:
    """This rank's Out of the all-to-all, from every rank's (X, local_count, global_count) in group order. Counts
    [size * E], entry i + j E for local expert i and rank j; scatter sends X's chunks (laid out by that index) to
    rank j and receives expert by expert, rank by rank; gather sends back the chunks so received (expert-major)."""
    size = len(values)
    experts = values[0][1].size // size
    if any(local.size != experts * size or remote.size != experts * size for _, local, remote in values):
        raise ValueError(f"local_count and global_count must hold num_experts x {size} ranks counts on every rank, "
                         f"got sizes {[(v[1].size, v[2].size) for v in values]}")

    def sent(j: int):   # rank j's chunks, by (local expert i, receiving rank r)
        x, local, remote = values[j]
        if scatter:
            parts = _chunks(x, local)
            return {(i, r): parts[i + r * experts] for i in range(experts) for r in range(size)}
        order = [(i, r) for i in range(experts) for r in range(size)]
        return dict(zip(order, _chunks(x, np.array([remote[i + r * experts] for i, r in order]))))

    rows = {j: sent(j) for j in range(size)}
    _, local, remote = values[place]
    wanted = remote if scatter else local
    order = [(i, j) for i in range(experts) for j in range(size)] if scatter else \
        [(i, j) for j in range(size) for i in range(experts)]
    out = []
    for i, j in order:
        chunk = rows[j][(i, place)]
        if len(chunk) != wanted[i + j * experts]:
            raise ValueError(f"rank {j} sends {len(chunk)} row(s) of expert {i} to rank {place}, whose "
                             f"{'global' if scatter else 'local'}_count[{i + j * experts}] expects "
                             f"{wanted[i + j * experts]}")
        out.append(chunk)
    return np.concatenate(out)


@kernel("global_scatter", "global_gather")
def exchange_rows(k):
    x, local, remote = (k.x(slot).reshape(-1) if slot != "X" else k.x(slot) for slot in ("X", "local_count",
                                                                                        "global_count"))
    if ranks.current() is None:   # one rank: each expert's rows go to itself
        if not np.array_equal(local, remote) or local.sum() != x.shape[0] or (local < 0).any():
            raise ValueError(f"on one rank local_count {local.tolist()} must equal global_count {remote.tolist()} "
                             f"and count X's {x.shape[0]} rows")
        return {"Out": x.copy()}
    values, place = peers(k, (x, local.astype(np.int64), remote.astype(np.int64)))
    return {"Out": _exchanged(k.op.type == "global_scatter", place, values)}
