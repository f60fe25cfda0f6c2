"""Kernels of gradc.ops.ms_deform_attn_double: the grads of D_V <dOut, F> for the directions V (one or more tangents
of the sampling locations, the grad of their grad and its own grads). Each corner's bilinear weight is linear along
y and along x, so its derivatives along V are those of gradc.executor.kernels.bilinear_tangents: exact away from
integer pixel positions, where the weights have kinks."""

from __future__ import annotations

import numpy as np

from ...ops.ms_deform_attn import slots_of
from . import kernel
from .bilinear_tangents import cell_tangents
from .ms_deform_attn import args, levels


@kernel("ms_deform_attn_grad_grad", "ms_deformable_attn_grad_grad")
def ms_deform_attn_grad_grad(k):
    """With V in pixels (times W, H) and w' each corner's weight's derivative along it: the samples' tangent S'
    (w' in the weights' place), Out@GRAD@GRAD = the attention weights times S', AttentionWeights' grad dOut . S',
    Value's grad dOut spread with w' times the weights, the locations' grad along x (y) w' differentiated along x (y)
    times dOut . the corners' values times the weights, times W (H)."""
    value_slot, _, _, loc_slot, attn_slot, out_slot = slots_of(k.op.type)
    value, loc, attn, shapes, starts = args(k)
    dout = k.x(out_slot + "@GRAD").reshape(*loc.shape[:3], value.shape[3])[:, :, :, None, :]
    directions = k.xs(loc_slot + "@GRAD@GRAD")
    dvalue, dloc, dattn = np.zeros_like(value), np.zeros_like(loc), np.zeros_like(attn)
    out = np.zeros(dout.shape[:3] + dout.shape[4:], value.dtype)
    for level, height, width, corners in levels(value, loc, shapes, starts):
        moves = [(v[:, :, :, level, :, 1] * height, v[:, :, :, level, :, 0] * width) for v in directions]
        top = attn[:, :, :, level, :, None] * dout
        derived = [cell_tangents(weight, sy * wx, sx * wy, sy * sx * valid, moves)
                   for _, weight, (sy, sx, wx, wy, valid), _ in corners]
        moved = sum(t[..., None] * values for (t, _, _), (values, _, _, _) in zip(derived, corners))
        out += np.einsum("nqmp,nqmpd->nqmd", attn[:, :, :, level], moved)
        dattn[:, :, :, level] = (dout * moved).sum(-1)
        reads = [(top * values).sum(-1) for values, _, _, _ in corners]   # dOut . the corner's values, weighted
        dloc[:, :, :, level, :, 0] = width * sum(x * read for (_, _, x), read in zip(derived, reads))
        dloc[:, :, :, level, :, 1] = height * sum(y * read for (_, y, _), read in zip(derived, reads))
        for (t, _, _), (_, _, _, index) in zip(derived, corners):
            np.add.at(dvalue, index, t[..., None] * top)
    return k.grads({value_slot + "@GRAD": lambda: dvalue, loc_slot + "@GRAD": lambda: dloc,
                    attn_slot + "@GRAD": lambda: dattn, out_slot + "@GRAD@GRAD": lambda: out.reshape(
                        k.x(out_slot + "@GRAD").shape)})
