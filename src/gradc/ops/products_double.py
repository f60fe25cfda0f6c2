"""Second derivatives of the products family: makers of its grad ops. dot, cross, kron and mv are bilinear,
trace and diagonal linear, multi_dot linear in each operand (gradc.ops.composite); addmm, baddbmm, dist and
frobenius_norm have their grad ops written again with differentiable ops (``expansion``). einsum_grad's maker is
with its definition (gradc.ops.products_einsum)."""

from __future__ import annotations

from ..ir import VarType
from ..registry import defgrad
from ..shapes import broadcast_dims
from . import products  # noqa: F401  (registers the grad ops)
from .composite import bilinear, expansion, first, linear, multilinear
from .reduced_dims import reduced_dims_back


@expansion
def _scaled_product_grad(f, g):
    """addmm_grad / baddbmm_grad: Input@GRAD = Beta dOut summed to Input's shape, X@GRAD = Alpha dOut Y^T,
    Y@GRAD = Alpha X^T dOut."""
    given, x, y, dout = (first(g.I(slot)) for slot in ("Input", "X", "Y", "Out@GRAD"))
    dx = f.op("matmul_v2", {"X": dout, "Y": y}, x, {"trans_x": False, "trans_y": True})
    dy = f.op("matmul_v2", {"X": x, "Y": dout}, y, {"trans_x": True, "trans_y": False})
    return {"Input@GRAD": f.scale(f.summed_to(dout, g.shape(dout), given), g.attr("Beta")),
            "X@GRAD": f.scale(dx, g.attr("Alpha")), "Y@GRAD": f.scale(dy, g.attr("Alpha"))}


@expansion
def _dist_grad(f, g):
    """dist_grad as its kernel computes it, for p other than 0 (which has no slope): inf / -inf pass dOut to the
    entries of |X - Y| equal to the norm (a mask with no slope of its own). For p < 1 an entry with X = Y, where
    the kernel gives 0, has no second derivative (|d|^(p-1) is infinite there)."""
    x, y, out, dout = (first(g.I(slot)) for slot in ("X", "Y", "Out", "Out@GRAD"))
    full = broadcast_dims(g.shape(x), g.shape(y))
    diff = f.op("elementwise_sub", {"X": x, "Y": y}, x, {"axis": -1}, dims=lambda _: full)
    size, p = f.unary("abs", diff), g.attr("p")
    if p in (float("inf"), float("-inf")):
        hit = f.op("equal", {"X": size, "Y": out}, size, {"axis": -1}, dtype=VarType.BOOL)
        slope = f.op("cast", {"X": hit}, size, {"in_dtype": int(VarType.BOOL), "out_dtype": int(g.block.var(x).dtype)})
    else:
        denominator = f.scale(f.unary("pow", out, {"factor": p - 1}), 1.0, 1e-12)
        slope = f.div(f.unary("pow", size, {"factor": p - 1}), denominator, size)
    grad = f.mul(f.mul(f.unary("sign", diff), slope, diff), dout, diff)
    return {"X@GRAD": f.summed_to(grad, full, x), "Y@GRAD": f.scale(f.summed_to(grad, full, y), -1.0)}


def _dist_grad_maker(g):
    """p 0 counts nonzeros: its grad is 0 whatever the inputs, and so are its derivatives."""
    return [] if g.attr("p") == 0 else _dist_grad(g)


@expansion
def _frobenius_norm_grad(f, g):
    """X@GRAD = X dOut / (Out + 1e-12), dOut and Out given back the reduced dims (as 1s)."""
    x, out, dout = first(g.I("X")), first(g.I("Out")), first(g.I("Out@GRAD"))
    ratio = reduced_dims_back(f, g, f.div(dout, f.scale(out, 1.0, 1e-12), dout), x, g.attr)
    return {"X@GRAD": f.mul(x, ratio, x)}


for _name in ("dot", "cross", "kron"):
    defgrad(f"{_name}_grad", grad=bilinear(_name))
defgrad("mv_grad", grad=bilinear("mv", y="Vec"))
for _name in ("trace", "diagonal"):
    defgrad(f"{_name}_grad", grad=linear(_name, x="Input"), no_grad_inputs=["Input"])   # Input: its shape only
for _name in ("addmm", "baddbmm"):
    defgrad(f"{_name}_grad", grad=_scaled_product_grad, no_grad_inputs=["Input"])
defgrad("multi_dot_grad", grad=multilinear("multi_dot", "X", "X@GRAD"))
defgrad("dist_grad", grad=_dist_grad_maker)
defgrad("frobenius_norm_grad", grad=_frobenius_norm_grad)
