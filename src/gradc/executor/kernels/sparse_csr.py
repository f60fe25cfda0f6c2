"""Kernels of sparse_to_sparse_csr and sparse_to_sparse_coo (gradc.ops.sparse_csr)."""

from __future__ import annotations

import numpy as np

from ..sparse_value import SparseCoo, SparseCsr, csr_of, dense_coo
from . import kernel


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
