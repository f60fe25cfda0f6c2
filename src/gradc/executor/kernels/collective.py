"""Kernels of gradc.ops.collective. A collective meets the other ranks of its group through gradc.executor.ranks
when run_ranks runs the job; run alone it is a group of one (a sum over one rank is X), and fails when the op or
its program says the group has more ranks. c_split, c_embedding and the grad ops read only this rank's values."""

from __future__ import annotations

import numpy as np

from ...ops.collective import REDUCE_TYPES
from .. import ranks
from . import kernel


def peers(k, value, nranks: int | None = None) -> tuple[list, int]:
    """Every rank's value of this collective in group order, and this rank's place in the group."""
    ring, joined = k.attr("ring_id"), ranks.current()
    if joined is None:
        if nranks is None and k.state is None:   # once per plan: the program's ops say how many ranks the ring has
            k.state = ranks.ring_size(k.block.program, ring)
        size = nranks if nranks is not None else k.state
        if size > 1:
            raise ValueError(f"ring_id {ring} is a group of nranks={size}, and this process runs one rank: the "
                             f"other {size - 1} rank(s) are missing (run every rank's program together: "
                             f"gradc run-ranks, or gradc.executor.ranks.run_ranks)")
        return [value], 0
    job, rank = joined
    members = job.members(ring, rank)
    if nranks is not None and nranks != len(members):
        raise ValueError(f"nranks={nranks}, but the group of ring_id {ring} has {len(members)} rank(s) {members}")
    place = members.index(rank) if rank in members else -1
    if k.op.attrs.get("rank", place) != place:
        raise ValueError(f"rank={k.op.attrs['rank']}, but this program runs as rank {place} of ring_id {ring}")
    return job.exchange(rank, ring, k.op.type, k.where, value), place


def summed(values: list):
    total = values[0].copy()
    for value in values[1:]:
        total += value
    return total


@kernel("c_identity", "c_sync_calc_stream")
def identity(k):
    return {"Out": k.x("X")}


@kernel("c_sync_comm_stream")
def identities(k):
    return {"Out": k.xs("X")}


@kernel("barrier")
def barrier(k):
    peers(k, None)
    return {"Out": k.x("X")}


@kernel("mp_allreduce_sum", "c_allreduce_sum")
def allreduce_sum(k):
    return {"Out": summed(peers(k, k.x("X"))[0])}


@kernel("all_reduce")
def all_reduce(k):
    how = REDUCE_TYPES[k.attr("reduce_type")]   # inference checked it
    values = peers(k, k.x("x"))[0]
    if how == "sum":
        return {"out": summed(values)}
    if how == "avg":
        return {"out": (summed(values) / len(values)).astype(values[0].dtype)}
    reduce = {"max": np.maximum, "min": np.minimum, "prod": np.multiply}[how]
    return {"out": reduce.reduce(np.stack(values), axis=0)}


@kernel("broadcast")
def broadcast(k):
    values = peers(k, k.x("x"))[0]
    if not 0 <= k.attr("root") < len(values):
        raise ValueError(f"root {k.attr('root')} is not a rank of the group of {len(values)}")
    return {"out": values[k.attr("root")].copy()}


def chunk(x, axis: int, place: int, parts: int):
    if x.ndim == 0 or x.shape[axis] % parts:
        raise ValueError(f"dim {axis % max(x.ndim, 1)} of X {list(x.shape)} does not split into {parts} equal parts")
    width = x.shape[axis] // parts
    return np.take(x, np.arange(place * width, (place + 1) * width), axis=axis)


@kernel("c_split")
def c_split(k):
    rank, nranks = k.attr("rank"), k.attr("nranks")
    if nranks < 1 or not 0 <= rank < nranks:
        raise ValueError(f"rank {rank} of nranks {nranks}")
    return {"Out": chunk(k.x("X"), -1, rank, nranks)}


@kernel("c_concat")
def c_concat(k):
    return {"Out": np.concatenate(peers(k, k.x("X"), k.attr("nranks"))[0], axis=-1)}


@kernel("all_gather")
def all_gather(k):
    return {"out": np.concatenate(peers(k, k.x("x"), k.attr("nranks"))[0], axis=0)}


@kernel("reduce_scatter")
def reduce_scatter(k):
    values, place = peers(k, k.x("x"), k.attr("nranks"))
    return {"out": chunk(summed(values), 0, place, len(values))}


def _rows(k, w, ids) -> tuple[np.ndarray, np.ndarray]:
    """(W's row of each id, whether W holds it): ids start_index .. start_index + rows - 1 are this rank's."""
    local = ids.astype(np.int64) - k.attr("start_index")
    held = (local >= 0) & (local < w.shape[0])
    return np.where(held, local, 0), held


@kernel("c_embedding")
def c_embedding(k):
    w, ids = k.x("W"), k.x("Ids")
    rows, held = _rows(k, w, ids)
    return {"Out": w[rows] * held[..., None].astype(w.dtype)}


@kernel("c_embedding_grad")
def c_embedding_grad(k):
    w, ids, dout = k.x("W"), k.x("Ids"), k.x("Out@GRAD")
    rows, held = _rows(k, w, ids)
    grad = np.zeros_like(w)
    np.add.at(grad, rows[held], dout[held])
    return {"W@GRAD": grad}


