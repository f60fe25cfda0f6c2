"""Conversions between dense, COO and CSR tensors (paddle.sparse's Tensor.to_sparse_csr, to_sparse_coo), as Paddle
3.3.1's legacy OpProtos have them: sparse_to_sparse_csr (x dense, or an all-sparse 2-D or 3-D COO tensor: its sites
sorted by row, repeated ones added) and sparse_to_sparse_coo (x dense: a site wherever its first sparse_dim dims hold
a value that is not 0; or CSR: its entries by row). Paddle builds neither in static mode (docs/sparse.md). The CSR
forms of the elementwise ops, relu, softmax, to_dense and values are the COO ops' own (their kernels take either).

Their gradients read dout at x's sites: dx = to_dense(dout) for a dense x, dout's value at each entry of a sparse
x (every repeat of a site gets the site's). They are written with differentiable ops Paddle's PIR has
(sparse_to_dense, and its adjoint sparse_to_dense_grad for a sparse x: to_dense_grad_sp), so every order follows
and a training program of them goes to PIR (Paddle has no backward of to_sparse_csr and one of to_sparse_coo of a
dense x only).
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import defop, typed
from .composite import Formula, first
from .infer import same_as


def _read_back(g):
    """x@GRAD = to_dense(dout), read at x's sites when x is sparse."""
    f, x, wanted = Formula(g), first(g.I("x")), first(g.IG("x"))
    if g.block.find_var(x).type not in (VarType.SPARSE_COO, VarType.SPARSE_CSR):
        f.into(wanted, "sparse_to_dense", {"x": g.OG("out")}, slot="out")
        return f.ops
    dense = f.op("sparse_to_dense", {"x": g.OG("out")}, x, slot="out")
    g.block.find_var(dense).type = VarType.DENSE_TENSOR
    f.into(wanted, "sparse_to_dense_grad", {"x": [x], "out@GRAD": [dense]}, slot="x@GRAD")
    return f.ops


defop("sparse_to_sparse_csr", ["x"], ["out"], infer=same_as("x", "out"), grad=_read_back)
defop("sparse_to_sparse_coo", ["x"], ["out"], attrs={"sparse_dim": typed(2, AttrType.LONG)},
      infer=same_as("x", "out"), grad=_read_back)
