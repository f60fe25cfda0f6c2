"""Kernels of gradc.ops.deform_conv. The deformed im2col columns of every kernel point are gathered at once: each
sampling point's four pixels, as flat indices into Input seen as [N, dg, C/dg, H * W], weighted in float64 (the
points themselves computed in Offset's dtype, as Paddle does); then one matmul per group with the filter, as
conv2d's. The grads run it backward: the columns' grad W^T dOut goes into Input with one bincount, and meets the
gathered pixels for Mask (times the weights) and Offset (times the weights' derivatives)."""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ...limits import check_allocation
from ...ops import deform_conv as ops
from . import kernel


class Corner(NamedTuple):
    """One of the four pixels around every sampling point, each [N, dg, points]: its flat index in the image
    (0 where it lies outside), its bilinear weight, the weight's derivatives along H and W and its cross
    derivative along both (0 outside; along one axis the weight is linear)."""
    index: np.ndarray
    weight: np.ndarray
    slope_h: np.ndarray
    slope_w: np.ndarray
    twist: np.ndarray


class Deform(NamedTuple):
    """What the kernels share: Input as [N, dg, C/dg, H * W] float64, the corners, Mask as [N, dg, 1, points]
    (None for v1), the filter as [groups, O/g, C/g * kh * kw] and the output's shape."""
    image: np.ndarray
    corners: list
    mask: np.ndarray | None
    weights: np.ndarray
    out_shape: list


def _positions(k, offset, k_sizes):
    """(h, w) of every sampling point, [N, dg, kh * kw, oh, ow] each: the kernel point's place in the input plus
    its offset, added in Offset's dtype."""
    n, (oh, ow), (kh, kw) = offset.shape[0], offset.shape[2:], k_sizes
    deltas = offset.reshape(n, k.attr("deformable_groups"), kh * kw, 2, oh, ow)
    dtype = offset.dtype.type if offset.dtype.kind == "f" else np.float64
    places = []
    for axis, (kernel_size, out_size) in enumerate(zip(k_sizes, (oh, ow))):
        starts = np.arange(out_size) * k.attr("strides")[axis] - k.attr("paddings")[axis]
        place = starts[None, :] + np.arange(kernel_size)[:, None] * k.attr("dilations")[axis]   # [k, out]
        # kernel point i * kw + j: row i of the H places, row j of the W places
        place = np.repeat(place, kw, axis=0)[:, :, None] if axis == 0 else np.tile(place, (kh, 1))[:, None, :]
        places.append((place.astype(dtype) + deltas[:, :, :, axis]).astype(np.float64))
    return places


def _corners(h, w, height: int, width: int) -> list[Corner]:
    """The four pixels around each point (h, w): a point at or beyond one pixel outside the image reads
    nothing, a pixel outside reads 0."""
    h, w = (a.reshape(*a.shape[:2], math.prod(a.shape[2:])) for a in (h, w))
    with np.errstate(invalid="ignore"):   # NaN offsets read nothing, as in Paddle
        reads = (h > -1) & (w > -1) & (h < height) & (w < width)
    h, w = np.where(reads, h, 0.0), np.where(reads, w, 0.0)
    h_low, w_low = np.floor(h), np.floor(w)
    frac_h, frac_w = h - h_low, w - w_low
    corners = []
    for below in (0, 1):
        for right in (0, 1):
            row, col = h_low + below, w_low + right
            inside = reads & (row >= 0) & (row < height) & (col >= 0) & (col < width)
            along_h = frac_h if below else 1 - frac_h
            along_w = frac_w if right else 1 - frac_w
            corners.append(Corner(np.where(inside, row * width + col, 0).astype(np.int64),
                                  np.where(inside, along_h * along_w, 0.0),
                                  np.where(inside, along_w if below else -along_w, 0.0),
                                  np.where(inside, along_h if right else -along_h, 0.0),
                                  np.where(inside, 1.0 if below == right else -1.0, 0.0)))
    return corners


