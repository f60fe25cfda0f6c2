"""Second derivatives of gradc.ops.index_elementwise's grad ops, each linear in dOut and flat in all else:
get_grad adds dOut back where get read, so d/d(dOut) is get of ddX; put_grad zeroes dOut where put wrote, so
d/d(dOut) is ddX zeroed there (put of 0); put_with_tensor_grad's x and value grads are the same zeroing and
put's gather, so d/d(dOut) is put_with_tensor of ddX and ddValue (zeros for a grad nobody computed)."""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import index_elementwise  # noqa: F401  (registers the grad ops given makers here)
from .composite import Formula, first, linear


def _put_with_tensor_grad(g):
    wanted = first(g.IG("Out@GRAD"))
    if wanted == EMPTY_VAR:
        return []
    f = Formula(g)
    dout, value = first(g.I("Out@GRAD")), first(g.I("value"))
    ddx = first(g.OG("x@GRAD")) or f.fill_like(dout, 0.0)
    ddvalue = first(g.OG("value@GRAD")) or f.fill_like(value, 0.0)
    f.into(wanted, "index_elementwise_put_with_tensor", {"x": ddx, "index": g.I("index"), "value": ddvalue},
           same=True)
    return f.ops


defgrad("index_elementwise_get_grad", grad=linear("index_elementwise_get", x="x", passed=("index",)),
        no_grad_inputs=["x", "index"])
defgrad("index_elementwise_put_grad", grad=linear("index_elementwise_put", x="x", out="out", passed=("index",),
                                                  fixed={"value": 0.0}), no_grad_inputs=["x", "index"])
defgrad("index_elementwise_put_with_tensor_grad", grad=_put_with_tensor_grad, no_grad_inputs=["x", "index", "value"])
