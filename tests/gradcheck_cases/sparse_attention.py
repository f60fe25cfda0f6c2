"""Cases for sparse_attention (gradc.ops.sparse_attention): CSR layouts of different row lengths (an empty row, a
full one), per batch and head, with and without the key padding and attention masks (an entry masked by each); second
derivatives too."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(337)


def layout(b: int, h: int, s: int, keep: float) -> tuple[np.ndarray, np.ndarray]:
    """A random CSR layout (Offset [b, h, s + 1], Columns [b, h, nnz] padded with 0 past a head's entries)."""
    patterns = r.random((b, h, s, s)) < keep
    patterns[..., 0, :] = True   # row 0 attends to every key
    patterns[..., -1, :] = False   # the last row attends to none
    nnz = patterns.sum((-1, -2)).max()
    offset, columns = np.zeros((b, h, s + 1), np.int32), np.zeros((b, h, nnz), np.int32)
    for bi, hi in np.ndindex(b, h):
        offset[bi, hi, 1:] = np.cumsum(patterns[bi, hi].sum(-1))
        keys = np.nonzero(patterns[bi, hi])[1]
        columns[bi, hi, :len(keys)] = keys
    return offset, columns


def sparse(b: int, h: int, s: int, d: int, keep: float = 0.5, padding: bool = False, attn: bool = False) -> dict:
    offset, columns = layout(b, h, s, keep)
    inputs = {name: r.standard_normal((b, h, s, d)) for name in ("Q", "K", "V")} | {"Offset": offset,
                                                                                 "Columns": columns}
    if padding:   # key 1 of batch 0 masked
        inputs["KeyPaddingMask"] = np.ones((b, s))
        inputs["KeyPaddingMask"][0, 1] = 0
    if attn:   # row 0 does not see key 2
        inputs["AttnMask"] = np.ones((s, s))
        inputs["AttnMask"][0, 2] = 0
    return inputs


CASES = [
    Case("sparse_attention", sparse(1, 2, 4, 3)),
    Case("sparse_attention", sparse(2, 1, 5, 4, keep=0.6, padding=True)),
    Case("sparse_attention", sparse(2, 2, 4, 2, keep=0.7, padding=True, attn=True)),
]
# second derivatives over the layouts read at run time (gradc.ops.sparse_attention_double): an empty row, masked entries
CASES += [second_order("sparse_attention", sparse(1, 1, 3, 2)),
          second_order("sparse_attention", sparse(1, 2, 3, 2, keep=0.7, padding=True, attn=True))]
