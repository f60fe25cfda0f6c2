"""Kernels of gradc.ops.sparse_attention: sparse_attention and its grad over the CSR entries of each batch and head,
in float64 inside, cast once to Q's dtype."""

from __future__ import annotations

import numpy as np

from . import kernel


def _entries(offset: np.ndarray, columns: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, key) of each CSR entry of one head; the layout checked as the kernel would need it."""
    if offset[0] != 0 or np.any(np.diff(offset) < 0) or offset[-1] > len(columns):
        raise ValueError(f"Offset {offset.tolist()} must rise from 0 to at most the {len(columns)} Columns entries")
    keys = columns[:offset[-1]].astype(np.int64)
    if np.any(keys < 0) or np.any(keys >= rows):
        raise ValueError(f"Columns {keys.tolist()} must name keys in 0 .. {rows - 1}")
    return np.repeat(np.arange(rows), np.diff(offset)), keys


def _scale(q: np.ndarray) -> float:
    """1 / sqrt(head_dim) in Q's dtype (the kernel's T)."""
    d = q.dtype.type(q.shape[-1])
    return float(q.dtype.type(1) / np.sqrt(d))


def _row_softmax(scores: np.ndarray, rows: np.ndarray, count: int) -> np.ndarray:
    """Softmax of the entries' scores within each row; a row of -inf only gives 0."""
    top = np.full(count, -np.inf)
    np.maximum.at(top, rows, scores)
    top = np.where(np.isfinite(top), top, 0.0)
    e = np.exp(scores - top[rows])
    total = np.zeros(count)
    np.add.at(total, rows, e)
    return e / np.where(total == 0, 1.0, total)[rows]


@kernel("sparse_attention")
def sparse_attention(k):
    q = k.x("Q")
    query, key, value = (np.asarray(k.x(slot), np.float64) for slot in ("Q", "K", "V"))
    offset, columns = np.asarray(k.x("Offset")), np.asarray(k.x("Columns"))
    padding, attn = k.optional("KeyPaddingMask"), k.optional("AttnMask")
    eps = np.finfo(q.dtype).eps
    b, h, s, d = q.shape
    out, sdd, softmax = np.zeros((b, h, s, d)), np.zeros(columns.shape), np.zeros(columns.shape)
    for bi, hi in np.ndindex(b, h):
        rows, keys = _entries(offset[bi, hi], columns[bi, hi], s)
        dots = np.einsum("nd,nd->n", query[bi, hi, rows], key[bi, hi, keys])
        masked = np.zeros(len(rows), bool)
        if padding is not None:
            masked |= np.abs(np.asarray(padding)[bi, keys]) < eps
        if attn is not None:
            masked |= np.abs(np.asarray(attn)[rows, keys]) < eps
        p = _row_softmax(np.where(masked, -np.inf, dots * _scale(q)), rows, s)
        np.add.at(out[bi, hi], rows, p[:, None] * value[bi, hi, keys])
        sdd[bi, hi, :len(rows)], softmax[bi, hi, :len(rows)] = dots, p
    return k.grads({"Out": lambda: out.astype(q.dtype), "SparseDotSdd": lambda: sdd.astype(q.dtype),
                    "Softmax": lambda: softmax.astype(q.dtype)})


@kernel("sparse_attention_grad")
def sparse_attention_grad(k):
    """From the forward's Softmax p, as Paddle's kernel: dV = p^T dOut; d(q_i . k_j) = scale p (g - sum_row p g) with
    g = dOut_i . v_j; dQ and dK through the entries."""
    q = k.x("Q")
    query, key, value, dout = (np.asarray(k.x(slot), np.float64) for slot in ("Q", "K", "V", "Out@GRAD"))
    offset, columns, probs = np.asarray(k.x("Offset")), np.asarray(k.x("Columns")), np.asarray(k.x("Softmax"))
    b, h, s, d = q.shape
    grads = {slot: np.zeros((b, h, s, d)) for slot in ("Q", "K", "V")}
    for bi, hi in np.ndindex(b, h):
        rows, keys = _entries(offset[bi, hi], columns[bi, hi], s)
        p = probs[bi, hi, :len(rows)].astype(np.float64)
        np.add.at(grads["V"][bi, hi], keys, p[:, None] * dout[bi, hi, rows])
        g = np.einsum("nd,nd->n", dout[bi, hi, rows], value[bi, hi, keys])
        weighted = np.zeros(s)
        np.add.at(weighted, rows, p * g)
        dscore = _scale(q) * p * (g - weighted[rows])
        np.add.at(grads["Q"][bi, hi], rows, dscore[:, None] * key[bi, hi, keys])
        np.add.at(grads["K"][bi, hi], keys, dscore[:, None] * query[bi, hi, rows])
    return k.grads({f"{slot}@GRAD": (lambda g=g: g.astype(q.dtype)) for slot, g in grads.items()})
