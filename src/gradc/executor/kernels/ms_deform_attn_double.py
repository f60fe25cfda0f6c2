"""Kernels of gradc.ops.ms_deform_attn_double: the second backward's terms along the direction ddLoc of the sampling
locations (the grad of their grad). Each corner's bilinear weight is linear along y and along x, so its tangent is
sy wx v_y + sx wy v_x and its only second derivative the cross one sy sx (inside the map): exact away from integer
pixel positions, where the weights have kinks."""

from __future__ import annotations

import numpy as np

from ...ops.ms_deform_attn import slots_of
from . import kernel
from .ms_deform_attn import args, levels


@kernel("ms_deform_attn_grad_grad", "ms_deformable_attn_grad_grad")
def ms_deform_attn_grad_grad(k):
    """With v = ddLoc in pixels (times W, H) and w' each corner's weight's tangent along it: the samples' tangent
    S' (w' in the weights' place), Out@GRAD@GRAD = the attention weights times S', AttentionWeights' grad
    dOut . S', Value's grad dOut spread with w' times the weights, the locations' grad along x (y) the cross
    derivatives times v along y (x) times dOut . the corners' values times the weights, times W (H)."""
    value_slot, _, _, loc_slot, attn_slot, out_slot = slots_of(k.op.type)
    value, loc, attn, shapes, starts = args(k)
    dout = k.x(out_slot + "@GRAD").reshape(*loc.shape[:3], value.shape[3])[:, :, :, None, :]
    direction = k.x(loc_slot + "@GRAD@GRAD")
    dvalue, dloc, dattn = np.zeros_like(value), np.zeros_like(loc), np.zeros_like(attn)
    out = np.zeros(dout.shape[:3] + dout.shape[4:], value.dtype)
    for level, height, width, corners in levels(value, loc, shapes, starts):
        move_x, move_y = direction[:, :, :, level, :, 0] * width, direction[:, :, :, level, :, 1] * height
        top = attn[:, :, :, level, :, None] * dout
        tangents = [sy * wx * move_y + sx * wy * move_x for _, _, (sy, sx, wx, wy, _), _ in corners]
        moved = sum(t[..., None] * values for t, (values, _, _, _) in zip(tangents, corners))
        out += np.einsum("nqmp,nqmpd->nqmd", attn[:, :, :, level], moved)
        dattn[:, :, :, level] = (dout * moved).sum(-1)
        reads = [(top * values).sum(-1) for values, _, _, _ in corners]   # dOut . the corner's values, weighted
        twisted = sum(sy * sx * valid * read for (_, _, (sy, sx, _, _, valid), _), read in zip(corners, reads))
        dloc[:, :, :, level, :, 0] = width * twisted * move_y
        dloc[:, :, :, level, :, 1] = height * twisted * move_x
        for t, (_, _, _, index) in zip(tangents, corners):
            np.add.at(dvalue, index, t[..., None] * top)
    return k.grads({value_slot + "@GRAD": lambda: dvalue, loc_slot + "@GRAD": lambda: dloc,
                    attn_slot + "@GRAD": lambda: dattn, out_slot + "@GRAD@GRAD": lambda: out.reshape(
                        k.x(out_slot + "@GRAD").shape)})
