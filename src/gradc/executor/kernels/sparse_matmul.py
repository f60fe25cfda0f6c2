"""Kernels of sparse_matmul, sparse_mv, sparse_addmm and sparse_masked_matmul (gradc.ops.sparse_matmul): the dense
products of x's tensor; masked_matmul's read at mask's sites."""

from __future__ import annotations

import numpy as np

from . import kernel
from .sparse import sites, sparse


def _dense_x(k) -> np.ndarray:
    x = sparse(k, "x")
    if x.to_dense().ndim not in (2, 3):
        raise ValueError(f"{k.op.type} multiplies a 2-D or 3-D (batched) sparse x, got shape {list(x.shape)}")
    return x.to_dense()


def _product(x: np.ndarray, y: np.ndarray, name: str) -> np.ndarray:
    if x.shape[-1] != y.shape[0 if y.ndim == 1 else -2]:
        raise ValueError(f"{name} needs x's columns ({x.shape[-1]}) to match y's rows: x {list(x.shape)}, "
                         f"y {list(y.shape)}")
    return np.matmul(x, y).astype(y.dtype)


kernel("sparse_matmul")(lambda k: {"out": _product(_dense_x(k), k.x("y"), "sparse_matmul")})
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
