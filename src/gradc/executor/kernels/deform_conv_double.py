"""Kernels of gradc.ops.deform_conv_double: deformable_conv(_v1)_grad_grad, the grads of D_V <dOut, F> for the
directions V = Offset@GRAD@GRAD (one or more tangents of the offsets). Each corner's bilinear weight is linear along
H and along W, so its derivatives along V are those of gradc.executor.kernels.bilinear_tangents: exact away from
integer sampling positions, where the weights have kinks."""

from __future__ import annotations

import numpy as np

from . import kernel
from .bilinear_tangents import cell_tangents
from .deform_conv import as_offsets, columns, deform, output_grad, pixels_at, spread


def _moves(direction, n: int, dg: int) -> tuple:
    """A tangent of Offset as (along H, along W), [N, dg, points] each."""
    moves = direction.astype(np.float64).reshape(n, dg, -1, 2, direction.shape[2] * direction.shape[3])
    return tuple(moves[:, :, :, axis].reshape(n, dg, -1) for axis in (0, 1))


@kernel("deformable_conv_grad_grad", "deformable_conv_v1_grad_grad")
def deformable_conv_grad_grad(k):
    """With w' each corner's weight's derivative along V: the columns' tangent C' (w' in the weights' place),
    Output@GRAD@GRAD = W C', Filter@GRAD = dOut C'^T, Input@GRAD = the columns' grad spread with w',
    Mask@GRAD = sum of w' times the columns' grad . pixels, Offset@GRAD the same with w' differentiated along H (W),
    times Mask."""
    d = deform(k)
    dout, dcols = output_grad(k, d)
    mask = 1.0 if d.mask is None else d.mask[:, :, 0]
    n, dg = d.image.shape[:2]
    moves = [_moves(direction, n, dg) for direction in k.xs("Offset@GRAD@GRAD")]
    derived = [cell_tangents(c.weight, c.slope_h, c.slope_w, c.twist, moves) for c in d.corners]
    tangents = [t for t, _, _ in derived]
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
        return as_offsets(k, d, mask * sum(h * r for (_, h, _), r in zip(derived, reach)),
                          mask * sum(w * r for (_, _, w), r in zip(derived, reach)))

    def mask_grad():
        grad = sum(t * r for t, r in zip(tangents, reach))
        return grad.reshape(k.x("Mask").shape).astype(k.x("Mask").dtype)

    makers = {"Input@GRAD": lambda: spread(k, d, dcols, tangents), "Offset@GRAD": offset_grad,
              "Filter@GRAD": filter_grad, "Output@GRAD@GRAD": output_grad_grad}
    if d.mask is not None:
        makers["Mask@GRAD"] = mask_grad
    return k.grads(makers)
