"""Second derivatives of the ops that select or place with indices fixed by the forward (sorts, scatters,
puts, crops, unpooling): each grad op is linear in dOut and flat in all else, so d/d(dOut) is the grad op's
adjoint applied to ddX (the grad of its output X@GRAD), written with the forward op or a gather; the indices
get no grad. Composite (gradc.ops.composite), so third derivatives follow.
"""

from __future__ import annotations

from .. import registry
from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from . import index, pool, rearrange, select, set_value, shape, sort, tensor_array  # noqa: F401  (grad ops)
from .composite import Formula, first, linear
from .product_directions import put_along_one_more_direction


def _flat(grad_type: str) -> list[str]:
    """The grad op's inputs other than the output grads: what it is flat in."""
    return [slot for slot in registry.get(grad_type).inputs if not slot.endswith("@GRAD")]


def _picked(keep_dim: str | None = None):
    """top_k_v2, argsort, kthvalue: X@GRAD puts dOut at Indices along the axis, so d/d(dOut) takes ddX there
    (Indices given the axis back first when ``keep_dim`` names an attribute that is false)."""

    def maker(g):
        wanted = first(g.IG("Out@GRAD"))
        if wanted == EMPTY_VAR:
            return []
        f = Formula(g)
        indices, dout = first(g.I("Indices")), first(g.I("Out@GRAD"))
        rank = len(g.shape(first(g.O("X@GRAD"))))
        if not rank:   # a 0-d X is its own pick (Out 0-d too): X@GRAD is dOut
            f.into(wanted, "assign", {"X": first(g.OG("X@GRAD"))})
            return f.ops
        axis = g.attr("axis") % rank   # Paddle's take_along_axis wants it >= 0

        def unsqueezed(s):
            return s[:axis % (len(s) + 1)] + [1] + s[axis % (len(s) + 1):]

        dims = None
        if keep_dim is not None and not g.attr(keep_dim):
            dims = unsqueezed
            indices = f.op("unsqueeze2", {"X": indices}, indices, {"axes": [axis]}, more={"XShape": f.xshape(indices)},
                           dims=unsqueezed)
        taken = f.op("take_along_axis", {"Input": first(g.OG("X@GRAD")), "Index": indices}, dout, {"Axis": axis},
                     slot="Result", dims=dims)
        f.shaped_like(taken, dout, out=wanted)
        return f.ops

    return maker


for _name, _keep in (("top_k_v2", None), ("argsort", None), ("kthvalue", "keepdim")):
    defgrad(f"{_name}_grad", grad=_picked(_keep), no_grad_inputs=_flat(f"{_name}_grad"))


def _placed(forward: str, x: str, value: str, passed: tuple[str, ...], out: str = "Out"):
    """scatter, scatter_nd_add, index_add, put_along_axis: X@GRAD is dOut where nothing was placed (or all of it)
    and the placed values' grad gathers dOut: d/d(dOut) places ddValue into ddX with the forward op (zeros for a
    grad nobody computed)."""

    def maker(g):
        wanted = first(g.IG(out + "@GRAD"))
        if wanted == EMPTY_VAR:
            return []
        f = Formula(g)
        dout = first(g.I(out + "@GRAD"))
        ddx = first(g.OG(x + "@GRAD")) or f.fill_like(dout, 0.0)
        placed = first(g.I(value))
        ddvalue = first(g.OG(value + "@GRAD")) or (f.fill_like(placed, 0.0) if placed else _zero(f, dout))
        f.emit(forward, {x: ddx, value: ddvalue, **{slot: g.I(slot) for slot in passed}}, {out: wanted}, same=True)
        return f.ops

    return maker


def _zero(f, like: str) -> str:
    """A 0-d zero (set_value's value when the forward placed a literal)."""
    return f.op("reduce_sum", {"X": f.fill_like(like, 0.0)}, like, {"dim": [0], "keep_dim": False, "reduce_all": True},
                dims=lambda s: [])


