"""Conversions between dense, COO and CSR tensors (paddle.sparse's Tensor.to_sparse_csr, to_sparse_coo), as Paddle
3.3.1's legacy OpProtos have them: sparse_to_sparse_csr (x dense, or an all-sparse 2-D or 3-D COO tensor: its sites
sorted by row, repeated ones added) and sparse_to_sparse_coo (x dense: a site wherever its first sparse_dim dims hold
a value that is not 0; or CSR: its entries by row). Paddle builds neither in static mode (docs/sparse.md). The CSR
forms of the elementwise ops, relu, softmax, to_dense and values are the COO ops' own (their kernels take either).

Their gradients read dout at x's sites: dx = to_dense(dout) for a dense x, dout's value at each entry of a sparse
x (every repeat of a site gets the site's); linear in dout, so d/d(dout) is the conversion of ddx.
"""

from __future__ import annotations

from ..ir import AttrType
from ..registry import defop, grad_op, typed
from .infer import same_as

defop("sparse_to_sparse_csr", ["x"], ["out"], infer=same_as("x", "out"), grad=grad_op("x"))
defop("sparse_to_sparse_coo", ["x"], ["out"], attrs={"sparse_dim": typed(2, AttrType.LONG)},
      infer=same_as("x", "out"), grad=grad_op("x"))