def deform(k) -> Deform:
    x, offset, filt = k.x("Input"), k.x("Offset"), k.x("Filter")
    mask = k.x("Mask") if masked(k) else None
    out_shape = ops.deform_geometry(k.attr, x.shape, filt.shape, offset.shape, None if mask is None else mask.shape)
    n, c, height, width = x.shape
    dg, groups = k.attr("deformable_groups"), k.attr("groups")
    points = math.prod(filt.shape[2:]) * math.prod(out_shape[2:])
    check_allocation(4 * n * c * points, 8, f"the four pixels of each of the {points} sampling points per channel")
    h, w = _positions(k, offset, filt.shape[2:])
    image = x.reshape(n, dg, c // dg, height * width).astype(np.float64)
    if mask is not None:
        mask = mask.reshape(n, dg, 1, math.prod(mask.shape[1:]) // dg).astype(np.float64)
    weights = filt.reshape(groups, filt.shape[0] // groups, math.prod(filt.shape[1:])).astype(np.float64)
    return Deform(image, _corners(h, w, height, width), mask, weights, out_shape)


def masked(k) -> bool:
    """Whether the op (or the one it is a grad of) reads Mask: deformable_conv does, v1 does not."""
    return ops.DEFORM_OPS[k.op.type.split("_grad")[0]]


def pixels_at(d: Deform, corner: Corner) -> np.ndarray:
    """The corner's pixel of every channel at every point, [N, dg, C/dg, points]."""
    return np.take_along_axis(d.image, corner.index[:, :, None, :], axis=3)


def columns(d: Deform, pixels: list, weights: list | None = None) -> np.ndarray:
    """The deformed im2col columns [N, groups, C/g * kh * kw, oh * ow], with the corners' weights (or others
    [N, dg, points] in their place: their tangents)."""
    weights = weights or [corner.weight for corner in d.corners]
    sampled = sum(w[:, :, None, :] * p for w, p in zip(weights, pixels))
    if d.mask is not None:
        sampled = sampled * d.mask
    n, groups = d.image.shape[0], d.weights.shape[0]
    return sampled.reshape(n, groups, d.weights.shape[2], math.prod(d.out_shape[2:]))


@kernel("deformable_conv", "deformable_conv_v1")
def deformable_conv(k):
    d = deform(k)
    out = np.matmul(d.weights[None], columns(d, [pixels_at(d, c) for c in d.corners]))
    return {"Output": out.reshape(d.out_shape).astype(k.x("Input").dtype)}


def output_grad(k, d: Deform) -> tuple[np.ndarray, np.ndarray]:
    """Output@GRAD as [N, groups, O/g, oh * ow] and the columns' grad W^T dOut as [N, dg, C/dg, points]."""
    dout = k.x("Output@GRAD")
    if list(dout.shape) != d.out_shape:
        raise ValueError(f"Output@GRAD has shape {list(dout.shape)}, but the output is {d.out_shape}")
    n, groups = dout.shape[0], d.weights.shape[0]
    dout = dout.reshape(n, groups, d.weights.shape[1], math.prod(d.out_shape[2:])).astype(np.float64)
    dcols = np.matmul(d.weights.transpose(0, 2, 1)[None], dout)
    return dout, dcols.reshape(*d.image.shape[:3], d.corners[0].index.shape[2])


def spread(k, d: Deform, dcols, weights: list) -> np.ndarray:
    """The columns' grad into Input through the corners, each weighted by ``weights`` [N, dg, points]."""
    masked = dcols if d.mask is None else dcols * d.mask
    channel_base = np.arange(np.prod(d.image.shape[:3])).reshape(d.image.shape[:3] + (1,)) * d.image.shape[3]
    index = np.concatenate([(channel_base + c.index[:, :, None, :]).ravel() for c in d.corners])
    values = np.concatenate([(masked * w[:, :, None, :]).ravel() for w in weights])
    grad = np.bincount(index, values, minlength=d.image.size)
    return grad.reshape(k.x("Input").shape).astype(k.x("Input").dtype)


def as_offsets(k, d: Deform, along_h, along_w) -> np.ndarray:
    """Per-point values along H and W [N, dg, points] laid out as Offset: (dy, dx) interleaved per kernel point."""
    offset = k.x("Offset")
    n, dg = offset.shape[0], k.attr("deformable_groups")
    points = offset.shape[1] // (2 * dg)
    grad = np.stack([a.reshape(n, dg, points, math.prod(d.out_shape[2:])) for a in (along_h, along_w)], axis=3)
    return grad.reshape(offset.shape).astype(offset.dtype)


@kernel("deformable_conv_grad", "deformable_conv_v1_grad")
def deformable_conv_grad(k):
    d = deform(k)
    dout, dcols = output_grad(k, d)
    mask = 1.0 if d.mask is None else d.mask[:, :, 0]

    @functools.cache
    def pixels() -> list:
        return [pixels_at(d, c) for c in d.corners]

    @functools.cache
    def reach() -> list:
        """Per corner: the columns' grad times its pixels, summed over the channels, [N, dg, points]."""
        return [np.einsum("ngcp,ngcp->ngp", dcols, p) for p in pixels()]

    def offset_grad():
        return as_offsets(k, d, mask * sum(c.slope_h * r for c, r in zip(d.corners, reach())),
                          mask * sum(c.slope_w * r for c, r in zip(d.corners, reach())))

    def filter_grad():
        cols = columns(d, pixels())
        return np.einsum("ngol,ngcl->goc", dout, cols).reshape(k.x("Filter").shape).astype(k.x("Filter").dtype)

    def mask_grad():
        grad = sum(c.weight * r for c, r in zip(d.corners, reach()))
        return grad.reshape(k.x("Mask").shape).astype(k.x("Mask").dtype)

    makers = {"Input@GRAD": lambda: spread(k, d, dcols, [c.weight for c in d.corners]), "Offset@GRAD": offset_grad,
              "Filter@GRAD": filter_grad}
    if d.mask is not None:
        makers["Mask@GRAD"] = mask_grad
    return k.grads(makers)
