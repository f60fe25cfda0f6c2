"""Second derivatives of gradc.ops.roi's grad ops, composite (gradc.ops.composite) so third derivatives follow.
Each grad op is its forward's adjoint: linear in dOut and flat in everything else. roi_align and psroi_pool are
linear in X, so d/d(dOut) of their grads pools ddX again. roi_pool_grad sends dOut to the pixels Argmax names, so
d/d(dOut) picks ddX there: each box's image of ddX (gathered by the image numbers RoisNum repeats), flattened per
channel, read at Argmax, 0 where Argmax is -1 (an empty bin)."""

from __future__ import annotations

from ..ir import EMPTY_VAR, VarType
from ..registry import defgrad
from . import roi  # noqa: F401  (registers the grad ops given makers here)
from .composite import Formula, first, linear

BOX_SLOTS = ("ROIs", "RoisNum")


def _box_images(f: Formula, rois: str, counts: str | None) -> str:
    """[R]: the image of each box, 0, 1, ... repeated by RoisNum's counts (all 0 without RoisNum)."""
    if counts is None:
        per_box = f.op("reduce_sum", {"X": rois}, rois, {"dim": [1], "keep_dim": False, "reduce_all": False},
                       dims=lambda s: s[:1])
        return f.op("fill_any_like", {"X": per_box}, per_box, {"value": 0.0, "dtype": int(VarType.INT64)},
                    dtype=VarType.INT64)
    ones = f.op("fill_any_like", {"X": counts}, counts, {"value": 1.0, "dtype": -1})
    numbers = f.op("cumsum", {"X": ones}, counts, {"axis": 0, "exclusive": True})
    return f.op("repeat_interleave", {"X": numbers, "RepeatsTensor": counts}, counts, {"dim": 0},
                dims=lambda _: [-1])


def _roi_pool_grad_again(g) -> list:
    wanted = first(g.IG("Out@GRAD"))
    ddx = first(g.OG("X@GRAD"))
    if wanted in (None, EMPTY_VAR) or ddx is None:
        return []
    f = Formula(g)
    argmax, dout = first(g.I("Argmax")), first(g.I("Out@GRAD"))
    images = _box_images(f, first(g.I("ROIs")), first(g.I("RoisNum")))
    per_box = f.op("gather", {"X": ddx, "Index": images}, first(g.I("X")), {"axis": 0}, dims=lambda s: [-1, *s[1:]])
    planes = [f.op("reshape2", {"X": v}, v, {"shape": [0, 0, -1]}, more={"XShape": f.xshape(v)},
                   dims=lambda s: s[:2] + [-1]) for v in (per_box, argmax)]
    picked = f.op("take_along_axis", {"Input": planes[0], "Index": planes[1]}, dout, {"Axis": 2}, slot="Result",
                  dims=lambda s: s[:2] + [-1])
    shape = f.op("shape", {"Input": dout}, dout, dims=lambda s: [len(s)], dtype=VarType.INT32)
    taken = f.op("reshape2", {"X": picked, "Shape": shape}, dout, more={"XShape": f.xshape(picked)})
    found = f.op("greater_equal", {"X": argmax, "Y": f.fill_like(argmax, 0.0)}, argmax, dtype=VarType.BOOL)
    f.into(wanted, "where", {"Condition": found, "X": taken, "Y": f.fill_like(dout, 0.0)})
    return f.ops


for _name in ("roi_align", "psroi_pool"):
    defgrad(f"{_name}_grad", grad=linear(_name, passed=BOX_SLOTS), no_grad_inputs=["X", *BOX_SLOTS])
defgrad("roi_pool_grad", grad=_roi_pool_grad_again, no_grad_inputs=["X", "Argmax", *BOX_SLOTS])
