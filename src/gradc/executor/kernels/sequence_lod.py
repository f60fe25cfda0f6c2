"""Kernels of gradc.ops.sequence_lod, over the LoD the kernel context reads (gradc.executor.lod). Sequences are
told apart by the offsets of the LoD's last level; each kernel is vectorised over rows (a loop over sequences
where a per-sequence reduction needs one). The windowed ops (sequence_conv, im2sequence) are in
sequence_lod_windows.py."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from ...ops import sequence_lod as ops
from ..lod import SETS_LOD, level_offsets, lod_problem
from . import kernel

SETS_LOD.update({"sequence_pool", "sequence_expand", "lod_reset"})


def lod_or_fail(k, slot: str, at_most: int | None = None) -> tuple:
    """The LoD of the slot's var; a clear error when it has none (or more levels than the op takes)."""
    lod = k.lod(slot)
    if not lod:
        raise ValueError(f"{slot} has no LoD: {k.op.type} works on sequences (feed a gradc.executor.LoDTensor "
                         f"or make {slot} with an op that sets one)")
    if at_most is not None and len(lod) > at_most:
        raise ValueError(f"{slot} has {len(lod)} LoD levels; {k.op.type} takes at most {at_most}")
    return lod


def offsets(k, slot: str, at_most: int | None = None) -> np.ndarray:
    """The offsets of the last LoD level of the slot's var, checked against its rows."""
    lod = lod_or_fail(k, slot, at_most)
    rows = k.x(slot).shape[0]
    if lod[-1][-1] != rows:
        raise ValueError(f"{slot}'s LoD {[list(level) for level in lod]} ends at {lod[-1][-1]}, but it has {rows} rows")
    return np.asarray(lod[-1], dtype=np.int64)


def segment_ids(bounds: np.ndarray) -> np.ndarray:
    """The sequence of each row."""
    return np.repeat(np.arange(len(bounds) - 1), np.diff(bounds))


# ---------------------------------------------------------------- sequence_pool

def _pool_divisor(pooltype: str, lengths: np.ndarray) -> np.ndarray | None:
    if pooltype == "AVERAGE":
        return lengths.astype(np.float64)
    if pooltype == "SQRT":
        return np.sqrt(lengths.astype(np.float64))
    return None


def _pooltype(k) -> str:
    pooltype = k.attr("pooltype")
    if pooltype not in ops.POOL_TYPES:
        raise ValueError(f"pooltype {pooltype!r} is not one of {list(ops.POOL_TYPES)}")
    return pooltype


@kernel("sequence_pool")
def sequence_pool(k):
    x, pooltype = k.x("X"), _pooltype(k)
    bounds = offsets(k, "X", at_most=2)
    starts, lengths = bounds[:-1], np.diff(bounds)
    full = lengths > 0
    out = np.full((len(lengths), *x.shape[1:]), k.attr("pad_value"), dtype=x.dtype)
    index = np.full(out.shape, -1, dtype=np.int32)
    if pooltype == "FIRST":
        out[full] = x[starts[full]]
    elif pooltype == "LAST":
        out[full] = x[bounds[1:][full] - 1]
    elif pooltype == "MAX":
        for i in np.flatnonzero(full):
            index[i] = starts[i] + x[starts[i]:bounds[i + 1]].argmax(axis=0)   # the first maximum, as Paddle
        out[full] = np.take_along_axis(x, index[full].astype(np.int64), axis=0)
    elif full.any():
        sums = np.add.reduceat(x.astype(np.float64), starts[full], axis=0)
        divisor = _pool_divisor(pooltype, lengths[full])
        if divisor is not None:
            sums /= divisor.reshape(-1, *[1] * (x.ndim - 1))
        out[full] = sums
    lod = k.lod("X")
    k.set_lod("Out", lod[:-1] or None)
    return {"Out": out, "MaxIndex": index} if k.wants("MaxIndex") else {"Out": out}


@kernel("sequence_pool_grad")
def sequence_pool_grad(k):
    x, dout, pooltype = k.x("X"), k.x("Out@GRAD"), _pooltype(k)
    bounds = offsets(k, "X", at_most=2)
    lengths = np.diff(bounds)
    full = lengths > 0
    dx = np.zeros_like(x)
    if pooltype == "FIRST":
        dx[bounds[:-1][full]] = dout[full]
    elif pooltype == "LAST":
        dx[bounds[1:][full] - 1] = dout[full]
    elif pooltype == "MAX":
        index = k.x("MaxIndex").astype(np.int64).reshape(dout.shape[0], -1)
        picked = index >= 0   # -1: an empty sequence, whose pad value has no gradient
        columns = np.broadcast_to(np.arange(index.shape[1]), index.shape)
        flat = dx.reshape(dx.shape[0], -1)
        np.add.at(flat, (index[picked], columns[picked]), dout.reshape(index.shape)[picked])
    else:
        divisor = _pool_divisor(pooltype, lengths)
        spread = dout if divisor is None else dout / np.maximum(divisor, 1).reshape(-1, *[1] * (dout.ndim - 1))
        dx[...] = spread[segment_ids(bounds)]
    return {"X@GRAD": dx}


