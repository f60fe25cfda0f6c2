"""Kernels of sparse_reshape, sparse_slice, sparse_sum and sparse_softmax (gradc.ops.sparse_shape). Reshape and slice
of a CSR tensor go as the COO tensor of its entries and come back as the CSR tensor of the result (Paddle's
reshape_csr does so; its slice_csr keeps the entries in the window, row by row: the same); sum of a CSR tensor is
Paddle's sum_csr (gradc.executor.kernels.sparse_csr)."""

from __future__ import annotations

import numpy as np

from ...ops.sparse_shape import resolve_shape, slice_dims, summed_dims
from ..sparse_value import SparseCoo, SparseCsr, csr_of
from . import kernel
from .index import ints
from .sparse import as_coo, coo, sparse
from .sparse_csr import csr_sum, csr_sum_grad
from .tensor import numpy_dtype


def _fail(message: str):
    raise ValueError(message)


def _given(k, name: str) -> list[int]:
    """The int list ``name``: its tensor's, else its list of tensors', else the attribute's (Paddle's IntArray)."""
    slot = name.capitalize() + "Tensor"
    return ints(k, [slot, slot + "List"], name)


@kernel("sparse_reshape")
def reshape(k):
    """The sparse dims renumbered row-major, the dense dims (the values' own) kept."""
    if isinstance(k.x("x"), SparseCsr):
        return {"out": csr_of(_reshaped(k, k.x("x").to_coo()))}
    return {"out": _reshaped(k, coo(k, "x"))}


def _reshaped(k, x: SparseCoo) -> SparseCoo:
    shape = resolve_shape(list(x.shape), _given(k, "shape"), _fail)
    dense = x.values.ndim - 1
    if tuple(shape[len(shape) - dense:]) != x.shape[x.sparse_dim:]:
        raise ValueError(f"sparse_reshape keeps the dense dims {list(x.shape[x.sparse_dim:])}: {list(x.shape)} "
                         f"cannot become {shape}")
    sparse = shape[:len(shape) - dense]
    indices = np.stack(np.unravel_index(x.linear_sites(), sparse)).astype(np.int64).reshape(len(sparse), -1)
    return SparseCoo(indices, x.values, tuple(shape))


@kernel("sparse_reshape_grad")
def reshape_grad(k):
    """dout's values on x's sites: a CSR tensor's entries are in row-major order before and after."""
    return {"x@GRAD": sparse(k, "x").with_values(sparse(k, "out@GRAD").values)}


def _window(k, x: SparseCoo):
    """(the output shape, which entries of x lie in the window, the window's starts by sparse dim)."""
    shape, windows = slice_dims(list(x.shape), _given(k, "axes"), _given(k, "starts"), _given(k, "ends"), _fail)
    kept, starts = np.ones(x.nnz, bool), np.zeros((x.sparse_dim, 1), np.int64)
    for axis, start, end in windows:
        if axis >= x.sparse_dim:
            raise ValueError(f"sparse_slice slices the sparse dims only (0 .. {x.sparse_dim - 1}), got axis {axis}")
        kept &= (x.indices[axis] >= start) & (x.indices[axis] < end)
        starts[axis] = start
    return tuple(shape), kept, starts


@kernel("sparse_slice")
def slice_(k):
    x = as_coo(k, "x")
    shape, kept, starts = _window(k, x)
    out = SparseCoo(x.indices[:, kept] - starts, x.values[kept], shape)
    return {"out": csr_of(out) if isinstance(k.x("x"), SparseCsr) else out}


@kernel("sparse_slice_grad")
def slice_grad(k):
    """dout on x's entries in the window, zeros on the others (Paddle's slice_csr_grad holds the window's only)."""
    x = as_coo(k, "x")
    _, kept, _ = _window(k, x)
    grad = np.zeros_like(x.values)
    grad[kept] = sparse(k, "out@GRAD").values
    return {"x@GRAD": sparse(k, "x").with_values(grad)}


