"""The value of a SELECTED_ROWS var (Paddle's SelectedRows): some rows of a [height, ...] tensor, the
gradient of an embedding table with is_sparse. Rows may repeat (each adds) and need not be sorted.

It has no __array__ on purpose: a kernel that does not know it fails instead of silently densifying it,
because Paddle's optimizers update differently for it (docs/optimizers.md, SelectedRows). ``to_dense``
is the tensor it stands for; ``merged`` is Paddle's MergeAdd, whose row order the sparse kernels depend on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .sparse_value import SparseCoo, SparseCsr


@dataclass(frozen=True)
class SelectedRows:
    rows: np.ndarray     # int64 [n]: the table row of each value row
    values: np.ndarray   # [n, *row_shape]
    height: int          # rows of the tensor it stands for

    @property
    def dtype(self) -> np.dtype:
        return self.values.dtype

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape of the tensor it stands for."""
        return (self.height, *self.values.shape[1:])

    def to_dense(self) -> np.ndarray:
        """The tensor: zeros where no row is selected, repeated rows added (in order)."""
        dense = np.zeros(self.shape, self.values.dtype)
        np.add.at(dense, self.rows, self.values)
        return dense

    def with_values(self, values: np.ndarray) -> SelectedRows:
        return SelectedRows(self.rows, values, self.height)

    def merged(self, sort: bool = False) -> SelectedRows:
        """Paddle's MergeAdd: without repeated rows (and unless ``sort``) the rows stay as they are, unsorted;
        otherwise each row once, in ascending order, its values added in order."""
        return merge_add([self], sort)

    def __repr__(self) -> str:
        return f"SelectedRows(rows={self.rows.tolist()}, values {self.values.dtype}{list(self.values.shape)}, " \
               f"height={self.height})"


def selected(dense: np.ndarray, rows: np.ndarray) -> SelectedRows:
    """The rows of a dense table gradient an op touched, once each, ascending (Paddle's is_sparse gradient of nce
    and hierarchical_sigmoid: a row touched with a zero gradient is still selected, which lazy Adam updates)."""
    rows = np.unique(rows).astype(np.int64)
    return SelectedRows(rows, dense[rows], dense.shape[0])


def as_dense(value):
    """A fetched value as an array: a SelectedRows, SparseCoo or SparseCsr as the tensor it stands for (what
    `gradc run --out` saves)."""
    return value.to_dense() if isinstance(value, (SelectedRows, SparseCoo, SparseCsr)) else value


def merge_add(inputs: list[SelectedRows], sort: bool = False) -> SelectedRows:
    """Paddle's MergeAdd of several SelectedRows of one height (sum of SelectedRows, merge_selected_rows):
    concatenated when no row repeats across them and ``sort`` is off, else one row each, ascending."""
    inputs = [x for x in inputs if x.rows.size] or inputs[:1]
    rows = np.concatenate([x.rows for x in inputs])
    values = np.concatenate([x.values for x in inputs])
    unique = np.unique(rows)
    if unique.size == rows.size and not sort:
        return SelectedRows(rows, values, inputs[0].height)
    merged = np.zeros((unique.size, *values.shape[1:]), values.dtype)
    np.add.at(merged, np.searchsorted(unique, rows), values)
    return SelectedRows(unique, merged, inputs[0].height)


def lookup_rows(rows: np.ndarray, height: int) -> np.ndarray:
    """For each table row, the index into ``rows`` that Paddle's BinarySearch finds, or -1. On unsorted rows
    (a MergeAdd without sort and without repeats) the search misses some rows that are there, as Paddle's does.
    All table rows are searched at once, one halving step per loop."""
    targets = np.arange(height)
    found = np.full(height, -1, np.int64)
    low, high = np.zeros(height, np.int64), np.full(height, rows.size - 1, np.int64)
    searching = low <= high
    while searching.any():
        mid = np.where(searching, (low + high) >> 1, 0)
        at = rows[mid]
        hit = searching & (at == targets)
        found[hit] = mid[hit]
        searching &= ~hit
        low = np.where(searching & (at < targets), mid + 1, low)
        high = np.where(searching & (at > targets), mid - 1, high)
        searching &= low <= high
    return found


def searched_dense(grad: SelectedRows) -> np.ndarray:
    """The gradient a kernel that looks each parameter row up by BinarySearch sees (zeros where it misses)."""
    found = lookup_rows(grad.rows, grad.height)
    dense = np.zeros(grad.shape, grad.values.dtype)
    dense[found >= 0] = grad.values[found[found >= 0]]
    return dense
