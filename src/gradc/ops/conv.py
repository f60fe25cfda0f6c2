"""Convolution and pooling: conv2d, depthwise_conv2d, conv2d_transpose, pool2d.

The geometry helpers (padding algorithm, output sizes) are pure Python and shared with the kernels,
so shape inference and execution cannot disagree.
"""

from __future__ import annotations

from ..registry import defop, grad_op

CONV_ATTRS = {"strides": [1, 1], "paddings": [0, 0], "padding_algorithm": "EXPLICIT", "dilations": [1, 1],
              "groups": 1, "data_format": "NCHW"}
CONV_TRANSPOSE_ATTRS = {**CONV_ATTRS, "output_size": [], "output_padding": []}
POOL_ATTRS = {"pooling_type": "max", "ksize": [1, 1], "global_pooling": False, "strides": [1, 1],
              "paddings": [0, 0], "exclusive": True, "adaptive": False, "ceil_mode": False,
              "data_format": "NCHW", "padding_algorithm": "EXPLICIT"}


def channel_last(data_format: str) -> bool:
    return data_format in ("NHWC", "NDHWC")  # AnyLayout means NCHW


def resolve_padding(in_hw, k_hw, strides, paddings, dilations, algorithm):
    """Paddle's UpdatePaddingAndDilation: pads [top, bottom, left, right] and the dilations in effect."""
    if algorithm == "VALID":
        return [0, 0, 0, 0], list(dilations)
    if algorithm == "SAME":  # output ceil(in / stride); the odd pad goes to bottom/right; no dilation
        pads = []
        for size, k, s in zip(in_hw, k_hw, strides):
            total = max((-(-size // s) - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
        return pads, [1, 1]
    pads = [p for p in paddings for _ in range(2)] if len(paddings) == 2 else list(paddings)
    return pads, list(dilations)


def conv_out_hw(in_hw, k_hw, strides, pads, dilations):
    """Output size of a convolution (-1 where the input size is unknown)."""
    out = []
    for i, (size, k, s, d) in enumerate(zip(in_hw, k_hw, strides, dilations)):
        padded, span = size + pads[2 * i] + pads[2 * i + 1], d * (k - 1) + 1
        if size >= 0 and padded < span:
            raise ValueError(f"the dilated kernel ({span}) is larger than the padded input ({padded}) along {'HW'[i]}")
        out.append(-1 if size < 0 else (padded - span) // s + 1)
    return out


def conv_transpose_out_hw(in_hw, k_hw, attrs):
    """(in - 1) * stride - pads + dilated kernel; output_size (or output_padding) may add to it."""
    pads, dils = resolve_padding(in_hw, k_hw, attrs["strides"], attrs["paddings"], attrs["dilations"],
                                 attrs["padding_algorithm"])
    out = []
    for i, (size, k, s) in enumerate(zip(in_hw, k_hw, attrs["strides"])):
        if size < 0:
            out.append(attrs["output_size"][i] if attrs["output_size"] else -1)
            continue
        base = (size - 1) * s - pads[2 * i] - pads[2 * i + 1] + dils[i] * (k - 1) + 1
        extra = attrs["output_padding"][i] if attrs["output_padding"] else 0
        size_out = attrs["output_size"][i] if attrs["output_size"] else base + extra
        if size_out <= 0:
            raise ValueError(f"the output {'HW'[i]} would be {size_out}: the paddings exceed the output")
        if size_out < base:
            raise ValueError(f"output_size {size_out} along {'HW'[i]} is below the {base} that the input, "
                             f"filter, strides and paddings give")
        out.append(size_out)
    return out


def pool_geometry(in_hw, attrs):
    """(ksize, pads [top, bottom, left, right], output hw): global and adaptive pooling ignore paddings."""
    ksize = list(attrs["ksize"])
    pads, _ = resolve_padding(in_hw, ksize, attrs["strides"], attrs["paddings"], [1, 1],
                              attrs["padding_algorithm"])
    if attrs["global_pooling"] or attrs["adaptive"]:
        pads = [0, 0, 0, 0]
    if attrs["global_pooling"]:
        ksize = list(in_hw)
    if attrs["adaptive"]:
        return ksize, pads, list(ksize)
    ceil = attrs["ceil_mode"]
    out = [-1 if size < 0 else (size - k + pads[2 * i] + pads[2 * i + 1] + (s - 1 if ceil else 0)) // s + 1
           for i, (size, k, s) in enumerate(zip(in_hw, ksize, attrs["strides"]))]
    if any(size >= 0 and o <= 0 for size, o in zip(in_hw, out)):
        raise ValueError(f"a {ksize} window does not fit the padded input {list(in_hw)} (pads {pads})")
    return ksize, pads, out


def _attrs(ctx, names):
    return {name: ctx.attr(name) for name in names}


def _geometry(ctx, fn, *args):
    """A geometry helper's result; its ValueError becomes the op's inference error."""
    try:
        return fn(*args)
    except ValueError as err:
        ctx.fail(str(err))


def _split_layout(ctx, shape):
    """(N, C, [H, W]) of a 4-D activation in the op's data_format."""
    if len(shape) != 4:
        ctx.fail(f"expects a 4-D input, got shape {shape}")
    if channel_last(ctx.attr("data_format")):
        return shape[0], shape[3], shape[1:3]
    return shape[0], shape[1], shape[2:]


def _join_layout(ctx, n, c, hw):
    return [n, *hw, c] if channel_last(ctx.attr("data_format")) else [n, c, *hw]


def _conv_infer(ctx):
    n, c, hw = _split_layout(ctx, ctx.shape("Input"))
    o, cg, kh, kw = ctx.shape("Filter")
    groups = ctx.attr("groups")
    if c >= 0 and cg * groups != c:
        ctx.fail(f"Input has {c} channels but Filter expects {cg} per group x {groups} groups")
    if o % groups:
        ctx.fail(f"Filter's {o} output channels do not split into {groups} groups")
    pads, dils = resolve_padding(hw, (kh, kw), ctx.attr("strides"), ctx.attr("paddings"), ctx.attr("dilations"),
                                 ctx.attr("padding_algorithm"))
    out_hw = _geometry(ctx, conv_out_hw, hw, (kh, kw), ctx.attr("strides"), pads, dils)
    return {"Output": (_join_layout(ctx, n, o, out_hw), ctx.dtype("Input"))}


def _conv_transpose_infer(ctx):
    n, c, hw = _split_layout(ctx, ctx.shape("Input"))
    cin, cog, kh, kw = ctx.shape("Filter")
    if c >= 0 and c != cin:
        ctx.fail(f"Input has {c} channels but Filter [C_in, C_out/groups, kh, kw] has C_in {cin}")
    out_hw = _geometry(ctx, conv_transpose_out_hw, hw, (kh, kw), _attrs(ctx, CONV_TRANSPOSE_ATTRS))
    return {"Output": (_join_layout(ctx, n, cog * ctx.attr("groups"), out_hw), ctx.dtype("Input"))}


def _pool_infer(ctx):
    n, c, hw = _split_layout(ctx, ctx.shape("X"))
    _, _, out_hw = _geometry(ctx, pool_geometry, hw, _attrs(ctx, POOL_ATTRS))
    return {"Out": (_join_layout(ctx, n, c, out_hw), ctx.dtype("X"))}


for _name in ("conv2d", "depthwise_conv2d"):
    defop(_name, ["Input", "Filter"], ["Output"], attrs=CONV_ATTRS, infer=_conv_infer,
          grad=grad_op("Input", "Filter"))
defop("conv2d_transpose", ["Input", "Filter"], ["Output"], attrs=CONV_TRANSPOSE_ATTRS,
      infer=_conv_transpose_infer, grad=grad_op("Input", "Filter"))
defop("pool2d", ["X"], attrs=POOL_ATTRS, infer=_pool_infer, grad=grad_op("X", "Out"))
