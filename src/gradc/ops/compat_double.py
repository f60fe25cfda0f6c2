"""Second derivatives of gradc.ops.compat's grad ops, composite so third derivatives follow:

- max/min_with_index_grad put dvalues at the index along dim: d/d(dvalues) takes ddx there (take_along_axis);
- slogdet_v2_grad (dlogdet A^-T) is written again with inverse and transpose2 and differentiated;
- embedding_with_scaled_gradient_grad (dout summed per id, divided by the id's count) is written again with
  lookup_table_v2_grad (the sums, and the counts as the sums of ones) and elementwise_div, and differentiated;
- enable/disable_check_model_nan_inf_grad (defined here: Paddle's, reading dout only, with the flag to set on the
  way back) pass dout on: d/d(dout) is ddx.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defgrad
from . import compat  # noqa: F401  (registers the grad ops given makers here)
from .composite import Formula, expansion, first
from .linalg_double import inverse, mt, unsqueezed


def _with_index_second(g):
    wanted = first(g.IG("values@GRAD"))
    ddx = first(g.OG("x@GRAD"))
    if wanted in (None, EMPTY_VAR) or ddx is None:
        return []
    f, rank = Formula(g), len(g.shape(first(g.I("x"))))
    axis, indices = g.attr("dim") % rank, first(g.I("indices"))
    if g.attr("keepdim"):
        f.into(wanted, "take_along_axis", {"Input": ddx, "Index": indices}, {"Axis": axis}, slot="Result")
        return f.ops
    x = first(g.I("x"))
    taken = f.op("take_along_axis", {"Input": ddx, "Index": unsqueezed(f, indices, axis)}, x, {"Axis": axis},
                 slot="Result", dims=lambda s: [1 if i == axis else d for i, d in enumerate(s)])
    f.emit("squeeze2", {"X": taken}, {"Out": wanted, "XShape": f.xshape(taken)}, {"axes": [axis]})
    return f.ops


for _extreme in ("max_with_index_grad", "min_with_index_grad"):
    defgrad(_extreme, grad=_with_index_second, no_grad_inputs=["x", "values", "indices"])


@expansion
def _slogdet_v2_grad(f, g):
    a, dlog = first(g.I("x")), first(g.I("logdet@GRAD"))
    return {"x@GRAD": f.mul(mt(f, inverse(f, a)), dlog, a, axis=0)}


defgrad("slogdet_v2_grad", grad=_slogdet_v2_grad, no_grad_inputs=["sign", "logdet", "sign@GRAD"])


@expansion
def _scaled_embedding_grad(f, g):
    ids, weight, dout = first(g.I("x")), first(g.I("weight")), first(g.I("out@GRAD"))
    padding = {"padding_idx": g.attr("padding_idx")}

    def summed(rows):
        return f.op("lookup_table_v2_grad", {"W": weight, "Ids": ids, "Out@GRAD": rows}, weight, padding,
                    slot="W@GRAD")

    counts = summed(f.fill_like(dout, 1.0))
    at_least_one = f.op("elementwise_max", {"X": counts, "Y": f.fill_like(counts, 1.0)}, counts, {"axis": -1})
    return {"weight@GRAD": f.div(summed(dout), at_least_one, weight)}


defgrad("embedding_with_scaled_gradient_grad", grad=_scaled_embedding_grad, no_grad_inputs=["x", "weight"])


def _passed_on(g):
    f = Formula(g)
    ddx = first(g.OG("x@GRAD"))
    if ddx is not None:
        f.into(first(g.IG("out@GRAD")), "assign", {"X": ddx})
    return f.ops


def _grad_unchanged(ctx):
    return {"x@GRAD": (ctx.shape("out@GRAD"), ctx.dtype("out@GRAD"))}


for _check, _unset in (("enable_check_model_nan_inf", 0), ("disable_check_model_nan_inf", 1)):
    defgrad(f"{_check}_grad", inputs=["out@GRAD"], outputs=["x@GRAD"], attrs={"unsetflag": _unset},
            infer=_grad_unchanged, of=_check, grad=_passed_on)
