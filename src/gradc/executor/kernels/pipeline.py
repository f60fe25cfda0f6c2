"""Kernels of gradc.ops.pipeline: a send hands its value to gradc.executor.ranks (it does not wait), a receive
takes the next value its peer sent on the ring. Run alone (no job), the peer is missing: one error naming it."""

from __future__ import annotations

import numpy as np

from .. import ranks
from . import kernel
from .collective import peers
from .tensor import numpy_dtype


def _job(k):
    """(the job, this thread's rank); fails run alone, where the peer (another rank by definition) is missing."""
    joined = ranks.current()
    if joined is None:
        raise ValueError(f"ring_id {k.attr('ring_id')}: its peer {k.attr('peer')} is another rank, and this process "
                         f"runs one rank: the peer is missing (run every rank's program together: gradc run-ranks, "
                         f"or gradc.executor.ranks.run_ranks)")
    return joined


def _send(k, value) -> dict:
    job, rank = _job(k)
    job.send(rank, k.attr("ring_id"), k.attr("peer"), value.copy())
    return {}


def _receive(k) -> np.ndarray:
    job, rank = _job(k)
    value = job.receive(rank, k.attr("ring_id"), k.attr("peer"), k.where)
    dtype = numpy_dtype(k.attr("dtype"))
    if value.dtype != dtype:
        raise ValueError(f"the peer sent {value.dtype}, and dtype says {dtype}")
    return value


def _shaped(k, value) -> np.ndarray:
    """The value as out_shape says, unless dynamic_shape (the sender's shape travels with it)."""
    shape = list(k.attr("out_shape"))
    if k.op.attrs.get("dynamic_shape", False) or not shape:
        return value
    if value.size != int(np.prod(shape)) or any(d < 0 for d in shape):
        raise ValueError(f"the peer sent a tensor of shape {list(value.shape)}, and out_shape is {shape}")
    return value.reshape(shape)


@kernel("send_v2")
def send_v2(k):
    return _send(k, k.x("X"))


@kernel("p_send")
def p_send(k):
    return _send(k, k.x("x"))


@kernel("recv_v2")
def recv_v2(k):
    return {"Out": _shaped(k, _receive(k))}


@kernel("p_recv")
def p_recv(k):
    return {"out": _shaped(k, _receive(k))}


def _part(flat: np.ndarray, index: int, parts: int) -> slice:
    if flat.size % parts:
        raise ValueError(f"{flat.size} elements do not split into {parts} equal parts")
    width = flat.size // parts
    return slice(index * width, (index + 1) * width)


@kernel("partial_send")
def partial_send(k):
    flat = k.x("X").reshape(-1)
    return _send(k, flat[_part(flat, k.attr("id"), k.attr("num"))])


@kernel("partial_recv")
def partial_recv(k):
    shape, dtype = list(k.attr("out_shape")), numpy_dtype(k.attr("dtype"))
    out = np.zeros(int(np.prod(shape)), dtype)
    where = _part(out, k.attr("id"), k.attr("num"))
    part = _receive(k)
    if part.size != where.stop - where.start:
        raise ValueError(f"the peer sent {part.size} elements, and part {k.attr('id')} of {k.attr('num')} of "
                         f"out_shape {shape} has {where.stop - where.start}")
    out[where] = part
    return {"Out": out.reshape(shape)}


@kernel("partial_allgather")
def partial_allgather(k):
    x = k.x("X")
    values, _ = peers(k, x, k.attr("nranks"))
    parts = len(values)
    out = np.concatenate([value.reshape(-1)[_part(value.reshape(-1), r, parts)] for r, value in enumerate(values)])
    return {"Out": out.reshape(x.shape)}


@kernel("nop")
def nop(k):
    return {"Out": k.xs("X")}
