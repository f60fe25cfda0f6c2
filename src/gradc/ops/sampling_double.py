"""Second derivatives of the sampling ops, with existing ops (gradc.ops.composite).

affine_grid and temporal_shift are linear in their input, so their grad ops (the adjoints) are linear in dOut and
flat in all else: d/d(dOut) is the forward op applied to ddX (composite.linear).

grid_sampler is linear in X: X@GRAD = A(Grid)^T dOut, A the sampling weights. So through X@GRAD,
d/d(dOut) = A(Grid) ddX = grid_sampler(ddX, Grid), and d/dGrid of dOut . A(Grid) ddX is the Grid grad of
grid_sampler at (ddX, Grid) for dOut: both exact, which covers a penalty on the input's gradient. Grid@GRAD
reached by the loss needs the second derivatives of the bilinear weights, which no op computes: refused with a
GradError (nearest sampling's Grid@GRAD is 0, so it passes).
"""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from . import sampling  # noqa: F401  (registers the grad ops)
from .composite import Formula, first, linear


def _grid_sampler_grad(g):
    grid_grad = first(g.O("Grid@GRAD"))
    if grid_grad is not None and g.wants(grid_grad) and g.attr("mode") != "nearest":
        raise GradError(f"grid_sampler_grad: gradc differentiates bilinear sampling twice only through X@GRAD; "
                        f"the loss reads the grid's gradient '{grid_grad}'")
    x_grad = first(g.O("X@GRAD"))
    if x_grad is None or not g.wants(x_grad):
        return []
    f = Formula(g)
    ddx, grid, dout = first(g.OG("X@GRAD")), first(g.I("Grid")), first(g.I("Output@GRAD"))
    f.into(first(g.IG("Output@GRAD")), "grid_sampler", {"X": ddx, "Grid": grid}, slot="Output", same=True)
    f.into(first(g.IG("Grid")), "grid_sampler_grad", {"X": ddx, "Grid": grid, "Output@GRAD": dout},
           slot="Grid@GRAD", same=True)
    return f.ops


defgrad("affine_grid_grad", grad=linear("affine_grid", x="Theta", out="Output", passed=("OutputShape",)),
        no_grad_inputs=["Theta", "OutputShape"])
defgrad("temporal_shift_grad", grad=linear("temporal_shift"))
defgrad("grid_sampler_grad", grad=_grid_sampler_grad, no_grad_inputs=["X"])
