"""Kernels of gradc.ops.scans: cummax, cummin, logcumsumexp, mode (median and nanmedian: scans_median.py).
Each runs along the last axis of X moved there (a 0-d X runs as [1])."""

from __future__ import annotations

import numpy as np

from ...ir import VarType
from ...shapes import normalize_axis
from . import kernel
from .cumprod import along
from .scans_order import THRESHOLD, sorted_indices


def isnan(a: np.ndarray) -> np.ndarray:
    """NaN marks of any dtype (integers hold none)."""
    return np.isnan(a) if a.dtype.kind in "fc" else np.zeros(a.shape, bool)


def scatter_rows(rows: np.ndarray, positions: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Zeros like ``rows`` [R, n] with each value added at its row's position (repeats add up)."""
    out = np.zeros(rows.shape, values.dtype)
    np.add.at(out, (np.arange(rows.shape[0])[:, None], positions), values)
    return out


def _cum_extreme(running):
    """cummax / cummin: out_j is the max (min) of x_0..x_j, NaN from the first NaN on; indices_j is where it
    was last taken: an element equal to the running value takes it again, and so does each NaN."""
    def cum_extreme(k):
        x = k.x("x")
        run, back = along(x, k.attr("axis"))
        a = run(x)
        out = running.accumulate(a, axis=-1)
        taken = (a == out) | isnan(a)
        indices = np.maximum.accumulate(np.where(taken, np.arange(a.shape[-1]), 0), axis=-1)
        dtype = np.int32 if k.attr("dtype") == VarType.INT32 else np.int64
        return {"out": back(out), "indices": back(indices).astype(dtype)}
    return cum_extreme


def _cum_extreme_grad(k):
    """Each out@GRAD goes to the element its index names (an element picked several times gets their sum)."""
    x = k.x("x")
    run, back = along(x, k.attr("axis"))
    dout = run(k.x("out@GRAD"))
    n = dout.shape[-1]
    rows = scatter_rows(dout.reshape(-1, n), run(k.x("indices")).reshape(-1, n).astype(np.int64), dout.reshape(-1, n))
    return {"x@GRAD": back(rows.reshape(dout.shape))}


kernel("cummax")(_cum_extreme(np.maximum))
kernel("cummin")(_cum_extreme(np.minimum))
kernel("cummax_grad", "cummin_grad", shape_only=("x",))(_cum_extreme_grad)


def _log_scan(a: np.ndarray, exclusive: bool, reverse: bool) -> np.ndarray:
    """log(cumsum(exp(a))) along the last axis in float64; an empty sum is -inf."""
    a = a[..., ::-1] if reverse else a
    with np.errstate(invalid="ignore"):
        out = np.logaddexp.accumulate(a, axis=-1) if a.shape[-1] else a
    if exclusive:
        out = np.concatenate([np.full_like(out[..., :1], -np.inf), out[..., :-1]], axis=-1)
    return out[..., ::-1] if reverse else out


def _logcumsumexp_layout(k, x: np.ndarray):
    """flatten runs over X flattened (axis ignored); Out is then 1-D."""
    if k.attr("flatten"):
        return (lambda v: v.reshape(-1)), (lambda v: v.reshape(x.shape))
    return along(x, k.attr("axis"))


@kernel("logcumsumexp")
def logcumsumexp(k):
    """An empty sum (exclusive's first entry) or one of -inf terms only is the dtype's lowest value, as in Paddle.
    A NaN makes the rest of the scan NaN (Paddle 3.3.1 reads a NaN as a copy of the running value)."""
    x = k.x("X")
    run, back = _logcumsumexp_layout(k, x)
    out = _log_scan(run(x).astype(np.float64), k.attr("exclusive"), k.attr("reverse"))
    out = np.maximum(out, np.finfo(x.dtype).min).astype(x.dtype)
    return {"Out": out if k.attr("flatten") else back(out)}


@kernel("logcumsumexp_grad", shape_only=("Out",))
def logcumsumexp_grad(k):
    """dx_j = sum over the outputs i that hold x_j of dout_i exp(x_j - out_i): the positive and the negative
    parts of dout each scanned in log space the other way, so no exp overflows. out is recomputed from X in
    float64 (a float32 Out near 1000 is off by 6e-5, which exp(x - out) would carry into dx)."""
    x = k.x("X")
    run, back = _logcumsumexp_layout(k, x)
    a, dout = run(x).astype(np.float64), run(k.x("Out@GRAD")).astype(np.float64)
    exclusive = k.attr("exclusive")
    out = np.maximum(_log_scan(a, exclusive, k.attr("reverse")), np.finfo(np.float64).min)
    with np.errstate(divide="ignore", invalid="ignore"):
        gathered = [np.exp(_log_scan(np.log(np.maximum(sign * dout, 0)) - out, exclusive, not k.attr("reverse")) + a)
                    for sign in (1, -1)]
    return {"X@GRAD": back((gathered[0] - gathered[1]).astype(x.dtype))}


def _modes(rows: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row [R, n] sorted by ``order``: the first of its longest runs of equal values (the smallest such
    value; each NaN a run of its own) and the original index of the run's last element."""
    n = rows.shape[1]
    ordered = np.take_along_axis(rows, order, axis=1)
    run_ends = np.ones(ordered.shape, bool)
    run_ends[:, :-1] = ordered[:, 1:] != ordered[:, :-1]
    starts = np.ones(ordered.shape, bool)
    starts[:, 1:] = run_ends[:, :-1]
    run_start = np.maximum.accumulate(np.where(starts, np.arange(n), 0), axis=1)
    picked = np.argmax(np.where(run_ends, np.arange(n) - run_start + 1, 0), axis=1)[:, None]
    return np.take_along_axis(ordered, picked, axis=1)[:, 0], np.take_along_axis(order, picked, axis=1)[:, 0]


@kernel("mode")
def mode(k):
    """Paddle's rule: sort each row ascending (NaNs last), take the first of the most frequent values and the
    index of the last of them in the sorted row. Paddle's std::sort keeps equal elements in their order in a
    row of up to 16 (its last occurrence); a longer row with a repeated mode is sorted as Paddle sorts it
    (scans_order), which can put another occurrence last."""
    x = k.x("X")
    run, _ = along(x, k.attr("axis"))
    a = run(x)
    n = a.shape[-1]
    if n == 0:
        raise ValueError(f"mode needs a nonempty axis {k.attr('axis')} of X {list(x.shape)}")
    rows = a.reshape(-1, n)
    values, indices = _modes(rows, np.argsort(rows, axis=1, kind="stable"))
    if n > THRESHOLD:
        repeated = ((rows == values[:, None]) | (isnan(rows) & isnan(values)[:, None])).sum(axis=1) > 1
        for row in np.flatnonzero(repeated):
            indices[row] = _modes(rows[row:row + 1], np.array([sorted_indices(rows[row].tolist())]))[1][0]
    shape = list(a.shape[:-1])
    if k.attr("keepdim") and x.ndim:
        shape.insert(normalize_axis(k.attr("axis"), x.ndim), 1)
    return {"Out": values.reshape(shape), "Indices": indices.reshape(shape).astype(np.int64)}


@kernel("mode_grad", shape_only=("X",))
def mode_grad(k):
    """Out@GRAD goes to the element Indices names, one per row."""
    x, dout = k.x("X"), k.x("Out@GRAD")
    run, back = along(x, k.attr("axis"))
    moved = run(x).shape
    rows = np.zeros((dout.size, moved[-1]), dout.dtype)
    np.put_along_axis(rows, k.x("Indices").reshape(-1, 1).astype(np.int64), dout.reshape(-1, 1), axis=1)
    return {"X@GRAD": back(rows.reshape(moved))}
