"""Sampling ops: affine_grid (F.affine_grid), grid_sampler (F.grid_sample) and temporal_shift (F.temporal_shift).

affine_grid maps the pixel centres of an [N, C, H, W] (or [N, C, D, H, W]) output through Theta [N, 2, 3]
([N, 3, 4]): Output[n, h, w] = Theta[n] @ (x_w, y_h, 1), with x, y (and z) evenly spaced over [-1, 1] (with
align_corners: the corner pixels' centres at -1 and 1; without: their outer edges). The OutputShape tensor, where
given, replaces the output_shape attribute; N always comes from Theta, as in Paddle (whose legacy programs then
declare Output [-1, -1, -1, -1, 3], a 3-D grid's rank, whatever Theta: gradc carries the shape Theta gives). A single
pixel along a dim sits at 0 (Paddle 3.3.1 gives NaN there with align_corners: it divides by size - 1).

grid_sampler reads X [N, C, H, W] at Grid [N, H_out, W_out, 2] (x then y, in [-1, 1]), 5-D with a third
coordinate z; mode bilinear or nearest (round half to even), padding_mode zeros (outside reads 0), border (clamp)
or reflection (mirror at the borders). Grid@GRAD of nearest is 0 (piecewise constant), as in Paddle. At a kink
Grid@GRAD is Paddle's one-sided derivative, but where border or reflection padding puts a point exactly on the
last pixel: Paddle 3.3.1 weighs in the cell beyond X there (read as 0), a Grid@GRAD that is neither one-sided
derivative (an identity affine_grid with align_corners puts its last row and column there); gradc takes the
derivative from the cell below.

temporal_shift treats the batch as [N / seg_num, seg_num] clips: the first int(C * shift_ratio) channels take the
previous segment's values, the next ones up to int(2 * C * shift_ratio) the following segment's; a clip's ends read 0.
Paddle gives seg_num no default (programs always set it): gradc's 1 only fills the slot.
"""

from __future__ import annotations

from ..registry import defop, grad_op
from .interp import float32

MODES = ("bilinear", "nearest")
PADDING_MODES = ("zeros", "border", "reflection")
# spatial dims -> Theta's [rows, cols]
THETA_SHAPES = {2: [2, 3], 3: [3, 4]}


def affine_sizes(theta_shape, output_shape) -> list[int]:
    """The spatial sizes affine_grid gives for ``output_shape`` ([N, C, H, W] or [N, C, D, H, W]) and Theta's
    shape (ValueError naming the disagreement)."""
    dims = len(output_shape) - 2
    if dims not in THETA_SHAPES:
        raise ValueError(f"output shape {list(output_shape)} must have 4 or 5 values [N, C, (D,) H, W]")
    if theta_shape is not None and list(theta_shape[1:]) != THETA_SHAPES[dims]:
        raise ValueError(f"a {dims}-D grid needs Theta [N, {', '.join(map(str, THETA_SHAPES[dims]))}], "
                         f"got shape {list(theta_shape)}")
    sizes = [int(size) for size in output_shape[2:]]
    if min(sizes) < 1:
        raise ValueError(f"output shape {list(output_shape)} has a spatial size < 1")
    return sizes


def _declared_shape(ctx, slot: str) -> list[int]:
    """The shape of ``slot``, which the checks below read dim by dim."""
    shape = ctx.shape(slot)
    if shape is None:
        ctx.fail(f"the shape of {slot} is unknown")
    return shape


def _affine_grid_infer(ctx):
    theta = _declared_shape(ctx, "Theta")
    if len(theta) != 3 or theta[1:] not in THETA_SHAPES.values():
        ctx.fail(f"Theta must be [N, 2, 3] or [N, 3, 4], got shape {theta}")
    dims = theta[1]
    if ctx.has("OutputShape"):   # sizes known at run time only
        sizes = [-1] * dims
    else:
        try:
            sizes = affine_sizes(theta, ctx.attr("output_shape"))
        except ValueError as err:
            ctx.fail(f"attribute {err}")
    return {"Output": ([theta[0], *sizes, dims], ctx.dtype("Theta"))}


def check_sampler_attrs(attr) -> None:
    """grid_sampler's mode and padding_mode (ValueError naming the attribute)."""
    if attr("mode") not in MODES:
        raise ValueError(f"mode {attr('mode')!r} is not one of {list(MODES)}")
    if attr("padding_mode") not in PADDING_MODES:
        raise ValueError(f"padding_mode {attr('padding_mode')!r} is not one of {list(PADDING_MODES)}")


