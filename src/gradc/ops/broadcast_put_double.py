"""Second derivatives of broadcast_tensors and index_put: both grad ops are linear in the output grads and flat
in all else, so d/d(dOut) is their adjoint applied to the grads of their outputs, written with the forward ops
(composite, gradc.ops.composite, so third derivatives follow). The indices get no grad.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import broadcast_put  # noqa: F401  (registers the grad ops)
from .composite import Formula, first, linear

# X@GRAD[i] = Out@GRAD[i] summed down to X[i]'s shape: d/d(dOut[i]) is ddX[i] broadcast to the common shape
defgrad("broadcast_tensors_grad", grad=linear("broadcast_tensors"), no_grad_inputs=["X"])


def _index_put_grad(g):
    """x@GRAD = dOut, zeroed at the picked entries unless accumulate; value@GRAD = dOut at the picked entries
    summed down to value. So d/d(dOut) = ddx (zeroed there unless accumulate) + ddvalue added at each pick, a
    repeated pick once for each time (zeros for a grad nobody computed)."""
    wanted = first(g.IG("out@GRAD"))
    if wanted == EMPTY_VAR:
        return []
    f = Formula(g)
    indices, dout, value = g.I("indices"), first(g.I("out@GRAD")), first(g.I("value"))
    ddx = first(g.OG("x@GRAD")) or f.fill_like(dout, 0.0)
    ddvalue = first(g.OG("value@GRAD")) or f.fill_like(value, 0.0)
    zero = f.fill_like(value, 0.0)
    kept = ddx if g.attr("accumulate") else f.op("index_put", {"x": ddx, "indices": indices, "value": zero}, dout,
                                                 {"accumulate": False}, slot="out")
    f.into(wanted, "index_put", {"x": kept, "indices": indices, "value": ddvalue}, {"accumulate": True}, slot="out")
    return f.ops


defgrad("index_put_grad", grad=_index_put_grad, no_grad_inputs=["x", "indices", "value"])
