"""Kernels of sparse_to_sparse_csr and sparse_to_sparse_coo (gradc.ops.sparse_csr), and the sum of a CSR tensor that
sparse_sum's kernel calls (Paddle's sum_csr: gradc.ops.sparse_shape)."""

from __future__ import annotations

import numpy as np

from ...ops.sparse_shape import csr_summed_dims
from ..sparse_value import SparseCoo, SparseCsr, csr_of, dense_coo
from . import kernel
from .tensor import numpy_dtype


@kernel("sparse_to_sparse_csr")
def to_csr(k):
    x = k.x("x")
    if isinstance(x, SparseCsr):
        return {"out": x}
    return {"out": csr_of(x if isinstance(x, SparseCoo) else dense_coo(np.asarray(x), np.ndim(x)))}


@kernel("sparse_to_sparse_coo")
def to_coo(k):
    x = k.x("x")
    if isinstance(x, SparseCsr):
        return {"out": x.to_coo()}
    if isinstance(x, SparseCoo):
        return {"out": x}
    sparse_dim = k.attr("sparse_dim")
    if not 0 < sparse_dim <= np.ndim(x):
        raise ValueError(f"sparse_to_sparse_coo needs 0 < sparse_dim <= {np.ndim(x)}, got {sparse_dim}")
    return {"out": dense_coo(np.asarray(x), sparse_dim)}


def _fail(message: str):
    raise ValueError(message)


def csr_sum(x: SparseCsr, axis: list[int], keepdim: bool, dtype: int) -> SparseCsr:
    """Over every axis one entry; over the last one entry per row that holds any: in column 0 of the rows' [rows, 1]
    or [batch, rows, 1], or at (batch, row) of the [batch, rows] matrix of a batch summed without keepdim (the dims:
    csr_summed_dims; Paddle's kernel fails on that last one)."""
    shape = tuple(csr_summed_dims(list(x.shape), axis, keepdim, _fail))
    if not axis:
        out = SparseCoo(np.zeros((len(shape), 1), np.int64), x.values.sum(keepdims=True), shape)
    else:
        rows, entry = np.unique(np.ravel_multi_index(tuple(x.sites()[:-1]), x.shape[:-1]), return_inverse=True)
        sums = np.zeros(len(rows), x.dtype)
        np.add.at(sums, entry.reshape(-1), x.values)
        sites = list(np.unravel_index(rows, x.shape[:-1]))
        if len(shape) == len(x.shape):   # the rows' sums in column 0
            sites.append(np.zeros(len(rows), np.int64))
        out = SparseCoo(np.stack(sites).astype(np.int64).reshape(len(shape), -1), sums, shape)
    csr = csr_of(out)
    return csr if dtype == -1 else csr.with_values(csr.values.astype(numpy_dtype(dtype)))


def csr_sum_grad(x: SparseCsr, dout: SparseCsr, axis: list[int]) -> SparseCsr:
    """Each entry of x gets the sum's gradient at the entry it went into."""
    if not axis:
        return x.with_values(np.full(x.nnz, dout.values.sum(), x.dtype))
    per_row = dout.to_dense().reshape(x.shape[:-1])
    return x.with_values(per_row[tuple(x.sites()[:-1])].astype(x.dtype))
