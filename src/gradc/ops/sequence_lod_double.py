"""Second derivatives of gradc.ops.sequence_lod's grad ops, composite (gradc.ops.composite) so third derivatives
follow. Every grad op is linear in dOut; X supplies only its LoD (and a shape) to all but sequence_conv_grad:

- sequence_pool_grad spreads dOut over each sequence's rows (MAX: to MaxIndex's rows): d/d(dOut) pools ddX
  the same way, with pad value 0 (MAX: ddX at MaxIndex, 0 for an empty sequence).
- sequence_softmax_grad = (dOut - sum over the sequence of dOut Out) Out: written again with sequence_pool SUM
  and sequence_expand and differentiated.
- sequence_conv_grad: Out is bilinear in ((X, PaddingData), Filter), so as gradc.ops.composite.bilinear.
- sequence_expand_grad, im2sequence_grad are their forwards' adjoints; lod_reset_grad passes dOut on.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from .composite import Formula, expansion, first, linear

_pool_linear = linear("sequence_pool", extra=("MaxIndex",), fixed={"pad_value": 0.0})


def _pool_grad_maker(g):
    """d/d(dOut) of sequence_pool_grad: the pooling again on ddX, pad value 0; MAX picks ddX at MaxIndex."""
    if g.attr("pooltype") != "MAX":
        return _pool_linear(g)
    f = Formula(g)
    wanted, ddx = first(g.IG("Out@GRAD")), first(g.OG("X@GRAD"))
    if wanted in (None, EMPTY_VAR) or ddx is None:
        return []
    index, dout = first(g.I("MaxIndex")), first(g.I("Out@GRAD"))
    picked = f.op("take_along_axis", {"Input": ddx, "Index": index}, dout, {"Axis": 0}, slot="Result")
    pooled = f.op("greater_equal", {"X": index, "Y": f.fill_like(index, 0)}, index, dtype=VarType.BOOL)
    f.into(wanted, "where", {"Condition": pooled, "X": picked, "Y": f.fill_like(picked, 0.0)})
    return f.ops


def _softmax_grad(f, g):
    """X@GRAD = (dOut - each sequence's sum of dOut Out, spread over its rows) Out."""
    out, dout = first(g.I("Out")), first(g.I("Out@GRAD"))
    sums = f.op("sequence_pool", {"X": f.mul(dout, out, out)}, out, {"pooltype": "SUM", "pad_value": 0.0},
                more={"MaxIndex": g.tmp(out, dtype=VarType.INT32)}, dims=lambda s: [-1, *s[1:]])
    spread = f.op("sequence_expand", {"X": sums, "Y": out}, out, {"ref_level": -1})
    return {"X@GRAD": f.mul(f.sub(dout, spread, out), out, out)}


def _conv_grad_maker(g):
    """With ddX, ddP, ddW the grads of X@GRAD, PaddingData@GRAD, Filter@GRAD (W the filter, P the padding):
        d/d(dOut) = conv(ddX, ddP, W) + conv(X, P, ddW),   d/dX, d/dP = conv_grad(ddW, dOut),
        d/dW = conv_grad(ddX, ddP, dOut)."""
    f = Formula(g)
    x, pad, w, dout = (first(g.I(slot)) for slot in ("X", "PaddingData", "Filter", "Out@GRAD"))
    ddx, ddpad, ddw = (first(g.OG(slot)) for slot in ("X@GRAD", "PaddingData@GRAD", "Filter@GRAD"))
    trainable = g.attr("paddingTrainable") and pad is not None
    if ddx is not None or (trainable and ddpad is not None):
        ddx = ddx or f.fill_like(x, 0.0)   # a zero X keeps X's LoD
        ddpad = (ddpad or f.fill_like(pad, 0.0)) if trainable else None
    terms = []
    if ddx is not None:
        terms.append(f.op("sequence_conv", {"X": ddx, "PaddingData": ddpad, "Filter": w}, dout, same=True))
    if ddw is not None:
        terms.append(f.op("sequence_conv", {"X": x, "PaddingData": pad, "Filter": ddw}, dout, same=True))
    if terms:
        f.into(first(g.IG("Out@GRAD")), "sum", {"X": terms})
    if ddw is not None:
        f.emit("sequence_conv_grad", {"X": x, "PaddingData": pad, "Filter": ddw, "Out@GRAD": dout},
               {"X@GRAD": first(g.IG("X")), "PaddingData@GRAD": first(g.IG("PaddingData"))}, same=True)
    if ddx is not None:
        f.emit("sequence_conv_grad", {"X": ddx, "PaddingData": ddpad, "Filter": w, "Out@GRAD": dout},
               {"Filter@GRAD": first(g.IG("Filter"))}, same=True)
    return f.ops


def _passed_on(g):
    """lod_reset_grad copies dOut: d/d(dOut) copies ddX."""
    f = Formula(g)
    ddx = first(g.OG("X@GRAD"))
    if ddx is not None:
        f.into(first(g.IG("Out@GRAD")), "assign", {"X": ddx})
    return f.ops


defgrad("sequence_pool_grad", grad=_pool_grad_maker, no_grad_inputs=["X", "MaxIndex"])
defgrad("sequence_softmax_grad", grad=expansion(_softmax_grad), no_grad_inputs=["X"])
defgrad("sequence_conv_grad", grad=_conv_grad_maker)
defgrad("sequence_expand_grad", grad=linear("sequence_expand", passed=("Y",)), no_grad_inputs=["X", "Y"])
defgrad("lod_reset_grad", grad=_passed_on, no_grad_inputs=["X"])
defgrad("im2sequence_grad", grad=linear("im2sequence", passed=("Y",)), no_grad_inputs=["X", "Y"])
