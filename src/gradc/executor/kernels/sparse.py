"""Kernels of paddle.sparse's ops on SparseCoo values (gradc.ops.sparse). A sparse var's gradients are SparseCoo
values on its sites, which the backward's sum adds value by value (gradc.executor.sparse_value.add_on_sites)."""

from __future__ import annotations

import numpy as np

from ..sparse_value import SparseCoo, SparseCsr, csr_of
from . import kernel


def coo(k, slot: str) -> SparseCoo:
    value = k.x(slot)
    if not isinstance(value, SparseCoo):
        raise ValueError(f"input {slot} holds a dense tensor, not a sparse COO tensor (paddle.sparse)")
    return value


def sparse(k, slot: str) -> SparseCoo | SparseCsr:
    """A COO or CSR input (the ops paddle.sparse offers for both)."""
    value = k.x(slot)
    if not isinstance(value, (SparseCoo, SparseCsr)):
        raise ValueError(f"input {slot} holds a dense tensor, not a sparse COO or CSR tensor (paddle.sparse)")
    return value


def sites(x: SparseCoo | SparseCsr) -> tuple:
    """Each entry's coordinates in the dense tensor (of its sparse dims for a COO tensor), to index it with."""
    return tuple(x.sites() if isinstance(x, SparseCsr) else x.indices)


@kernel("sparse_sparse_coo_tensor")
def sparse_coo_tensor(k):
    values, indices, shape = k.x("values"), k.x("indices"), tuple(k.attr("shape"))
    if indices.ndim != 2 or indices.shape[1] != values.shape[0]:
        raise ValueError(f"indices {list(indices.shape)} do not name one site per row of values "
                             f"{list(values.shape)}")
    if indices.shape[0] + values.ndim - 1 != len(shape) or tuple(values.shape[1:]) != shape[indices.shape[0]:]:
        raise ValueError(f"values {list(values.shape)} at {indices.shape[0]} sparse dims do not fit "
                             f"shape {list(shape)}")
    bounds = np.array(shape[:indices.shape[0]]).reshape(-1, 1)
    if indices.size and ((indices < 0) | (indices >= bounds)).any():
        raise ValueError(f"an index is outside shape {list(shape)}")
    return {"out": SparseCoo(indices.astype(np.int64), values, shape)}


@kernel("sparse_sparse_coo_tensor_grad")
def sparse_coo_tensor_grad(k):
    return {"values@GRAD": coo(k, "out@GRAD").values}


@kernel("sparse_to_dense")
def to_dense(k):
    return {"out": sparse(k, "x").to_dense()}


@kernel("sparse_to_dense_grad")
def to_dense_grad(k):
    x = sparse(k, "x")
    return {"x@GRAD": x.with_values(k.x("out@GRAD")[sites(x)])}


@kernel("sparse_values")
def values(k):
    return {"out": sparse(k, "x").values}


@kernel("sparse_values_grad")
def values_grad(k):
    return {"x@GRAD": sparse(k, "x").with_values(k.x("out@GRAD"))}


@kernel("sparse_indices")
def indices(k):
    return {"out": coo(k, "x").indices}


@kernel("sparse_relu")
def relu(k):
    x = sparse(k, "x")
    return {"out": x.with_values(np.maximum(x.values, 0))}


@kernel("sparse_relu_grad")
def relu_grad(k):
    out, dout = sparse(k, "out"), sparse(k, "out@GRAD")
    return {"x@GRAD": out.with_values(np.where(out.values > 0, dout.values, 0).astype(dout.dtype))}


def _same_sites(x: SparseCoo, y: SparseCoo) -> bool:
    return x.indices.shape == y.indices.shape and bool((x.indices == y.indices).all())


