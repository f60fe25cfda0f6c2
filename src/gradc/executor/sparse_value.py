"""The value of a SPARSE_COO var (Paddle's SparseCooTensor, paddle.sparse): the sites of a tensor that hold values.

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



def add_on_sites(addends: list[SparseCoo]) -> SparseCoo:
    """The sum of gradients of one sparse var, each on its sites: their values added."""
    first = addends[0]
    if not all(a.indices.shape == first.indices.shape and (a.indices == first.indices).all() for a in addends):
        raise ValueError("a sum of sparse COO tensors on different sites (the gradients of one sparse var are on "
                         "its sites)")
    return first.with_values(sum(a.values for a in addends[1:]) + first.values)