# ---------------------------------------------------------------- sequence_softmax

def _softmax_rows(k):
    x = k.x("X")
    bounds = offsets(k, "X")
    if x.size != x.shape[0]:
        raise ValueError(f"X {list(x.shape)} must hold one value per row ([rows] or [rows, 1])")
    return x, bounds, segment_ids(bounds)


@kernel("sequence_softmax")
def sequence_softmax(k):
    x, bounds, ids = _softmax_rows(k)
    flat = x.reshape(-1).astype(np.float64)
    peak = np.full(len(bounds) - 1, -np.inf)
    np.maximum.at(peak, ids, flat)
    exp = np.exp(flat - peak[ids])   # shifted by each sequence's maximum: no overflow
    total = np.bincount(ids, exp, minlength=len(bounds) - 1)
    return {"Out": (exp / total[ids]).astype(x.dtype).reshape(x.shape)}


@kernel("sequence_softmax_grad")
def sequence_softmax_grad(k):
    x, bounds, ids = _softmax_rows(k)
    out = k.x("Out").reshape(-1).astype(np.float64)
    dout = k.x("Out@GRAD").reshape(-1).astype(np.float64)
    inner = np.bincount(ids, dout * out, minlength=len(bounds) - 1)
    return {"X@GRAD": ((dout - inner[ids]) * out).astype(x.dtype).reshape(x.shape)}


# ---------------------------------------------------------------- sequence_expand

def _expansion(k):
    """(the X row of each Out row, Out's LoD or None): X's sequences (rows, without a LoD) repeated by the
    lengths of Y's level ref_level."""
    x = k.x("X")
    y_lod = lod_or_fail(k, "Y")
    level = k.attr("ref_level")
    if not -1 <= level < len(y_lod):
        raise ValueError(f"ref_level {level} must be -1 or in [0, {len(y_lod)}) for Y's {len(y_lod)} LoD levels")
    ref = np.asarray(y_lod[level], dtype=np.int64)
    x_lod = k.lod("X")
    if x_lod and len(x_lod) > 1:
        raise ValueError(f"X has {len(x_lod)} LoD levels; sequence_expand takes at most 1")
    x_bounds = np.asarray(x_lod[0], dtype=np.int64) if x_lod else np.arange(x.shape[0] + 1)
    if len(ref) <= 1:
        return np.arange(x.shape[0]), x_lod
    if len(x_bounds) != len(ref):
        what = "sequences" if x_lod else "rows"
        raise ValueError(f"X has {len(x_bounds) - 1} {what}, but level {level} of Y's LoD has {len(ref) - 1}")
    repeats, lengths = np.diff(ref), np.diff(x_bounds)
    check_shape((int(lengths @ repeats), *x.shape[1:]), x.dtype, "Out")   # its rows: X's sequences, repeated
    picks = [np.tile(np.arange(x_bounds[i], x_bounds[i + 1]), repeats[i]) for i in range(len(repeats))]
    rows = np.concatenate(picks) if picks else np.zeros(0, np.int64)
    out_lod = ((0, *np.cumsum(np.repeat(lengths, repeats)).tolist()),) if x_lod else None
    return rows, out_lod


@kernel("sequence_expand")
def sequence_expand(k):
    rows, lod = _expansion(k)
    k.set_lod("Out", lod)
    return {"Out": k.x("X")[rows]}


@kernel("sequence_expand_grad")
def sequence_expand_grad(k):
    rows, _ = _expansion(k)
    dx = np.zeros_like(k.x("X"))
    np.add.at(dx, rows, k.x("Out@GRAD"))
    return {"X@GRAD": dx}


# ---------------------------------------------------------------- lod_reset

@kernel("lod_reset")
def lod_reset(k):
    x = k.x("X")
    rows = x.shape[0] if x.ndim else 0
    if k.has("Y") and k.lod("Y"):
        lod = k.lod("Y")
        if lod[-1][-1] != rows:
            raise ValueError(f"the last offset of Y's LoD {[list(level) for level in lod]} must be X's dim 0 ({rows})")
    else:
        level = (level_offsets(k.x("Y").reshape(-1), "Y's values", ValueError) if k.has("Y")
                 else tuple(k.attr("target_lod")))
        if len(level) < 2:
            raise ValueError(f"the target LoD {list(level)} needs at least 2 offsets")
        problem = lod_problem((level,), rows)
        if problem:
            raise ValueError(f"the target LoD: {problem}")
        lod = (*(k.lod("X") or ()), level) if k.attr("append") else (level,)
    k.set_lod("Out", lod)
    return {"Out": x.copy()}


@kernel("lod_reset_grad")
def lod_reset_grad(k):
    dout, shape = k.x("Out@GRAD"), k.x("X").shape
    if dout.shape != shape:
        raise ValueError(f"Out@GRAD {list(dout.shape)} must have X's shape {list(shape)}: Out is X relabelled")
    return {"X@GRAD": dout.copy()}
