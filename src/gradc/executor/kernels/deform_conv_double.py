"""Kernels of gradc.ops.deform_conv_double: deformable_conv(_v1)_grad_grad, the second backward's terms along the
direction ddOffset of the offsets (the grad of Offset@GRAD). Each corner's bilinear weight is linear along H and
along W, so its tangent is slope_h v_h + slope_w v_w and its only second derivative the cross one (+-1 inside the
image): exact away from integer sampling positions, where the weights have kinks."""

from __future__ import annotations

import numpy as np

from . import kernel
from .deform_conv import as_offsets, columns, deform, output_grad, pixels_at, spread


@kernel("deformable_conv_grad_grad", "deformable_conv_v1_grad_grad")
def deformable_conv_grad_grad(k):
    """With v = ddOffset and w' each corner's weight's tangent along it: the columns' tangent C' (w' in the
    weights' place), Output@GRAD@GRAD = W C', Filter@GRAD = dOut C'^T, Input@GRAD = the columns' grad spread with w',
    Mask@GRAD = sum of w' times the columns' grad . pixels, and Offset@GRAD along H (W) the cross derivatives times
    v along W (H) times the same, times Mask."""
    d = deform(k)
    dout, dcols = output_grad(k, d)
    mask = 1.0 if d.mask is None else d.mask[:, :, 0]
    n, dg = d.image.shape[:2]
    direction = k.x("Offset@GRAD@GRAD").astype(np.float64)
    moves = direction.reshape(n, dg, -1, 2, direction.shape[2] * direction.shape[3])
    move_h, move_w = (moves[:, :, :, axis].reshape(n, dg, -1) for axis in (0, 1))
    tangents = [c.slope_h * move_h + c.slope_w * move_w for c in d.corners]
    pixels = [pixels_at(d, c) for c in d.corners]
    moved_columns = columns(d, pixels, tangents)
    reach = [np.einsum("ngcp,ngcp->ngp", dcols, p) for p in pixels]

    def output_grad_grad():
        out = np.matmul(d.weights[None], moved_columns)
        return out.reshape(d.out_shape).astype(k.x("Output@GRAD").dtype)

    def filter_grad():
        grad = np.einsum("ngol,ngcl->goc", dout, moved_columns)
        return grad.reshape(k.x("Filter").shape).astype(k.x("Filter").dtype)

    def offset_grad():
        twisted = sum(c.twist * r for c, r in zip(d.corners, reach))
        return as_offsets(k, d, mask * twisted * move_w, mask * twisted * move_h)

    def mask_grad():
        grad = sum(t * r for t, r in zip(tangents, reach))
        return grad.reshape(k.x("Mask").shape).astype(k.x("Mask").dtype)

    makers = {"Input@GRAD": lambda: spread(k, d, dcols, tangents), "Offset@GRAD": offset_grad,
              "Filter@GRAD": filter_grad, "Output@GRAD@GRAD": output_grad_grad}
    if d.mask is not None:
        makers["Mask@GRAD"] = mask_grad
    return k.grads(makers)
