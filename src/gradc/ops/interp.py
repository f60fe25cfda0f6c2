"""Interpolation (resizing) ops: linear_interp_v2, bilinear_interp_v2, bicubic_interp_v2, trilinear_interp_v2,
nearest_interp_v2 (nn.Upsample, F.interpolate).

The ``interp_method`` attribute picks the method, as in Paddle's kernel: linear needs a 3-D input, bilinear and
bicubic 4-D, trilinear 5-D, nearest 4-D or 5-D. The output size comes from, highest priority first: the
SizeTensor list (one int per spatial dim), the OutSize tensor, a scale (the Scale tensor, else the ``scale``
attribute: out = int(in * scale)), else the out_d/out_h/out_w attributes. A scale also sets the sampling
ratio (1 / scale) unless align_corners. The rules are pure Python, shared with the kernels.
"""

from __future__ import annotations

from typing import NamedTuple

from ..ir import AttrType, as_float32
from ..registry import defop, grad_op, typed

METHOD_RANKS = {"linear": (3,), "bilinear": (4,), "bicubic": (4,), "trilinear": (5,), "nearest": (4, 5)}
OUT_ATTRS = ("out_d", "out_h", "out_w")
SIZE_SLOTS = ("OutSize", "SizeTensor", "Scale")
INTERP_OPS = ("linear_interp_v2", "bilinear_interp_v2", "bicubic_interp_v2", "trilinear_interp_v2",
              "nearest_interp_v2")
INTERP_ATTRS = {"data_layout": "NCHW", "out_d": 0, "out_h": 0, "out_w": 0, "scale": typed([], AttrType.FLOATS),
                "interp_method": "bilinear", "align_corners": True, "align_mode": 1}


def float32(value: float) -> float:
    """``value`` rounded to float32, as Paddle's kernels hold scales and ratios."""
    return as_float32(value)


class Plan(NamedTuple):
    """What a resize does per spatial dim: output sizes and the scale each was asked with (-1: none)."""

    sizes: list[int]
    scales: list[float]


def check_attrs(ctx_attr, rank: int) -> None:
    """Attributes every resize needs right, whatever gives its size (ValueError naming the attribute)."""
    method = ctx_attr("interp_method")
    if method not in METHOD_RANKS:
        raise ValueError(f"interp_method {method!r} is not one of {sorted(METHOD_RANKS)}")
    if rank not in METHOD_RANKS[method]:
        raise ValueError(f"interp_method {method!r} needs a {' or '.join(map(str, METHOD_RANKS[method]))}-D "
                         f"input, got rank {rank}")
    if ctx_attr("data_layout") not in ("NCHW", "NHWC"):
        raise ValueError(f"data_layout {ctx_attr('data_layout')!r} is not NCHW or NHWC")
    if ctx_attr("align_mode") not in (0, 1):
        raise ValueError(f"align_mode must be 0 or 1, got {ctx_attr('align_mode')}")


def _scales(ctx_attr, dims: int, scale_tensor) -> list[float]:
    """The Scale tensor (one value for every dim, or one per dim), else the scale attribute, else none."""
    if scale_tensor is not None:
        values = [float(v) for v in scale_tensor]
        scales = values[:dims] if len(values) >= dims else values[:1] * dims
        source = "the Scale input"
    else:
        # as given: a .pb's float attribute is a float32 value, a PIR one (a_f64) the double Paddle 3.3.1 uses
        scales = [float(v) for v in ctx_attr("scale")]
        if not scales:
            return [-1.0] * dims
        if len(scales) != dims:
            raise ValueError(f"attribute scale {scales} needs one value per spatial dim ({dims})")
        source = "attribute scale"
    if any(s <= 0 for s in scales):
        raise ValueError(f"{source} {scales} must be > 0")
    return scales


def plan(ctx_attr, sizes, size_tensor=None, out_size=None, scale_tensor=None) -> Plan:
    """The resize of spatial ``sizes`` (-1 unknown): ``size_tensor``/``out_size``/``scale_tensor`` are the
    values of the SizeTensor/OutSize/Scale inputs (None: absent)."""
    dims = len(sizes)
    scales = _scales(ctx_attr, dims, scale_tensor)
    out = [ctx_attr(name) for name in OUT_ATTRS[-dims:]]
    if scales[0] > 0:
        # in double, as Paddle's kernels: 100 * float32(0.29) is 28.9999992, 28 rows (float32 would round it to 29)
        out = [-1 if size < 0 else int(size * s) for size, s in zip(sizes, scales)]
    for source, values in (("OutSize", out_size), ("SizeTensor", size_tensor)):
        if values is not None:
            if len(values) != dims:
                raise ValueError(f"{source} gives {len(values)} sizes for {dims} spatial dims")
            out = [int(v) for v in values]
    if any(o <= 0 and not (o == -1 and size < 0) for o, size in zip(out, sizes)):
        raise ValueError(f"the output size {out} must be > 0 in every spatial dim (out_d/out_h/out_w, OutSize, "
                         f"SizeTensor or scale)")
    return Plan(out, scales)


def split_layout(shape, layout: str):
    """(N, C, spatial sizes) of a channels-first or channels-last shape."""
    return (shape[0], shape[-1], list(shape[1:-1])) if layout == "NHWC" else (shape[0], shape[1], list(shape[2:]))


def resize_infer(planner, check_scale=None):
    """A resize's inference: Out's spatial sizes from ``planner(attr, sizes)``, or unknown where a size slot is fed
    (known at run time only; ``check_scale(attr, rank)`` then still checks a scale attribute no Scale input
    overrides)."""
    def infer(ctx):
        x = ctx.shape("X")
        try:
            check_attrs(ctx.attr, len(x))
            n, c, sizes = split_layout(x, ctx.attr("data_layout"))
            if any(ctx.has(slot) for slot in SIZE_SLOTS):
                out = [-1] * len(sizes)
                if check_scale is not None and not ctx.has("Scale"):
                    check_scale(ctx.attr, len(sizes))
            else:
                out = planner(ctx.attr, sizes).sizes
        except ValueError as err:
            ctx.fail(str(err))
        shape = [n, *out, c] if ctx.attr("data_layout") == "NHWC" else [n, c, *out]
        return {"Out": (shape, ctx.dtype("X"))}
    return infer


for _name in INTERP_OPS:
    defop(_name, ["X", "OutSize?", "SizeTensor[]?", "Scale?"], attrs=INTERP_ATTRS,
          infer=resize_infer(plan, lambda attr, rank: _scales(attr, rank, None)),
          no_grad_inputs=SIZE_SLOTS, grad=grad_op("X", *SIZE_SLOTS))
