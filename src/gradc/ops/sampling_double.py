"""Second derivatives of the sampling ops, with existing ops (gradc.ops.composite).

affine_grid and temporal_shift are linear in their input, so their grad ops (the adjoints) are linear in dOut and
flat in all else: d/d(dOut) is the forward op applied to ddX (composite.linear).

grid_sampler is linear in X: X@GRAD = A(Grid)^T dOut, A the sampling weights. So through X@GRAD,
d/d(dOut) = A(Grid) ddX = grid_sampler(ddX, Grid), and d/dGrid of dOut . A(Grid) ddX is the Grid grad of
grid_sampler at (ddX, Grid) for dOut (gradc.ops.multilinear_double), both exact. Through Grid@GRAD (a gradient
penalty on the grid of a spatial transformer) the terms are the Hessian of <dOut, grid_sampler> times ddGrid:
grid_sampler_grad_grad (gradc's own op; Paddle has no double grad of grid_sample), whose kernel differentiates the
bilinear weights twice. Bilinear sampling is piecewise smooth: the weights are linear along each axis, with kinks
where a position crosses an integer (a new cell) or a padding mode's clamp or fold; gradc's derivatives are those
of the cell the kernel reads, exact away from the kinks. Nearest sampling's Grid@GRAD is 0, and so is its term.
"""

from __future__ import annotations

from ..registry import defgrad, grads_like_inputs
from .composite import first, linear
from .multilinear_double import through_operand_grads, through_position_tangents
from .sampling import GRID_SAMPLER


def _grid_sampler_grad(g):
    values = {slot: first(g.I(slot)) for slot in ("X", "Grid")}
    position = None if g.attr("mode") == "nearest" else "Grid"
    return through_operand_grads(g, "grid_sampler", values, ("X",), targets=("X", "Grid"), out="Output",
                                 position=position)


def _grid_sampler_grad_grad(g):
    values = {slot: first(g.I(slot)) for slot in ("X", "Grid")}
    return through_position_tangents(g, "grid_sampler", values, ("X",), out="Output", position="Grid")


defgrad("affine_grid_grad", grad=linear("affine_grid", x="Theta", out="Output", passed=("OutputShape",)),
        no_grad_inputs=["Theta", "OutputShape"])
defgrad("temporal_shift_grad", grad=linear("temporal_shift"))
defgrad("grid_sampler_grad", grad=_grid_sampler_grad)
defgrad("grid_sampler_grad_grad", inputs=["X", "Grid", "Output@GRAD", "Grid@GRAD@GRAD[]"],
        outputs=["X@GRAD?", "Grid@GRAD?", "Output@GRAD@GRAD?"], attrs=dict(GRID_SAMPLER.attrs),
        infer=grads_like_inputs, grad=_grid_sampler_grad_grad, of="grid_sampler_grad")
