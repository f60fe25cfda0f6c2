"""Kernels of gradc.ops.graph: messages gathered along edges, reduced into rows with np.add.at / np.maximum.at /
np.minimum.at, and their grads scattered back the same way."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from . import kernel
from .index import checked

# message_op -> (message, d message / d x, d message / d y), on the gathered rows a and b
MESSAGES = {
    "ADD": (np.add, lambda a, b: np.ones_like(a * b), lambda a, b: np.ones_like(a * b)),
    "SUB": (np.subtract, lambda a, b: np.ones_like(a * b), lambda a, b: -np.ones_like(a * b)),
    "MUL": (np.multiply, lambda a, b: b, lambda a, b: a),
    "DIV": (np.divide, lambda a, b: 1 / b, lambda a, b: -a / (b * b)),
}


def edges(k, src_slot: str, dst_slot: str, src_rows: int, dst_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """The edges' endpoints as int64 vectors, each checked against the rows it indexes."""
    src, dst = (np.asarray(k.x(slot)).reshape(-1) for slot in (src_slot, dst_slot))
    if src.size != dst.size:
        raise ValueError(f"{src_slot} has {src.size} entries and {dst_slot} {dst.size}: one per edge in each")
    return checked(src, src_rows, src_slot, negative=False), checked(dst, dst_rows, dst_slot, negative=False)


