"""Second derivatives of the ops that move data: each is linear in its input, so its grad op (the adjoint)
is linear in dOut and flat in all else, and d/d(dOut) is the forward op applied to ddX (the grad of the grad
op's output), with the same attributes and index/axis inputs (gradc.ops.composite.linear). As Paddle's makers
do: transpose2_grad's grad is a transpose2, slice_grad's a slice, gather_grad's a gather.
"""

from __future__ import annotations

from .. import registry
from ..ir import VarType
from ..opdef import slot_names
from ..registry import defgrad
from . import index, interp, math, nn, pad, rearrange, select, shape, vision  # noqa: F401  (registers grad ops)
from .composite import Formula, first, linear
from .index import SLICE_TENSORS, STRIDED_TENSORS

XSHAPE = ("XShape",)

for _name in ("transpose2", "squeeze2", "flatten_contiguous_range"):
    defgrad(f"{_name}_grad", grad=linear(_name, extra=XSHAPE), no_grad_inputs=XSHAPE)
defgrad("unsqueeze2_grad", grad=linear("unsqueeze2", passed=("AxesTensor", "AxesTensorList"), extra=XSHAPE),
        no_grad_inputs=["XShape", "AxesTensor", "AxesTensorList"])
defgrad("concat_grad", grad=linear("concat", passed=("AxisTensor",)), no_grad_inputs=["X", "AxisTensor"])
defgrad("stack_grad", grad=linear("stack", out="Y"), no_grad_inputs=["X"])
defgrad("unstack_grad", grad=linear("unstack", out="Y"))
for _name, _tensors in (("slice", SLICE_TENSORS), ("strided_slice", STRIDED_TENSORS)):
    defgrad(f"{_name}_grad", grad=linear(_name, x="Input", passed=tuple(sorted(slot_names(_tensors)))),
            no_grad_inputs=["Input"])
defgrad("gather_grad", grad=linear("gather", passed=("Index", "Axis")), no_grad_inputs=["X"])
defgrad("gather_nd_grad", grad=linear("gather_nd", passed=("Index",)), no_grad_inputs=["X"])
defgrad("take_along_axis_grad", grad=linear("take_along_axis", x="Input", out="Result", passed=("Index",)),
        no_grad_inputs=["Input"])
defgrad("index_select_grad", grad=linear("index_select", passed=("Index",)), no_grad_inputs=["X"])
defgrad("expand_v2_grad", grad=linear("expand_v2", passed=("Shape", "expand_shapes_tensor")), no_grad_inputs=["X"])
defgrad("tile_grad", grad=linear("tile", passed=("RepeatTimes", "repeat_times_tensor")), no_grad_inputs=["X"])


# more ops that move data (gradc.ops.rearrange, .select, .pad, .interp, .vision, .nn, .math)
for _name, _options in {
    "pad": {"fixed": {"pad_value": 0.0}}, "pad3d": {"passed": ("Paddings",), "fixed": {"value": 0.0}},
    "roll": {"passed": ("ShiftsTensor",)}, "tril_triu": {}, "cumsum": {}, "diag_v2": {"fixed": {"padding_value": 0.0}},
    "pixel_shuffle": {}, "pixel_unshuffle": {}, "channel_shuffle": {}, "index_sample": {"passed": ("Index",)},
    "masked_select": {"out": "Y", "passed": ("Mask",)}, "repeat_interleave": {"passed": ("RepeatsTensor",)},
    "unfold": {"out": "Y"}, "fold": {"out": "Y"}, "lookup_table_v2": {"x": "W", "passed": ("Ids",)},
    "lookup_table": {"x": "W", "passed": ("Ids",)},
    **{f"{kind}_interp_v2": {"passed": ("OutSize", "SizeTensor", "Scale")}
       for kind in ("linear", "bilinear", "trilinear", "nearest", "bicubic")},
}.items():
    _flat = [slot for slot in registry.get(f"{_name}_grad").inputs if not slot.endswith("@GRAD")]
    defgrad(f"{_name}_grad", grad=linear(_name, **_options), no_grad_inputs=_flat)


def _reshape(g):
    """reshape2_grad gives dOut X's shape: d/d(dOut) gives ddX dOut's shape (read at run time, so a shape the
    forward took from a tensor works too)."""
    f = Formula(g)
    dout = first(g.I("Out@GRAD"))
    dims = f.op("shape", {"Input": dout}, dout, dims=lambda s: [len(s)], dtype=VarType.INT32)
    f.emit("reshape2", {"X": first(g.OG("X@GRAD")), "Shape": dims},
           {"Out": first(g.IG("Out@GRAD")), "XShape": f.xshape(first(g.O("X@GRAD")))})
    return f.ops


defgrad("reshape2_grad", grad=_reshape, no_grad_inputs=XSHAPE)