def _put_tangent(f, g, wanted: str) -> None:
    """d/d(dOut) of put_along_axis_grad with Reduce amin/amax, whose grads are dOut times weights (1 where Input
    stays, a share among the contributors tied for a position's extreme, else 0): the forward's tangent, ddX and
    ddValue (spread to Index's shape) times the weights the grad op gives at dOut = 1, placed with Reduce add."""
    x, picks, value, dout = (first(g.I(slot)) for slot in ("Input", "Index", "Value", "Result@GRAD"))
    dims = g.shape(picks)
    spread = f.op("expand_as_v2", {"X": value, "Y": picks}, value, {"target_shape": []}, dims=lambda s: dims)
    weights = {"Input@GRAD": g.tmp(x), "Value@GRAD": g.tmp(value, lambda s: dims)}
    f.emit("put_along_axis_grad", {"Input": x, "Index": picks, "Value": spread, "Result": g.I("Result"),
                                   "Result@GRAD": f.fill_like(dout, 1.0)}, weights, same=True)
    ddx = first(g.OG("Input@GRAD")) or f.fill_like(x, 0.0)
    ddvalue = first(g.OG("Value@GRAD"))
    ddvalue = f.op("expand_as_v2", {"X": ddvalue, "Y": picks}, value, {"target_shape": []}, dims=lambda s: dims) \
        if ddvalue else f.fill_like(spread, 0.0)
    f.emit("put_along_axis", {"Input": f.mul(ddx, weights["Input@GRAD"], x), "Index": picks,
                              "Value": f.mul(ddvalue, weights["Value@GRAD"], spread)}, {"Result": wanted},
           {"Axis": g.attr("Axis"), "Reduce": "add", "Include_self": True})


def _put_along_axis_grad(g):
    """put_along_axis_grad by its Reduce: linear ones place ddValue into ddX; amin/amax weight ddX and ddValue as
    their grads weight dOut (they are flat in Input and Value); mul's weights are products of the other factors of
    each run-time group, so its grad is put_along_axis_grad_grad along the cotangents (gradc.ops.product_directions)."""
    if g.attr("Reduce") in ("mul", "multiply"):
        return put_along_one_more_direction(g)
    if g.attr("Reduce") not in ("amin", "amax"):
        return _placed("put_along_axis", "Input", "Value", ("Index",), "Result")(g)
    f = Formula(g)
    wanted = first(g.IG("Result@GRAD"))
    if wanted != EMPTY_VAR:
        _put_tangent(f, g, wanted)
    return f.ops


defgrad("put_along_axis_grad", grad=_put_along_axis_grad, no_grad_inputs=["Index", "Result"])
for _name, _x, _value, _passed, _out in (
        ("scatter", "X", "Updates", ("Ids",), "Out"),
        ("scatter_nd_add", "X", "Updates", ("Index",), "Out"),
        ("index_add", "X", "AddValue", ("Index",), "Out"),
        ("set_value", "Input", "ValueTensor", ("StartsTensorList", "EndsTensorList", "StepsTensorList"), "Out")):
    defgrad(f"{_name}_grad", grad=_placed(_name, _x, _value, _passed, _out),
            no_grad_inputs=_flat(f"{_name}_grad"))


def _expand_as(g):
    """expand_as_v2_grad sums dOut down to X: d/d(dOut) expands ddX to dOut's shape."""
    f = Formula(g)
    dout = first(g.I("Out@GRAD"))
    f.into(first(g.IG("Out@GRAD")), "expand_as_v2", {"X": first(g.OG("X@GRAD")), "Y": dout}, {"target_shape": []})
    return f.ops


def _crop(g):
    """crop_tensor_grad pads dOut into zeros at the offsets: d/d(dOut) crops ddX there to dOut's shape."""
    wanted = first(g.IG("Out@GRAD"))
    if wanted == EMPTY_VAR:
        return []
    f = Formula(g)
    dout = first(g.I("Out@GRAD"))
    dims = f.op("shape", {"Input": dout}, dout, dims=lambda s: [len(s)], dtype=VarType.INT32)
    f.emit("crop_tensor", {"X": first(g.OG("X@GRAD")), "Shape": dims, "Offsets": g.I("Offsets"),
                           "OffsetsTensor": g.I("OffsetsTensor")}, {"Out": wanted}, same=True)
    return f.ops


defgrad("expand_as_v2_grad", grad=_expand_as, no_grad_inputs=["X"])
defgrad("crop_tensor_grad", grad=_crop, no_grad_inputs=_flat("crop_tensor_grad"))
defgrad("meshgrid_grad", grad=linear("meshgrid"), no_grad_inputs=["X"])
for _name in ("unpool", "unpool3d"):
    defgrad(f"{_name}_grad", grad=linear(_name, passed=("Indices",)), no_grad_inputs=_flat(f"{_name}_grad"))


def _array_join(g):
    """tensor_array_to_tensor_grad splits dOut into the array's slots: d/d(dOut) joins the slots of ddX (the grad
    of the array grad) the same way."""
    wanted, ddx = first(g.IG("Out@GRAD")), first(g.OG("X@GRAD"))
    if wanted == EMPTY_VAR or ddx is None:
        return []
    f = Formula(g)
    sizes = g.tmp(first(g.I("Out@GRAD")), lambda s: [-1], VarType.INT32)
    f.emit("tensor_array_to_tensor", {"X": ddx}, {"Out": wanted, "OutIndex": sizes}, same=True)
    return f.ops


defgrad("tensor_array_to_tensor_grad", grad=_array_join, no_grad_inputs=["X"])
