"""Second derivative of lp_pool2d (out = (window sums of x^p)^(1/p)), composite (gradc.ops.composite) so third
derivatives follow: its grad x^(p-1) S(dOut out^(1-p)), S spreading each window's value over its cells, is
written again from x, the window sums and S, both lp_pool2d's own ops at norm_type 1 (lp_pool2d sums x over each
window; its grad at x = out = 1 is S), so adaptive windows and kernel sizes in KernelSizeTensor(List) come along.
At norm_type 1 the grad is S(dOut) where out is not 0, linear in dOut and flat in x: d/d(dOut) sums ddX over each
window (lp_pool2d at norm_type 1) where out is not 0, which also ends the recursion of the expansion.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import pool  # noqa: F401  (registers lp_pool2d_grad)
from .composite import Formula, expansion, first
from .pool import KERNEL_SIZE_SLOTS

SUMS = {"norm_type": 1.0}


@expansion
def _lp_expansion(f, g):
    x, dout, p = first(g.I("x")), first(g.I("out@GRAD")), g.attr("norm_type")
    kernel = {slot: g.I(slot) for slot in KERNEL_SIZE_SLOTS}
    sums = f.op("lp_pool2d", {"x": f.unary("pow", x, {"factor": p}), **kernel}, dout, SUMS, slot="out", same=True)
    per_window = f.mul(dout, f.unary("pow", f.unary("pow", sums, {"factor": 1.0 / p}), {"factor": 1.0 - p}), dout)
    spread = f.op("lp_pool2d_grad", {"x": f.fill_like(x, 1.0), **kernel, "out": f.fill_like(dout, 1.0),
                                     "out@GRAD": per_window}, x, SUMS, slot="x@GRAD", same=True)
    return {"x@GRAD": f.mul(f.unary("pow", x, {"factor": p - 1.0}), spread, x)}


def _sums_adjoint(g):
    """lp_pool2d_grad at norm_type 1: ddX summed over each window, times [out != 0] (|sign(out)|)."""
    wanted = first(g.IG("out@GRAD"))
    if wanted == EMPTY_VAR:
        return []
    f = Formula(g)
    x, out = first(g.I("x")), first(g.I("out"))
    ddx = first(g.OG("x@GRAD")) or f.fill_like(x, 0.0)
    kernel = {slot: g.I(slot) for slot in KERNEL_SIZE_SLOTS}
    sums = f.op("lp_pool2d", {"x": ddx, **kernel}, out, SUMS, slot="out", same=True)
    f.into(wanted, "elementwise_mul", {"X": sums, "Y": f.unary("abs", f.unary("sign", out))}, {"axis": -1})
    return f.ops


def _lp_pool2d_grad(g):
    """lp_pool2d_grad: linear in dOut at norm_type 1, else its formula differentiated as a whole."""
    return _sums_adjoint(g) if g.attr("norm_type") == 1.0 else _lp_expansion(g)


defgrad("lp_pool2d_grad", grad=_lp_pool2d_grad, no_grad_inputs=["out", *KERNEL_SIZE_SLOTS])
