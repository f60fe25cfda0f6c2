"""Kernels of gradc.ops.ms_deform_attn (the suites' multi-scale deformable attention), in the dtype of Value as the
suites' kernels compute: each level's sampling points, their four bilinear corners gathered per head, then
weighted by the attention weights. The grad kernel scatters back into Value's rows (np.add.at: points share rows)."""

from __future__ import annotations

import numpy as np

from ...ops.ms_deform_attn import slots_of
from . import kernel


def args(k):
    value_slot, shapes_slot, starts_slot, loc_slot, attn_slot, _ = slots_of(k.op.type)
    value, loc, attn = k.x(value_slot), k.x(loc_slot), k.x(attn_slot)
    shapes, starts = np.asarray(k.x(shapes_slot)), np.asarray(k.x(starts_slot))
    levels = loc.shape[3]
    if shapes.shape != (levels, 2) or starts.shape != (levels,):
        raise ValueError(f"{shapes_slot} {list(shapes.shape)} and {starts_slot} {list(starts.shape)} do not "
                         f"describe the {levels} levels of {loc_slot} {list(loc.shape)}")
    rows = value.shape[1]
    for (height, width), start in zip(shapes.tolist(), starts.tolist()):
        if height < 0 or width < 0 or start < 0 or start + height * width > rows:
            raise ValueError(f"a level of {height} x {width} from row {start} lies outside {value_slot}'s {rows} rows")
    return value, loc, attn, shapes.tolist(), starts.tolist()


def _corners(value, loc, level: int, height: int, width: int, start: int):
    """Per corner of each sampling point [N, Q, M, P] at this level: (its values [N, Q, M, P, D], its bilinear
    weight (zero where the corner or the point is outside), the signs of the weight's slopes in y and x, the
    other axis' weight and whether it is read (1 or 0), the rows of Value it reads)."""
    h = loc[:, :, :, level, :, 1] * height - 0.5
    w = loc[:, :, :, level, :, 0] * width - 0.5
    inside = (h > -1) & (w > -1) & (h < height) & (w < width)
    y0, x0 = np.floor(h), np.floor(w)
    fy, fx = h - y0, w - x0
    y0, x0 = y0.astype(np.int64), x0.astype(np.int64)
    batch = np.arange(value.shape[0])[:, None, None, None]
    head = np.arange(value.shape[2])[None, None, :, None]
    for dy in (0, 1):
        for dx in (0, 1):
            y, x = y0 + dy, x0 + dx
            valid = inside & (y >= 0) & (y < height) & (x >= 0) & (x < width)
            wy, wx = (fy if dy else 1 - fy), (fx if dx else 1 - fx)
            rows = start + np.clip(y, 0, max(height - 1, 0)) * width + np.clip(x, 0, max(width - 1, 0))
            index = (batch, np.where(valid, rows, 0), head)
            values = np.where(valid[..., None], value[index], 0)
            yield values, np.where(valid, wy * wx, 0), (2 * dy - 1, 2 * dx - 1, wx * valid, wy * valid, valid), index


def levels(value, loc, shapes, starts):
    for level, ((height, width), start) in enumerate(zip(shapes, starts)):
        yield level, height, width, list(_corners(value, loc, level, height, width, start))


@kernel("ms_deform_attn", "ms_deformable_attn")
def ms_deform_attn(k):
    value, loc, attn, shapes, starts = args(k)
    n, queries, heads, channels = value.shape[0], loc.shape[1], value.shape[2], value.shape[3]
    out = np.zeros((n, queries, heads, channels), value.dtype)
    for level, _, _, corners in levels(value, loc, shapes, starts):
        sample = sum(weight[..., None] * values for values, weight, _, _ in corners)
        out += np.einsum("nqmp,nqmpd->nqmd", attn[:, :, :, level], sample).astype(value.dtype)
    return {slots_of(k.op.type)[5]: out.reshape(n, queries, heads * channels)}


@kernel("ms_deform_attn_grad", "ms_deformable_attn_grad")
def ms_deform_attn_grad(k):
    value_slot, shapes_slot, starts_slot, loc_slot, attn_slot, out_slot = slots_of(k.op.type)
    value, loc, attn, shapes, starts = args(k)
    dout = k.x(out_slot + "@GRAD").reshape(*loc.shape[:3], value.shape[3])[:, :, :, None, :]
    dvalue, dloc, dattn = np.zeros_like(value), np.zeros_like(loc), np.zeros_like(attn)
    for level, height, width, corners in levels(value, loc, shapes, starts):
        top = attn[:, :, :, level, :, None] * dout
        sample = sum(weight[..., None] * values for values, weight, _, _ in corners)
        dattn[:, :, :, level] = (dout * sample).sum(-1)
        slope_y = sum(sy * wx[..., None] * values for values, _, (sy, _, wx, _, _), _ in corners)
        slope_x = sum(sx * wy[..., None] * values for values, _, (_, sx, _, wy, _), _ in corners)
        dloc[:, :, :, level, :, 0] = width * (slope_x * top).sum(-1)
        dloc[:, :, :, level, :, 1] = height * (slope_y * top).sum(-1)
        if k.wants(value_slot + "@GRAD"):
            for _, weight, _, index in corners:
                np.add.at(dvalue, index, weight[..., None] * top)
    # PaddleDetection's grad op declares the integer inputs' grads: zeros where a program asks for them
    zeros = {} if k.op.type == "ms_deform_attn_grad" else {
        slot + "@GRAD": lambda slot=slot: np.zeros_like(k.x(slot)) for slot in (shapes_slot, starts_slot)}
    return k.grads({value_slot + "@GRAD": lambda: dvalue, loc_slot + "@GRAD": lambda: dloc,
                    attn_slot + "@GRAD": lambda: dattn, **zeros})
