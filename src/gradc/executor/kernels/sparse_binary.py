"""Kernels of sparse_subtract, multiply, divide, divide_scalar, transpose and coalesce (gradc.ops.sparse_binary).
A CSR pair (Paddle's subtract/multiply/divide_csr_csr) goes as the COO tensors of its entries and comes back as the
CSR tensor of the COO result, as Paddle's CPU kernels do; a CSR gradient holds the COO one's values on x's (or y's)
entries, which keep their order."""

from __future__ import annotations

import numpy as np

from ..sparse_value import SparseCoo, SparseCsr, csr_of
from . import kernel
from .sparse import _same_sites, _union, as_coo, coo, sparse


def _like_x(k, result: SparseCoo):
    """The result in x's layout: a CSR x's is the CSR tensor of the COO result (sorted, as Paddle's CooToCsr)."""
    return csr_of(result) if isinstance(k.x("x"), SparseCsr) else result


def _on(k, slot: str, values: np.ndarray):
    """A gradient of input ``slot``: ``values`` on its entries, in its layout."""
    return sparse(k, slot).with_values(values)


def _aligned(x: SparseCoo, y: SparseCoo):
    """(x's and y's values on the output's sites, the output row of each entry of x and of y, the output's indices):
    x's sites where y has the same ones, else every site of either, sorted, repeated entries added."""
    if x.shape != y.shape or x.sparse_dim != y.sparse_dim:
        raise ValueError(f"x and y need one shape and sparse dims, got {list(x.shape)} ({x.sparse_dim} sparse) and "
                         f"{list(y.shape)} ({y.sparse_dim} sparse)")
    if _same_sites(x, y):
        rows = np.arange(x.nnz)
        return x.values, y.values, rows, rows, x.indices
    sites, x_rows, y_rows = _union(x, y)
    gathered = []
    for value, rows in ((x, x_rows), (y, y_rows)):
        total = np.zeros((sites.size, *x.values.shape[1:]), x.dtype)
        np.add.at(total, rows, value.values)
        gathered.append(total)
    indices = np.stack(np.unravel_index(sites, x.shape[:x.sparse_dim])).astype(np.int64).reshape(x.sparse_dim, -1)
    return gathered[0], gathered[1], x_rows, y_rows, indices


@kernel("sparse_subtract")
def subtract(k):
    x, y = as_coo(k, "x"), as_coo(k, "y")
    xs, ys, _, _, indices = _aligned(x, y)
    return {"out": _like_x(k, SparseCoo(indices, xs - ys, x.shape))}


@kernel("sparse_multiply")
def multiply(k):
    x, y = as_coo(k, "x"), as_coo(k, "y")
    xs, ys, _, _, indices = _aligned(x, y)
    return {"out": _like_x(k, SparseCoo(indices, xs * ys, x.shape))}


@kernel("sparse_multiply_grad")
def multiply_grad(k):
    x, y, dout = as_coo(k, "x"), as_coo(k, "y"), as_coo(k, "out@GRAD")
    xs, ys, x_rows, y_rows, _ = _aligned(x, y)
    return k.grads({"x@GRAD": lambda: _on(k, "x", (dout.values * ys)[x_rows]),
                    "y@GRAD": lambda: _on(k, "y", (dout.values * xs)[y_rows])})


def _grid(x: SparseCoo) -> np.ndarray:
    """Every site of x's sparse dims, row-major: the sites of a quotient (0/0 is no zero)."""
    return np.stack(np.unravel_index(np.arange(int(np.prod(x.shape[:x.sparse_dim]))), x.shape[:x.sparse_dim]))


def _dense_sites(x: SparseCoo, y: SparseCoo) -> tuple[np.ndarray, np.ndarray]:
    if x.shape != y.shape or x.sparse_dim != y.sparse_dim:
        raise ValueError(f"x and y need one shape and sparse dims, got {list(x.shape)} and {list(y.shape)}")
    return x.to_dense(), y.to_dense()


@kernel("sparse_divide")
def divide(k):
    x, y = as_coo(k, "x"), as_coo(k, "y")
    xd, yd = _dense_sites(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        quotient = xd / yd
    grid = _grid(x).astype(np.int64)
    return {"out": _like_x(k, SparseCoo(grid, quotient[tuple(grid)], x.shape))}


@kernel("sparse_divide_grad")
def divide_grad(k):
    x, y, out, dout = (as_coo(k, slot) for slot in ("x", "y", "out", "out@GRAD"))
    _, yd = _dense_sites(x, y)
    dd, od = dout.to_dense(), out.to_dense()
    with np.errstate(divide="ignore", invalid="ignore"):
        return k.grads({"x@GRAD": lambda: _on(k, "x", (dd / yd)[tuple(x.indices)]),
                        "y@GRAD": lambda: _on(k, "y", (-dd * od / yd)[tuple(y.indices)])})


@kernel("sparse_divide_scalar")
def divide_scalar(k):
    x = sparse(k, "x")
    return {"out": x.with_values((x.values / k.attr("scalar")).astype(x.dtype))}


def _transposed(x: SparseCoo, perm: list[int]) -> SparseCoo:
    """Sparse dims among themselves, the values' dense dims among theirs; the entries in x's order."""
    sparse = x.sparse_dim
    if sorted(perm) != list(range(len(x.shape))) or sorted(perm[:sparse]) != list(range(sparse)):
        raise ValueError(f"sparse_transpose permutes the {sparse} sparse dims among themselves and the dense ones "
                         f"among theirs: perm {perm} for shape {list(x.shape)}")
    values = x.values.transpose(0, *(p - sparse + 1 for p in perm[sparse:]))
    return SparseCoo(x.indices[perm[:sparse]], values, tuple(x.shape[p] for p in perm))


@kernel("sparse_transpose")
def transpose(k):
    """A CSR tensor's entries sorted anew (Paddle's TransposeCsrKernel builds the transposed matrix's rows)."""
    return {"out": _like_x(k, _transposed(as_coo(k, "x"), list(k.attr("perm"))))}


@kernel("sparse_transpose_grad")
def transpose_grad(k):
    back = _transposed(as_coo(k, "out@GRAD"), np.argsort(k.attr("perm")).tolist())
    return {"x@GRAD": csr_of(back) if isinstance(k.x("out@GRAD"), SparseCsr) else back}


def _merged(x: SparseCoo) -> tuple[np.ndarray, np.ndarray]:
    sites, rows = np.unique(x.linear_sites(), return_inverse=True)
    return sites, rows.reshape(-1)


@kernel("sparse_coalesce")
def coalesce(k):
    x = coo(k, "x")
    sites, rows = _merged(x)
    values = np.zeros((sites.size, *x.values.shape[1:]), x.dtype)
    np.add.at(values, rows, x.values)
    indices = np.stack(np.unravel_index(sites, x.shape[:x.sparse_dim])).astype(np.int64).reshape(x.sparse_dim, -1)
    return {"out": SparseCoo(indices, values, x.shape)}


@kernel("sparse_coalesce_grad")
def coalesce_grad(k):
    x = coo(k, "x")
    return {"x@GRAD": x.with_values(coo(k, "out@GRAD").values[_merged(x)[1]])}