def _union(x: SparseCoo, y: SparseCoo) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sites of x and y together, sorted (linear numbers), and the row of each of x's and y's entries there."""
    x_sites, y_sites = x.linear_sites(), y.linear_sites()
    sites = np.unique(np.concatenate([x_sites, y_sites]))
    return sites, np.searchsorted(sites, x_sites), np.searchsorted(sites, y_sites)


def as_coo(k, slot: str) -> SparseCoo:
    """A COO input, or a CSR one (add_csr_csr, the CSR forms of subtract, reshape, ...) as the COO tensor of its
    entries, in their order."""
    value = k.x(slot)
    return value.to_coo() if isinstance(value, SparseCsr) else coo(k, slot)


@kernel("sparse_add")
def add(k):
    """A dense y is a bias, one value per channel; a coo y on x's sites (in x's order) adds value by value; on
    other sites the result holds every site of either, sorted, as Paddle's for sorted inputs (Paddle's loses entries
    of inputs whose sites are not sorted: docs/sparse.md). Two CSR tensors add as their COO ones, back to CSR."""
    if isinstance(k.x("x"), SparseCsr):
        return {"out": csr_of(_add(as_coo(k, "x"), as_coo(k, "y")))}
    return {"out": _add(coo(k, "x"), k.x("y"))}


def _add(x: SparseCoo, y) -> SparseCoo:
    if not isinstance(y, SparseCoo):
        return x.with_values(x.values + y.astype(x.dtype))
    if y.shape != x.shape or y.sparse_dim != x.sparse_dim:
        raise ValueError(f"sparse_add needs x and y of one shape and sparse dims, got {list(x.shape)} "
                             f"({x.sparse_dim} sparse) and {list(y.shape)} ({y.sparse_dim} sparse)")
    if _same_sites(x, y):
        return x.with_values(x.values + y.values)
    sites, x_rows, y_rows = _union(x, y)
    values = np.zeros((sites.size, *x.values.shape[1:]), x.dtype)
    np.add.at(values, x_rows, x.values)
    np.add.at(values, y_rows, y.values)
    indices = np.stack(np.unravel_index(sites, x.shape[:x.sparse_dim])).astype(np.int64)
    return SparseCoo(indices, values, x.shape)


@kernel("sparse_add_grad")
def add_grad(k):
    """dout at x's and y's entries; CSR tensors' as their COO ones' (a CSR result's entries are the sorted union)."""
    x, dout, y_in = as_coo(k, "x"), as_coo(k, "out@GRAD"), k.x("y")
    y = as_coo(k, "y") if isinstance(y_in, SparseCsr) else y_in
    if not isinstance(y, SparseCoo):
        dx, dy = dout.values, dout.values.reshape(-1, dout.values.shape[-1]).sum(0)
    elif _same_sites(x, y):
        dx = dy = dout.values
    else:
        _, x_rows, y_rows = _union(x, y)
        dx, dy = dout.values[x_rows], dout.values[y_rows]
    return k.grads({"x@GRAD": lambda: k.x("x").with_values(dx.copy()),
                    "y@GRAD": lambda: y_in.with_values(dy.copy()) if isinstance(y, SparseCoo) else dy.astype(y.dtype)})


def _global_stats(k) -> bool:
    """The running statistics normalise (and stay) in test mode, unless trainable, and with use_global_stats."""
    return (k.attr("is_test") and not k.attr("trainable_statistics")) or k.attr("use_global_stats")


@kernel("sparse_batch_norm")
def batch_norm(k):
    """Batch norm of the values [nnz, C], each site a sample; the batch's variance biased, as Paddle's."""
    x = coo(k, "x")
    batch = not _global_stats(k)
    flat = x.values.reshape(-1, x.values.shape[-1])
    mean, var = (flat.mean(0), flat.var(0)) if batch else (k.x("mean"), k.x("variance"))
    inv = (1 / np.sqrt(var + k.attr("epsilon"))).astype(x.dtype)
    out = (x.values - mean) * (inv * k.x("scale")) + k.x("bias")
    running_mean, running_var, m = k.x("mean"), k.x("variance"), k.attr("momentum")
    if batch:
        running_mean, running_var = m * running_mean + (1 - m) * mean, m * running_var + (1 - m) * var
    return {"out": x.with_values(out.astype(x.dtype)), "mean_out": running_mean.astype(x.dtype),
            "variance_out": running_var.astype(x.dtype), "saved_mean": mean.astype(x.dtype), "saved_variance": inv,
            "reserve_space": np.empty(0, np.uint8)}


@kernel("sparse_batch_norm_grad")
def batch_norm_grad(k):
    x, dout, scale = coo(k, "x"), coo(k, "out@GRAD"), k.x("scale")
    channels = x.values.shape[-1]
    flat, dy = x.values.reshape(-1, channels), dout.values.reshape(-1, channels)
    batch = not _global_stats(k)
    if batch:
        mean, inv = k.x("saved_mean"), k.x("saved_variance")
    else:
        mean, inv = k.x("mean_out"), 1 / np.sqrt(k.x("variance_out") + k.attr("epsilon"))
    xhat = (flat - mean) * inv
    dbias, dscale = dy.sum(0), (dy * xhat).sum(0)

    def dx():
        grad = dy if not batch else dy - (dbias + xhat * dscale) / len(flat)
        return x.with_values((grad * (scale * inv)).reshape(x.values.shape).astype(x.dtype))

    return k.grads({"x@GRAD": dx, "scale@GRAD": lambda: dscale.astype(scale.dtype),
                    "bias@GRAD": lambda: dbias.astype(scale.dtype)})
