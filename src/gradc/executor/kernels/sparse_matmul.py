"""Kernels of sparse_matmul, sparse_mv, sparse_addmm and sparse_masked_matmul (gradc.ops.sparse_matmul): the dense
products of x's tensor; masked_matmul's read at mask's sites, a product of two sparse tensors at its structure's."""

from __future__ import annotations

import numpy as np

from ..sparse_value import SparseCoo, SparseCsr, csr_of
from . import kernel
from .sparse import sites, sparse


def _dense_x(k) -> np.ndarray:
    x = sparse(k, "x")
    if x.to_dense().ndim not in (2, 3):
        raise ValueError(f"{k.op.type} multiplies a 2-D or 3-D (batched) sparse x, got shape {list(x.shape)}")
    return x.to_dense()


def _product(x: np.ndarray, y: np.ndarray, name: str) -> np.ndarray:
    if isinstance(y, (SparseCoo, SparseCsr)):   # Paddle declares addmm_coo_coo and _csr_csr but has no kernel of them
        raise ValueError(f"{name} takes a dense y (vec, input), not a sparse {y!r}")
    if x.shape[-1] != y.shape[0 if y.ndim == 1 else -2]:
        raise ValueError(f"{name} needs x's columns ({x.shape[-1]}) to match y's rows: x {list(x.shape)}, "
                         f"y {list(y.shape)}")
    return np.matmul(x, y).astype(y.dtype)


def _held(x: SparseCoo | SparseCsr) -> np.ndarray:
    """1 where x holds an entry, else 0 (its structure, whatever the values)."""
    return x.with_values(np.ones(x.nnz)).to_dense() != 0


@kernel("sparse_matmul")
def matmul(k):
    y = k.x("y")
    if not isinstance(y, (SparseCoo, SparseCsr)):
        return {"out": _product(_dense_x(k), y, "sparse_matmul")}
    x = sparse(k, "x")
    if any(isinstance(v, SparseCoo) and v.sparse_dim != len(v.shape) for v in (x, y)):
        raise ValueError(f"sparse_matmul of two sparse tensors needs COO tensors with every dim sparse (no channels): "
                         f"x {x!r}, y {y!r}")
    if type(x) is not type(y) or len(y.shape) != len(x.shape):
        raise ValueError(f"sparse_matmul multiplies a sparse y by an x of its layout and rank (Paddle's COO by COO, "
                         f"CSR by CSR): x {x!r}, y {y!r}")
    product = _product(_dense_x(k), y.to_dense(), "sparse_matmul")
    structure = np.matmul(_held(x).astype(np.int64), _held(y).astype(np.int64)) > 0
    out = SparseCoo(np.stack(np.nonzero(structure)).astype(np.int64), product[structure], product.shape)
    return {"out": csr_of(out) if isinstance(y, SparseCsr) else out}


kernel("sparse_mv")(lambda k: {"out": _product(_dense_x(k), k.x("vec"), "sparse_mv")})


@kernel("sparse_addmm")
def addmm(k):
    product = _product(_dense_x(k), k.x("y"), "sparse_addmm")
    beta, alpha = k.x("input").dtype.type(k.attr("beta")), product.dtype.type(k.attr("alpha"))
    return {"out": beta * k.x("input") + alpha * product}


@kernel("sparse_masked_matmul")
def masked_matmul(k):
    mask = sparse(k, "mask")
    product = _product(k.x("x"), k.x("y"), "sparse_masked_matmul")
    if product.shape != tuple(mask.shape):
        raise ValueError(f"sparse_masked_matmul's product {list(product.shape)} is not mask's shape "
                         f"{list(mask.shape)}")
    return {"out": mask.with_values(product[sites(mask)])}
