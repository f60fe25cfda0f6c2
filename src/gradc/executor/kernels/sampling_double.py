"""Kernel of gradc.ops.sampling_double: grid_sampler_grad_grad, the second backward's terms along the direction
ddGrid of Grid (the grad of Grid@GRAD). Bilinear weights are products of one factor per axis, linear in each
position, so away from integer positions (and the padding modes' clamps and folds) the second derivatives are
exact: the weights' cross derivatives, with d position / d Grid constant there."""

from __future__ import annotations

import numpy as np

from . import kernel
from .sampling import gather, setup, x_grad


@kernel("grid_sampler_grad_grad")
def grid_sampler_grad_grad(k):
    """With v the positions' tangent (ddGrid times d position / d Grid) and w' each tap's weight's tangent along
    it: Output@GRAD@GRAD = sum of w' X read (the forward's tangent), X@GRAD = dOut scattered with weights w',
    Grid@GRAD = per axis b, the cross derivatives of the weights times v_a (a != b) times dOut . X read."""
    flat_x, grid, out_shape, taps, slopes = setup(k)
    dout = k.x("Output@GRAD")
    if list(dout.shape) != out_shape:
        raise ValueError(f"Output@GRAD has shape {list(dout.shape)}, but the output is {out_shape}")
    dout = dout.reshape(*out_shape[:2], -1).astype(np.float64)
    direction = k.x("Grid@GRAD@GRAD").astype(np.float64)
    dims = len(slopes)
    moves = [direction[..., dims - 1 - axis] * slopes[axis] for axis in range(dims)]   # Grid's last dim is x first
    tangents = [sum(tap.slopes[a] * moves[a] for a in range(dims)) for tap in taps]
    reads = [gather(flat_x, tap.index, tap.inside).astype(np.float64) for tap in taps]

    def output_grad():
        out = sum(r * t.reshape(t.shape[0], 1, -1) for r, t in zip(reads, tangents))
        return out.reshape(out_shape).astype(flat_x.dtype)

    def input_grad():
        moved = [tap._replace(weight=t) for tap, t in zip(taps, tangents)]
        return x_grad(flat_x, moved, dout).reshape(k.x("X").shape).astype(flat_x.dtype)

    def position_grad():
        per_axis = [np.zeros(grid.shape[:-1]) for _ in range(dims)]
        for tap, read in zip(taps, reads):
            weighted = (dout * read).sum(axis=1).reshape(grid.shape[:-1])
            for b in range(dims):
                per_axis[b] += weighted * sum(tap.cross(a, b) * moves[a] for a in range(dims) if a != b)
        grad = np.stack([per_axis[b] * slopes[b] for b in reversed(range(dims))], axis=-1)
        return grad.astype(grid.dtype)

    return k.grads({"Output@GRAD@GRAD": output_grad, "X@GRAD": input_grad, "Grid@GRAD": position_grad})