def _groups(k, x: SparseCoo):
    """(the output shape, the reduced axes of the values, each entry's output site, the output sites' indices).
    Without a reduced sparse dim the sites stay as they are; otherwise the sites they merge into, sorted."""
    axis, keepdim = _given(k, "axis"), k.attr("keepdim")
    shape, reduced = summed_dims(list(x.shape), axis, keepdim, _fail)
    dense_axes = tuple(d - x.sparse_dim + 1 for d in reduced if d >= x.sparse_dim)
    sparse_reduced = [d for d in reduced if d < x.sparse_dim]
    if not sparse_reduced:
        return tuple(shape), dense_axes, np.arange(x.nnz), x.indices
    if not axis and not keepdim:   # everything into one site of a [1] tensor
        site_dims, site_indices = [1], np.zeros((1, x.nnz), np.int64)
    elif keepdim:
        site_dims = [1 if d in reduced else x.shape[d] for d in range(x.sparse_dim)]
        site_indices = np.where(np.isin(np.arange(x.sparse_dim), reduced)[:, None], 0, x.indices)
    else:
        kept = [d for d in range(x.sparse_dim) if d not in reduced]
        if not kept:
            raise ValueError(f"sparse_sum over every sparse dim {sparse_reduced} needs keepdim, or no axis")
        site_dims, site_indices = [x.shape[d] for d in kept], x.indices[kept]
    sites, rows = np.unique(np.ravel_multi_index(tuple(site_indices), site_dims), return_inverse=True)
    indices = np.stack(np.unravel_index(sites, site_dims)).astype(np.int64).reshape(len(site_dims), -1)
    return tuple(shape), dense_axes, rows.reshape(-1), indices


@kernel("sparse_sum")
def sum_(k):
    if isinstance(k.x("x"), SparseCsr):
        return {"out": csr_sum(k.x("x"), _given(k, "axis"), k.attr("keepdim"), k.attr("dtype"))}
    x = coo(k, "x")
    shape, dense_axes, rows, indices = _groups(k, x)
    values = x.values.sum(axis=dense_axes, keepdims=k.attr("keepdim")) if dense_axes else x.values
    out = np.zeros((indices.shape[1], *values.shape[1:]), values.dtype)
    np.add.at(out, rows, values)
    dtype = k.attr("dtype")
    return {"out": SparseCoo(indices, out if dtype == -1 else out.astype(numpy_dtype(dtype)), shape)}


@kernel("sparse_sum_grad")
def sum_grad(k):
    if isinstance(k.x("x"), SparseCsr):
        return {"x@GRAD": csr_sum_grad(k.x("x"), sparse(k, "out@GRAD"), _given(k, "axis"))}
    x = coo(k, "x")
    _, dense_axes, rows, _ = _groups(k, x)
    picked = coo(k, "out@GRAD").values[rows]
    if dense_axes and not k.attr("keepdim"):
        picked = np.expand_dims(picked, dense_axes)
    return {"x@GRAD": x.with_values(np.broadcast_to(picked, x.values.shape).astype(x.dtype))}


def _rows(x: SparseCoo) -> np.ndarray:
    """The row of each entry of an all-sparse tensor: its site without the last index."""
    return np.unique(np.ravel_multi_index(tuple(x.indices[:-1]), x.shape[:-1]), return_inverse=True)[1].reshape(-1)


def _softmax_of(kernel_on_coo, slot: str):
    """The kernel on a CSR tensor too (its input ``slot``): the all-sparse COO tensor of its entries, in their
    order."""
    def run(k):
        grads = k.x(slot)
        if not isinstance(grads, SparseCsr):
            return kernel_on_coo(k, coo)
        result = kernel_on_coo(k, lambda k, slot: k.x(slot).to_coo())
        return {slot: grads.with_values(value.values) for slot, value in result.items()}
    return run


def _softmax(k, coo):
    x = coo(k, "x")
    if x.values.ndim > 1:   # a dense last axis: the values' softmax
        shifted = np.exp(x.values - x.values.max(axis=-1, keepdims=True))
        return {"out": x.with_values(shifted / shifted.sum(axis=-1, keepdims=True))}
    rows = _rows(x)
    peak = np.full(rows.max(initial=-1) + 1, -np.inf, x.dtype)
    np.maximum.at(peak, rows, x.values)
    shifted = np.exp(x.values - peak[rows])
    total = np.zeros_like(peak)
    np.add.at(total, rows, shifted)
    return {"out": x.with_values(shifted / total[rows])}


def _softmax_grad(k, coo):
    out, dout = coo(k, "out"), coo(k, "out@GRAD")
    weighted = out.values * dout.values
    if out.values.ndim > 1:
        return {"x@GRAD": out.with_values(weighted - out.values * weighted.sum(axis=-1, keepdims=True))}
    rows = _rows(out)
    total = np.zeros(rows.max(initial=-1) + 1, out.dtype)
    np.add.at(total, rows, weighted)
    return {"x@GRAD": out.with_values(weighted - out.values * total[rows])}


kernel("sparse_softmax")(_softmax_of(_softmax, "x"))
kernel("sparse_softmax_grad")(_softmax_of(_softmax_grad, "out"))