def check_sampler_shapes(x, grid) -> None:
    """X [N, C, (D,) H, W] and Grid [N, (D_out,) H_out, W_out, spatial dims] (-1: unknown)."""
    if len(x) not in (4, 5):
        raise ValueError(f"X must be 4-D [N, C, H, W] or 5-D [N, C, D, H, W], got shape {list(x)}")
    if len(grid) != len(x) or grid[-1] not in (-1, len(x) - 2):
        raise ValueError(f"Grid must be [N, {'D_out, ' * (len(x) == 5)}H_out, W_out, {len(x) - 2}] for a "
                         f"{len(x)}-D X, got shape {list(grid)}")
    if min(x[0], grid[0]) >= 0 and x[0] != grid[0]:
        raise ValueError(f"X has {x[0]} samples but Grid {grid[0]}")


def _grid_sampler_infer(ctx):
    x, grid = _declared_shape(ctx, "X"), _declared_shape(ctx, "Grid")
    try:
        check_sampler_attrs(ctx.attr)
        check_sampler_shapes(x, grid)
    except ValueError as err:
        ctx.fail(str(err))
    return {"Output": ([x[0] if x[0] >= 0 else grid[0], x[1], *grid[1:-1]], ctx.dtype("X"))}


def shift_channels(channels: int, shift_ratio: float) -> tuple[int, int]:
    """(end of the channels that read the previous segment, end of those that read the next), truncated from
    float32 products as Paddle computes them."""
    ratio = float32(shift_ratio)
    return int(float32(channels * ratio)), int(float32(channels * 2 * ratio))


def check_shift(shape, seg_num: int, shift_ratio: float, data_format: str) -> None:
    """temporal_shift's X and attributes (ValueError naming the problem)."""
    if len(shape) != 4:
        raise ValueError(f"X must be 4-D, got shape {list(shape)}")
    if data_format not in ("NCHW", "NHWC"):
        raise ValueError(f"data_format {data_format!r} is not NCHW or NHWC")
    if seg_num < 1:
        raise ValueError(f"seg_num must be >= 1, got {seg_num}")
    if not 0 < shift_ratio < 0.5:
        raise ValueError(f"shift_ratio must be in (0, 0.5), got {shift_ratio}")
    if shape[0] >= 0 and shape[0] % seg_num:
        raise ValueError(f"the batch of {shape[0]} does not divide into segments of seg_num {seg_num}")


def _temporal_shift_infer(ctx):
    shape = _declared_shape(ctx, "X")
    try:
        check_shift(shape, ctx.attr("seg_num"), ctx.attr("shift_ratio"), ctx.attr("data_format"))
    except ValueError as err:
        ctx.fail(str(err))
    return {"Out": (shape, ctx.dtype("X"))}


defop("affine_grid", ["Theta", "OutputShape?"], ["Output"], attrs={"output_shape": [], "align_corners": True},
      infer=_affine_grid_infer, no_grad_inputs=["OutputShape"], grad=grad_op("Theta", "OutputShape"),
      runtime_rank_outputs=["Output"])
GRID_SAMPLER = defop("grid_sampler", ["X", "Grid"], ["Output"],
                     attrs={"mode": "bilinear", "padding_mode": "zeros", "align_corners": True},
                     infer=_grid_sampler_infer, grad=grad_op("X", "Grid"))
_paddle_grid_sampler_grad = GRID_SAMPLER.grad


def _grid_sampler_grad(g):
    """Paddle's grad op, writing X@GRAD (into a temporary) even where X wants none: Paddle 3.3.1's kernel writes it
    unconditionally and crashes without it, as Paddle's own backward of a grid sample over a fed image does."""
    ops = _paddle_grid_sampler_grad(g)
    for op in ops:
        if not op.outputs.get("X@GRAD"):
            op.outputs["X@GRAD"] = [g.tmp(g.I("X")[0])]
    return ops


GRID_SAMPLER.grad = _grid_sampler_grad
defop("temporal_shift", ["X"], attrs={"seg_num": 1, "shift_ratio": 0.25, "data_format": "NCHW"},
      infer=_temporal_shift_infer, grad=grad_op())
