"""The values of SPARSE_COO and SPARSE_CSR vars (paddle.sparse): the sites of a tensor that hold values.

``indices`` [sparse_dim, nnz] int64 names each site by its first sparse_dim coordinates, ``values`` [nnz, *rest]
holds what is there, ``shape`` is the tensor it stands for. Sites keep the order they were made in (Paddle's kernels
sort only where they build new sites) and may repeat (each adds). Like SelectedRows it has no __array__: a dense
kernel that does not know it fails instead of silently densifying it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SparseCoo:
    indices: np.ndarray   # int64 [sparse_dim, nnz]
    values: np.ndarray    # [nnz, *shape[sparse_dim:]]
    shape: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def nnz(self) -> int:
        return self.indices.shape[1]

    @property
    def sparse_dim(self) -> int:
        return self.indices.shape[0]

    def to_dense(self) -> np.ndarray:
        """The tensor: zeros where no site is, repeated sites added."""
        dense = np.zeros(self.shape, self.values.dtype)
        np.add.at(dense, tuple(self.indices), self.values)
        return dense

    def with_values(self, values: np.ndarray) -> SparseCoo:
        """The same sites holding other values (an elementwise op's result, a gradient)."""
        return SparseCoo(self.indices, values, self.shape[:self.sparse_dim] + values.shape[1:])

    def linear_sites(self) -> np.ndarray:
        """Each site as one number, row-major over the sparse dims: the order Paddle sorts new sites in."""
        return np.ravel_multi_index(tuple(self.indices), self.shape[:self.sparse_dim])

    def __repr__(self) -> str:
        return (f"SparseCoo(nnz={self.nnz}, values {self.values.dtype}{list(self.values.shape)}, "
                f"shape={list(self.shape)})")



@dataclass(frozen=True)
class SparseCsr:
    """The value of a SPARSE_CSR var (Paddle's SparseCsrTensor): a [rows, cols] matrix, or a batch of them ([batch,
    rows, cols], each batch's crows in turn), by rows. ``crows`` [batch * (rows + 1)] are where each row's entries
    start in ``cols`` and ``values`` [nnz] (each batch's from 0), the entries sorted by column within a row."""

    crows: np.ndarray    # int64
    cols: np.ndarray     # int64 [nnz]
    values: np.ndarray   # [nnz]
    shape: tuple[int, ...]

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def nnz(self) -> int:
        return self.cols.shape[0]

    def sites(self) -> np.ndarray:
        """Each entry's (batch,) row and column: [ndim, nnz], in the entries' order."""
        rows = self.shape[-2]
        batches = self.crows.reshape(-1, rows + 1)
        counts = np.diff(batches, axis=1)
        row = np.repeat(np.tile(np.arange(rows), len(batches)), counts.reshape(-1))
        if len(self.shape) == 2:
            return np.stack([row, self.cols]).astype(np.int64)
        batch = np.repeat(np.arange(len(batches)), counts.sum(axis=1))
        return np.stack([batch, row, self.cols]).astype(np.int64)

    def to_coo(self) -> SparseCoo:
        return SparseCoo(self.sites(), self.values, self.shape)

    def to_dense(self) -> np.ndarray:
        return self.to_coo().to_dense()

    def with_values(self, values: np.ndarray) -> SparseCsr:
        return SparseCsr(self.crows, self.cols, values, self.shape)

    def __repr__(self) -> str:
        return f"SparseCsr(nnz={self.nnz}, values {self.values.dtype}, shape={list(self.shape)})"


def csr_of(x: SparseCoo) -> SparseCsr:
    """The CSR tensor of an all-sparse 2-D or 3-D COO tensor: its sites sorted, repeated ones added."""
    if len(x.shape) not in (2, 3) or x.sparse_dim != len(x.shape):
        raise ValueError(f"a CSR tensor is 2-D or 3-D with every dim sparse: got shape {list(x.shape)} with "
                         f"{x.sparse_dim} sparse dims")
    sites, entry = np.unique(x.linear_sites(), return_inverse=True)
    values = np.zeros(len(sites), x.dtype)
    np.add.at(values, entry.reshape(-1), x.values)
    *lead, rows, cols = np.unravel_index(sites, x.shape)
    batch = lead[0] if lead else np.zeros(len(sites), np.int64)
    count = np.zeros((x.shape[0] if lead else 1, x.shape[-2]), np.int64)
    np.add.at(count, (batch, rows), 1)
    crows = np.concatenate([np.zeros((len(count), 1), np.int64), np.cumsum(count, axis=1)], axis=1)
    return SparseCsr(crows.reshape(-1), cols.astype(np.int64), values, x.shape)


def dense_coo(dense: np.ndarray, sparse_dim: int) -> SparseCoo:
    """The COO tensor of a dense one: a site wherever the values of its first ``sparse_dim`` dims are not all 0."""
    held = np.any(dense.reshape(*dense.shape[:sparse_dim], -1) != 0, axis=-1)
    indices = np.stack(np.nonzero(held)).astype(np.int64).reshape(sparse_dim, -1)
    return SparseCoo(indices, dense[tuple(indices)], dense.shape)


def add_on_sites(addends: list):
    """The sum of gradients of one sparse var (SparseCoo or SparseCsr), each on its sites: their values added."""
    first = addends[0]
    if isinstance(first, SparseCsr):
        if not all(np.array_equal(a.crows, first.crows) and np.array_equal(a.cols, first.cols) for a in addends):
            raise ValueError("a sum of sparse CSR tensors on different sites (the gradients of one sparse var are "
                             "on its sites)")
        return first.with_values(sum(a.values for a in addends[1:]) + first.values)
    if not all(a.indices.shape == first.indices.shape and (a.indices == first.indices).all() for a in addends):
        raise ValueError("a sum of sparse COO tensors on different sites (the gradients of one sparse var are on "
                         "its sites)")
    return first.with_values(sum(a.values for a in addends[1:]) + first.values)
