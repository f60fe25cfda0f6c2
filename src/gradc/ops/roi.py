"""RoI pooling (paddle.vision.ops): roi_align (RoIAlign), roi_pool (RoIPool) and psroi_pool (PSRoIPool). Each
pools X [N, C, H, W] over the boxes ROIs [R, 4] (x1, y1, x2, y2 in input pixels, times spatial_scale) into
Out [R, C', pooled_height, pooled_width]. RoisNum [N] says how many boxes of ROIs, in order, belong to each image.

Paddle without RoisNum reads the images' boxes from the LoD of ROIs, which gradc does not have: gradc then takes
every box to be on image 0 and needs X to hold one image.

roi_align averages a grid of bilinear samples in each bin (sampling_ratio per side, or ceil(bin size) where it
is <= 0); a sample more than one pixel outside X counts as 0. aligned shifts the boxes by half a pixel and lets
them be smaller than a pixel. roi_pool takes the maximum of the bin's pixels (box corners rounded half away from
zero, floor/ceil bin edges), the first one in row-major order at a tie; Argmax holds its position in the plane.
An empty bin gives 0 and Argmax -1; so does a bin of only NaN and -inf, but with Out -max (Paddle's kernel
starts from -max and takes strictly greater values). psroi_pool averages the bin's pixels of its own channel:
bin (i, j) of output channel c reads X's channel (c * pooled_height + i) * pooled_width + j.

Where gradc and Paddle 3.3.1 part: Paddle's roi_align_grad widens every box to at least one pixel, aligned or
not, so for an aligned box smaller than a pixel its gradient is not that of its forward (central differences
disagree); gradc's is. Its grad also places the samples by another float formula than its forward, so a float32
sample exactly on the image's edge may count in one and not in the other; gradc's grad reads the samples its
forward (Paddle's forward) reads. An aligned box of no size has no samples: gradc gives 0, as Paddle's GPU
kernel does (its CPU kernel divides by the zero sample count: NaN). Paddle's shape inference asks psroi_pool
for output_channels > 1; gradc also pools one output channel.
"""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..ir.types import INTEGER_DTYPES
from ..registry import defop, grad_op
from .infer import check_float, one_dtype

POOLED = {"pooled_height": 1, "pooled_width": 1, "spatial_scale": 1.0}
BOX_SLOTS = ("ROIs", "RoisNum")


def _rois_infer(ctx) -> list[int]:
    """The checks every RoI op shares; Out's shape [R, C, pooled_height, pooled_width]."""
    x, rois = ctx.shape("X"), ctx.shape("ROIs")
    check_float(ctx, "X")
    one_dtype(ctx, "X", "ROIs")
    if len(x) != 4:
        ctx.fail(f"X must be 4-D [N, C, H, W], got shape {x}")
    if len(rois) != 2 or rois[1] not in (4, -1):
        ctx.fail(f"ROIs must be [R, 4] boxes (x1, y1, x2, y2), got shape {rois}")
    if ctx.has("RoisNum"):
        counts, dtype = ctx.shape("RoisNum"), ctx.dtype("RoisNum")
        if len(counts) != 1 or (min(counts[0], x[0]) >= 0 and counts[0] != x[0]):
            ctx.fail(f"RoisNum must be [N] = [{x[0]}] box counts, one per image of X, got shape {counts}")
        if dtype is not None and dtype not in INTEGER_DTYPES:
            ctx.fail(f"RoisNum must hold integers, got {dtype_name(dtype)}")
    elif x[0] > 1 and not ctx.lod_level("ROIs"):
        ctx.fail(f"without RoisNum or a LoD on ROIs (lod_level 1: its sequences are the images' boxes) X must hold "
                 f"one image, got {x[0]}")
    for name in ("pooled_height", "pooled_width"):
        if ctx.attr(name) < 1:
            ctx.fail(f"{name} must be >= 1, got {ctx.attr(name)}")
    if not ctx.attr("spatial_scale") > 0:
        ctx.fail(f"spatial_scale must be > 0, got {ctx.attr('spatial_scale')}")
    return [rois[0], x[1], ctx.attr("pooled_height"), ctx.attr("pooled_width")]


def _roi_align_infer(ctx):
    return {"Out": (_rois_infer(ctx), ctx.dtype("X"))}


def _roi_pool_infer(ctx):
    shape = _rois_infer(ctx)
    return {"Out": (shape, ctx.dtype("X")), "Argmax": (shape, VarType.INT64)}


def psroi_channels(channels: int, attrs) -> int:
    """psroi_pool's output channels; ValueError unless X's ``channels`` are one per output channel and bin."""
    out, bins = attrs("output_channels"), attrs("pooled_height") * attrs("pooled_width")
    if out < 1:
        raise ValueError(f"output_channels must be >= 1, got {out}")
    if channels >= 0 and channels != out * bins:
        raise ValueError(f"X's {channels} channels must be output_channels x pooled_height x pooled_width = "
                         f"{out} x {attrs('pooled_height')} x {attrs('pooled_width')}")
    return out


def _psroi_pool_infer(ctx):
    shape = _rois_infer(ctx)
    try:
        shape[1] = psroi_channels(shape[1], ctx.attr)
    except ValueError as err:
        ctx.fail(str(err))
    return {"Out": (shape, ctx.dtype("X"))}


defop("roi_align", ["X", "ROIs", "RoisNum?"], attrs={**POOLED, "sampling_ratio": -1, "aligned": False},
      infer=_roi_align_infer, no_grad_inputs=BOX_SLOTS, grad=grad_op("X", *BOX_SLOTS))
defop("roi_pool", ["X", "ROIs", "RoisNum?"], ["Out", "Argmax"], attrs=POOLED, infer=_roi_pool_infer,
      no_grad_inputs=BOX_SLOTS, no_grad_outputs=["Argmax"], grad=grad_op("X", *BOX_SLOTS, "Argmax"))
defop("psroi_pool", ["X", "ROIs", "RoisNum?"], attrs={"output_channels": 1, **POOLED}, infer=_psroi_pool_infer,
      no_grad_inputs=BOX_SLOTS, grad=grad_op("X", *BOX_SLOTS))
