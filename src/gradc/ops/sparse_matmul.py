"""paddle.sparse.matmul, masked_matmul, mv and addmm with a COO or CSR x (Paddle's matmul_coo_dense, matmul_csr_dense,
matmul_coo_coo, matmul_csr_csr, masked_matmul, mv_coo/csr, addmm_coo/csr_dense kernels), as Paddle 3.3.1's legacy
OpProtos have them. Paddle's PIR mode builds mv and addmm (matmul fails its dtype check) but has no CPU kernel of
any of them (docs/sparse.md), so they are checked against dense numpy and central differences. The results are
dense, but for masked_matmul's: x @ y at mask's sites, on them, and matmul's of two sparse tensors (COO by COO, CSR
by CSR): a tensor of their layout on the sites the product's structure reaches (i, j where some k has x's (i, k) and
y's (k, j) entries; sorted), as cuSPARSE's SpGEMM that Paddle's GPU kernel calls. A batch ([batch, rows, cols])
multiplies matrix by matrix.

    matmul: out = dense(x) @ y (at out's sites for a sparse y)          mv: out = dense(x) @ vec
    addmm:  out = beta input + alpha dense(x) @ y        masked_matmul: out = (x @ y) at mask's sites

Their gradients are written with differentiable ops (x densified by sparse_to_dense, whose adjoint reads a gradient
back at x's sites; masked_matmul's and a sparse product's result read at mask's or out's sites by that adjoint), so
every order follows: a sparse product's dx and dy are on x's and y's sites (the gradients of their values).
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import defop, typed
from .composite import expansion, first


def _product_dims(ctx, x: list[int] | None, y: list[int] | None, vector: bool = False) -> list[int] | None:
    if x is None or y is None:
        return None
    inner = y[0] if vector else y[-2]
    if inner >= 0 and x[-1] >= 0 and inner != x[-1]:
        ctx.fail(f"{ctx.op.type} needs x's columns ({x[-1]}) to match y's rows ({inner}): x {x}, y {y}")
    return x[:-1] if vector else [*x[:-1], y[-1]]


def _dense(f, g, slot: str) -> str:
    """The sparse input's dense tensor, a temporary (its adjoint, sparse_to_dense_grad, is on the input's sites)."""
    name = first(g.I(slot))
    dense = f.op("sparse_to_dense", {"x": name}, name, slot="out")
    g.block.find_var(dense).type = VarType.DENSE_TENSOR
    return dense


def _matmul(f, x: str, y: str, like: str, dims=None) -> str:
    return f.op("matmul_v2", {"X": x, "Y": y}, like, {"trans_x": False, "trans_y": False}, dims=dims)


@expansion
def _matmul_grad(f, g):
    y, out = first(g.I("y")), first(g.O("out"))
    if g.block.find_var(y).type in (VarType.SPARSE_COO, VarType.SPARSE_CSR):   # the product at out's own sites
        product = _matmul(f, _dense(f, g, "x"), _dense(f, g, "y"), out)
        g.block.find_var(product).type = VarType.DENSE_TENSOR
        return {"out": f.op("sparse_to_dense_grad", {"x": out, "out@GRAD": product}, out, slot="x@GRAD")}
    return {"out": _matmul(f, _dense(f, g, "x"), y, out)}


@expansion
def _mv_grad(f, g):
    return {"out": _matmul(f, _dense(f, g, "x"), first(g.I("vec")), first(g.O("out")))}


@expansion
def _addmm_grad(f, g):
    out = first(g.O("out"))
    product = f.scale(_matmul(f, _dense(f, g, "x"), first(g.I("y")), out), g.attr("alpha"))
    return {"out": f.add(f.scale(first(g.I("input")), g.attr("beta")), product, out)}


@expansion
def _masked_matmul_grad(f, g):
    columns = g.shape(first(g.I("y")))[-1]
    product = _matmul(f, first(g.I("x")), first(g.I("y")), first(g.I("x")), lambda shape: [*shape[:-1], columns])
    return {"out": f.op("sparse_to_dense_grad", {"x": g.I("mask"), "out@GRAD": product}, first(g.I("mask")),
                        slot="x@GRAD")}


defop("sparse_matmul", ["x", "y"], ["out"], grad=_matmul_grad,
      infer=lambda ctx: {"out": (_product_dims(ctx, ctx.shape("x"), ctx.shape("y")), ctx.dtype("y"))})
defop("sparse_mv", ["x", "vec"], ["out"], grad=_mv_grad,
      infer=lambda ctx: {"out": (_product_dims(ctx, ctx.shape("x"), ctx.shape("vec"), True), ctx.dtype("vec"))})
defop("sparse_addmm", ["input", "x", "y"], ["out"], grad=_addmm_grad,
      attrs={"alpha": typed(1.0, AttrType.FLOAT), "beta": typed(1.0, AttrType.FLOAT)},
      infer=lambda ctx: {"out": (_product_dims(ctx, ctx.shape("x"), ctx.shape("y")), ctx.dtype("input"))})
defop("sparse_masked_matmul", ["x", "y", "mask"], ["out"], grad=_masked_matmul_grad, no_grad_inputs=["mask"],
      infer=lambda ctx: {"out": (ctx.shape("mask"), ctx.dtype("x"))})