def _labels(k, label, logits_shape) -> tuple[np.ndarray, np.ndarray]:
    """(each row's global class id, whether the row counts), rows as Logits' without the class axis."""
    ids = label.reshape(logits_shape[:-1]).astype(np.int64)
    return ids, ids != k.attr("ignore_index")


@kernel("c_softmax_with_cross_entropy")
def c_softmax_with_cross_entropy(k):
    logits = k.x("Logits")
    shards, place = peers(k, logits, k.attr("nranks"))
    whole = np.concatenate(shards, axis=-1)
    ids, counted = _labels(k, k.x("Label"), logits.shape)
    if np.any(counted & ((ids < 0) | (ids >= whole.shape[-1]))):
        raise ValueError(f"a Label is outside 0 .. {whole.shape[-1] - 1} (the classes of all ranks) and is not "
                         f"ignore_index {k.attr('ignore_index')}")
    shifted = whole - whole.max(axis=-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(log_softmax, np.where(counted, ids, 0)[..., None], axis=-1)
    width = logits.shape[-1]
    softmax = np.exp(log_softmax[..., place * width:(place + 1) * width])
    loss = np.where(counted[..., None], -picked, 0)
    return {"Softmax": softmax.astype(logits.dtype), "Loss": loss.astype(logits.dtype)}


@kernel("c_softmax_with_cross_entropy_grad")
def c_softmax_with_cross_entropy_grad(k):
    """dLogits = (Softmax - one_hot(Label) on this rank's classes) dLoss, zero on ignored rows."""
    softmax, dloss = k.x("Softmax"), k.x("Loss@GRAD")
    ids, counted = _labels(k, k.x("Label"), softmax.shape)
    local = ids - k.attr("rank") * softmax.shape[-1]
    grad = softmax.copy()
    mine = counted & (local >= 0) & (local < softmax.shape[-1])
    np.put_along_axis(grad, np.where(mine, local, 0)[..., None],
                      np.take_along_axis(grad, np.where(mine, local, 0)[..., None], axis=-1) - mine[..., None], -1)
    return {"Logits@GRAD": grad * dloss.reshape(*softmax.shape[:-1], 1) * counted[..., None]}


def _label_rows(k, label, logits_shape, classes: int) -> tuple[np.ndarray, np.ndarray]:
    """(each label's global class id, whether it counts), [rows..., labels]; checks the ids."""
    ids = label.reshape(*logits_shape[:-1], label.shape[-1]).astype(np.int64)
    counted = ids != k.attr("ignore_index")
    if np.any(counted & ((ids < 0) | (ids >= classes))):
        raise ValueError(f"a Label is outside 0 .. {classes - 1} (the classes of all ranks) and is not "
                         f"ignore_index {k.attr('ignore_index')}")
    return ids, counted


@kernel("c_softmax_with_multi_label_cross_entropy")
def c_softmax_with_multi_label_cross_entropy(k):
    """Loss_j = SmoothWeight_j (logsumexp(all classes) - Logits[Label_j]), 0 for an ignored label; summed over a
    row's labels with sum_multi_label_loss."""
    logits, weight = k.x("Logits"), k.x("SmoothWeight")
    shards, place = peers(k, logits, k.attr("nranks"))
    whole = np.concatenate(shards, axis=-1)
    ids, counted = _label_rows(k, k.x("Label"), logits.shape, whole.shape[-1])
    shifted = whole - whole.max(axis=-1, keepdims=True)
    log_softmax = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    losses = -np.take_along_axis(log_softmax, np.where(counted, ids, 0), axis=-1) * weight.reshape(ids.shape) * counted
    loss = losses.sum(axis=-1, keepdims=True) if k.attr("sum_multi_label_loss") else losses
    width = logits.shape[-1]
    softmax = np.exp(log_softmax[..., place * width:(place + 1) * width])
    return {"Softmax": softmax.astype(logits.dtype), "Loss": loss.astype(logits.dtype)}


@kernel("c_softmax_with_multi_label_cross_entropy_grad")
def c_softmax_with_multi_label_cross_entropy_grad(k):
    """dLogits = Softmax sum_j(w_j dLoss_j) - sum_j w_j dLoss_j one_hot(Label_j) on this rank's classes, over the
    counted labels (dLoss_j: the row's with sum_multi_label_loss). Paddle's kernel leaves out the sum of the weights
    in the first term, counts ignored labels in it, and reads the first label's dLoss for every label."""
    softmax, weight, dloss = k.x("Softmax"), k.x("SmoothWeight"), k.x("Loss@GRAD")
    width = softmax.shape[-1]
    ids, counted = _label_rows(k, k.x("Label"), softmax.shape, width * max(k.attr("nranks"), 1))
    scaled = weight.reshape(ids.shape) * counted * dloss.reshape(*ids.shape[:-1], -1)
    grad = softmax * scaled.sum(axis=-1, keepdims=True)
    local = ids - k.attr("rank") * width
    mine = counted & (local >= 0) & (local < width)
    rows = np.indices(ids.shape)[:-1]
    np.add.at(grad, (*[r[mine] for r in rows], local[mine]), -scaled[mine])
    return {"Logits@GRAD": grad.astype(softmax.dtype)}
