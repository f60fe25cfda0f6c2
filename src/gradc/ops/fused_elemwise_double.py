"""Second derivatives of gradc.ops.fused_elemwise: each grad op written again as its two functors in plain
differentiable ops (elementwise_add / elementwise_mul with the op's axis, scale, relu, tanh, sigmoid, gelu) and their
grad ops (gradc.ops.composite.differentiate), so third derivatives follow. The saved Out and IntermediateOut get no
gradient: the expansion recomputes them from X and Y."""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from .composite import differentiate, expansion, first
from .fused_elemwise import BINARY, FUSED_ELEMWISE


def _unary(f, name: str, v: str, scale: float) -> str:
    if name == "scale":
        return f.scale(v, scale)
    return f.unary(name, v, {"approximate": True} if name == "gelu" else None)


def _binary(f, name: str, x: str, y: str, axis: int) -> str:
    return (f.add if name == "elementwise_add" else f.mul)(x, y, x, axis)


@expansion
def _elemwise_again(f, g):
    x, y = first(g.I("X")), first(g.I("Y"))
    if x is None:
        raise GradError(f"{g.fwd.type}: a second derivative recomputes the forward from X, which this op lacks")
    (outer, inner), scale, axis = g.attr("functor_list"), g.attr("scale"), g.attr("axis")
    if outer in BINARY:
        out = _binary(f, outer, x, _unary(f, inner, y, scale), axis)
    else:
        out = _unary(f, outer, _binary(f, inner, x, y, axis), scale)
    targets = {x: g.tmp(x), y: g.tmp(y)}
    f.ops += differentiate(g, f.ops, {out: first(g.I("Out@GRAD"))}, targets)
    return {"X@GRAD": targets[x], "Y@GRAD": targets[y]}


for _type in FUSED_ELEMWISE:
    defgrad(f"{_type}_grad", grad=_elemwise_again, no_grad_inputs=["Out", "IntermediateOut"], of=_type)
