"""Kernel of gradc.ops.sampling_double: grid_sampler_grad_grad, the grads of D_V <dOut, grid_sampler> for the
directions V = Grid@GRAD@GRAD (one or more tangents of Grid). Bilinear weights are products of one factor per axis,
each linear in its position, so along V each direction takes an axis of its own (a second derivative along one axis
is 0): exact away from integer positions (and the padding modes' clamps and folds), with d position / d Grid
constant there; more directions than axes give 0."""

from __future__ import annotations

import math

import numpy as np

from . import kernel
from .sampling import gather, grid_grad, setup, x_grad


def _along(tap, moves: list, axes: frozenset):
    """The derivative of the product of ``tap``'s factors over ``axes`` along ``moves`` (per direction, the
    positions' tangents per axis): each direction differentiates one factor, a different one each."""
    if not moves:
        return math.prod((tap.factors[a] for a in axes), start=np.ones_like(tap.weight))
    move, rest = moves[0], moves[1:]
    return sum((tap.signs[a] * move[a] * _along(tap, rest, axes - {a}) for a in axes), np.zeros_like(tap.weight))


@kernel("grid_sampler_grad_grad")
def grid_sampler_grad_grad(k):
    """Each tap's weight w replaced by D_V w and its slopes by D_V dw/dp_b: Output@GRAD@GRAD is the forward with
    them (its tangent along V), X@GRAD the grad's scatter of dOut, Grid@GRAD the grad's per-axis sum of
    slopes times dOut . X read."""
    flat_x, grid, out_shape, taps, slopes = setup(k)
    dout = k.x("Output@GRAD")
    if list(dout.shape) != out_shape:
        raise ValueError(f"Output@GRAD has shape {list(dout.shape)}, but the output is {out_shape}")
    dout = dout.reshape(*out_shape[:2], -1).astype(np.float64)
    dims = len(slopes)
    moves = [[direction.astype(np.float64)[..., dims - 1 - axis] * slopes[axis] for axis in range(dims)]
             for direction in k.xs("Grid@GRAD@GRAD")]   # Grid's last dim is x first
    axes = frozenset(range(dims))
    moved = [tap._replace(weight=_along(tap, moves, axes),
                          slopes=[tap.signs[b] * _along(tap, moves, axes - {b}) for b in range(dims)]) for tap in taps]

    def output_grad():
        out = sum(gather(flat_x, tap.index, tap.inside).astype(np.float64)
                  * tap.weight.reshape(tap.weight.shape[0], 1, -1) for tap in moved)
        return out.reshape(out_shape).astype(flat_x.dtype)

    return k.grads({"Output@GRAD@GRAD": output_grad,
                    "X@GRAD": lambda: x_grad(flat_x, moved, dout).reshape(k.x("X").shape).astype(flat_x.dtype),
                    "Grid@GRAD": lambda: grid_grad(flat_x, moved, slopes, dout, grid)})