def aligned(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a and b given one rank, 1s inserted after their first dim, so numpy broadcasts their feature dims from the
    right, as Paddle does, and never the first dim against a feature dim."""
    rank = max(a.ndim, b.ndim)
    return tuple(v.reshape(v.shape[:1] + (1,) * (rank - v.ndim) + v.shape[1:]) for v in (a, b))


def summed_to(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``grad`` (of the broadcast shape, same first dim) summed over the dims ``shape`` broadcast along."""
    kept = shape[:1] + (1,) * (grad.ndim - len(shape)) + shape[1:]
    axes = tuple(i for i, (g, s) in enumerate(zip(grad.shape, kept)) if s == 1 and g != 1)
    return grad.sum(axis=axes, keepdims=True).reshape(shape)


def sent_back(per_edge: np.ndarray, index: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Each edge's value added into the row of ``like`` it came from (``index``), summed down to like's shape, in
    its dtype: the adjoint of gathering like's rows and broadcasting them."""
    spread = np.zeros((like.shape[0],) + per_edge.shape[1:], per_edge.dtype)
    np.add.at(spread, index, per_edge)
    return summed_to(spread, like.shape).astype(like.dtype)


def pooled(messages: np.ndarray, dst: np.ndarray, rows: int, reduce_op: str) -> tuple[np.ndarray, np.ndarray]:
    """(Out, the count of messages per row): the messages reduced into ``rows`` rows by ``dst``; 0 where none."""
    out = np.zeros(check_shape((rows,) + messages.shape[1:], messages.dtype, "Out"), messages.dtype)
    check_shape((rows,), np.int64, "Out's count per row")   # rows come from attributes and ids, not the inputs
    count = np.bincount(dst, minlength=rows)
    if reduce_op in ("SUM", "MEAN"):
        np.add.at(out, dst, messages)
        if reduce_op == "MEAN":
            out = (out / np.maximum(count, 1).reshape((-1,) + (1,) * (out.ndim - 1))).astype(messages.dtype)
    else:
        reached = count > 0
        first = np.zeros(rows, np.int64)
        first[dst] = np.arange(dst.size)   # each reached row starts from one of its own messages
        out[reached] = messages[first[reached]]
        (np.maximum if reduce_op == "MAX" else np.minimum).at(out, dst, messages)
    return out, count.astype(np.int32)


def message_grad(dout: np.ndarray, dst: np.ndarray, out: np.ndarray, messages: np.ndarray, reduce_op: str):
    """d loss / d message of each edge: dOut of its row, divided by the row's count for MEAN, kept for MAX and MIN
    only where the message is the extreme."""
    grad = dout[dst]
    if reduce_op == "MEAN":
        count = np.bincount(dst)[dst]
        grad = grad / count.reshape((-1,) + (1,) * (grad.ndim - 1)).astype(dout.dtype)
    elif reduce_op in ("MAX", "MIN"):
        grad = grad * (messages == out[dst])
    return grad


def once_per_pair(grad: np.ndarray, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """grad of the winning messages (0 elsewhere: a winner's dOut is its row's, so nonzero marks the winners that
    count), divided among the winners of each (src, dst) pair at each element: X's row reaching a row through several
    tied edges is one variable, whose derivative is their mean, not their sum."""
    _, pair = np.unique(np.stack([src, dst]), axis=1, return_inverse=True)
    winners = np.zeros((pair.max() + 1,) + grad.shape[1:])
    np.add.at(winners, pair.reshape(-1), grad != 0)
    return grad / np.maximum(winners[pair.reshape(-1)], 1).astype(grad.dtype)


def _out_rows(k, x) -> int:
    if k.has("Out_size"):
        sizes = np.asarray(k.x("Out_size")).reshape(-1)
        if sizes.size != 1:
            raise ValueError(f"Out_size must hold one value, got {sizes.size}")
        size = int(sizes[0])
    else:
        size = int(k.attr("out_size")[0])
    return size if size > 0 else x.shape[0]


@kernel("graph_send_recv")
def graph_send_recv(k):
    x = k.x("X")
    rows = _out_rows(k, x)
    src, dst = edges(k, "Src_index", "Dst_index", x.shape[0], rows)
    out, count = pooled(x[src], dst, rows, k.attr("reduce_op"))
    return {"Out": out, "Dst_count": count}


@kernel("graph_send_recv_grad")
def graph_send_recv_grad(k):
    """dOut back along the edges; for MAX and MIN an edge repeating a (src, dst) pair adds nothing more (its
    message is the same row of X)."""
    x, dout, reduce_op = k.x("X"), k.x("Out@GRAD"), k.attr("reduce_op")
    src, dst = edges(k, "Src_index", "Dst_index", x.shape[0], dout.shape[0])
    extreme = reduce_op in ("MAX", "MIN")
    if extreme and src.size:
        src, dst = np.unique(np.stack([src, dst]), axis=1)
    grad = message_grad(dout, dst, k.x("Out") if extreme else None, x[src] if extreme else None, reduce_op)
    return {"X@GRAD": sent_back(grad, src, x)}


def _ue_operands(k, rows: int):
    """The edges (checked against X's rows and Out's ``rows``) and the two operands of each edge's message,
    broadcastable: X's row at its source and its own row of Y."""
    x, y = k.x("X"), k.x("Y")
    src, dst = edges(k, "Src_index", "Dst_index", x.shape[0], rows)
    if y.shape[0] != src.size:
        raise ValueError(f"Y has {y.shape[0]} rows for {src.size} edges: one per edge")
    return src, dst, *aligned(x[src], y)


@kernel("graph_send_ue_recv")
def graph_send_ue_recv(k):
    rows = _out_rows(k, k.x("X"))
    _, dst, a, b = _ue_operands(k, rows)
    out, count = pooled(MESSAGES[k.attr("message_op")][0](a, b), dst, rows, k.attr("reduce_op"))
    return {"Out": out, "Dst_count": count}


@kernel("graph_send_ue_recv_grad")
def graph_send_ue_recv_grad(k):
    x, y, dout, reduce_op = k.x("X"), k.x("Y"), k.x("Out@GRAD"), k.attr("reduce_op")
    src, dst, a, b = _ue_operands(k, dout.shape[0])
    message, d_x, d_y = MESSAGES[k.attr("message_op")]
    extreme = reduce_op in ("MAX", "MIN")
    grad = message_grad(dout, dst, k.x("Out") if extreme else None, message(a, b) if extreme else None, reduce_op)
    x_grad = once_per_pair(grad, src, dst) if extreme and src.size else grad
    return k.grads({"X@GRAD": lambda: sent_back(x_grad * d_x(a, b), src, x),
                    "Y@GRAD": lambda: summed_to(grad * d_y(a, b), y.shape).astype(y.dtype)})


@kernel("graph_send_uv")
def graph_send_uv(k):
    x, y = k.x("x"), k.x("y")
    src, dst = edges(k, "src_index", "dst_index", x.shape[0], y.shape[0])
    return {"out": MESSAGES[k.attr("message_op")][0](*aligned(x[src], y[dst]))}


@kernel("graph_send_uv_grad")
def graph_send_uv_grad(k):
    x, y, dout = k.x("x"), k.x("y"), k.x("out@GRAD")
    src, dst = edges(k, "src_index", "dst_index", x.shape[0], y.shape[0])
    _, d_x, d_y = MESSAGES[k.attr("message_op")]
    a, b = aligned(x[src], y[dst])
    return k.grads({"x@GRAD": lambda: sent_back(dout * d_x(a, b), src, x),
                    "y@GRAD": lambda: sent_back(dout * d_y(a, b), dst, y)})


def segments(k, x) -> np.ndarray:
    """SegmentIds as int64, one per row of X, sorted and >= 0, as Paddle requires."""
    ids = np.asarray(k.x("SegmentIds")).reshape(-1).astype(np.int64)
    if ids.size != x.shape[0]:
        raise ValueError(f"SegmentIds has {ids.size} entries for the {x.shape[0]} rows of X: one per row")
    if ids.size and ids[0] < 0:
        raise ValueError(f"SegmentIds must be >= 0, got {ids[0]}")
    unsorted = np.flatnonzero(np.diff(ids) < 0)
    if unsorted.size:
        i = unsorted[0]
        raise ValueError(f"SegmentIds must be sorted, got {ids[i]} before {ids[i + 1]} (entries {i} and {i + 1})")
    return ids


@kernel("segment_pool")
def segment_pool(k):
    x = k.x("X")
    ids = segments(k, x)
    rows = int(ids[-1]) + 1 if ids.size else 0
    out, count = pooled(x, ids, rows, k.attr("pooltype"))
    return {"Out": out, "SummedIds": count.astype(x.dtype).reshape(rows, 1)}


@kernel("segment_pool_grad")
def segment_pool_grad(k):
    x, pooltype = k.x("X"), k.attr("pooltype")
    ids = segments(k, x)
    out = k.x("Out") if pooltype in ("MAX", "MIN") else None
    return {"X@GRAD": message_grad(k.x("Out@GRAD"), ids, out, x, pooltype).astype(x.dtype)}
