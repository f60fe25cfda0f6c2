"""Convolution and pooling in 2 and 3 spatial dims: conv2d/3d, depthwise_conv2d, conv2d/3d_transpose,
depthwise_conv2d_transpose, pool2d/3d.

The geometry helpers (padding algorithm, output sizes) work for any number of spatial dims, are pure
Python and are shared with the kernels, so shape inference and execution cannot disagree. Sizes,
kernel sizes, strides and dilations are per spatial dim; pads are [before, after] per dim, in order
(Paddle's [top, bottom, left, right] in 2-D, [front, back, top, bottom, left, right] in 3-D).
"""

from __future__ import annotations

from ..registry import defop, grad_op

AXIS_NAMES = "DHW"


def axis_name(i: int, dims: int) -> str:
    return AXIS_NAMES[len(AXIS_NAMES) - dims + i]


def conv_attrs(dims: int) -> dict:
    return {"strides": [1] * dims, "paddings": [0] * dims, "padding_algorithm": "EXPLICIT",
            "dilations": [1] * dims, "groups": 1, "data_format": "NCHW" if dims == 2 else "NCDHW"}


def conv_transpose_attrs(dims: int) -> dict:
    return {**conv_attrs(dims), "output_size": [], "output_padding": [], "data_format": "NCHW"}   # Paddle's default


def pool_attrs(dims: int) -> dict:
    return {"pooling_type": "", "use_cudnn": False, "ksize": [1] * dims, "global_pooling": False, "strides": [1] * dims,
            "paddings": [0] * dims, "exclusive": True, "adaptive": False, "ceil_mode": False,
            "data_format": "NCHW" if dims == 2 else "NCDHW", "padding_algorithm": "EXPLICIT"}


CONV_ATTRS, CONV_TRANSPOSE_ATTRS, POOL_ATTRS = conv_attrs(2), conv_transpose_attrs(2), pool_attrs(2)


def attr_values(ctx, names) -> dict:
    """{name: value} of the op's attributes (an inference or kernel context)."""
    return {name: ctx.attr(name) for name in names}


def channel_last(data_format: str) -> bool:
    return data_format in ("NHWC", "NDHWC")  # AnyLayout means channels first


def resolve_padding(sizes, k_sizes, strides, paddings, dilations, algorithm):
    """Paddle's UpdatePaddingAndDilation: pads [before, after] per dim, and the dilations in effect."""
    if algorithm == "VALID":
        return [0] * 2 * len(sizes), list(dilations)
    if algorithm == "SAME":  # output ceil(in / stride); the odd pad goes after; no dilation
        pads = []
        for size, k, s in zip(sizes, k_sizes, strides):
            total = max((-(-size // s) - 1) * s + k - size, 0)
            pads += [total // 2, total - total // 2]
        return pads, [1] * len(sizes)
    pads = [p for p in paddings for _ in range(2)] if len(paddings) == len(sizes) else list(paddings)
    return pads, list(dilations)


def conv_out_sizes(sizes, k_sizes, strides, pads, dilations):
    """Output sizes of a convolution (-1 where the input size is unknown). Along an empty axis Paddle checks nothing
    but a negative size: its C division rounds toward zero, so a kernel one to ``stride`` wider than the padding
    gives size 0 (DiffSinger's convs over no frames), a narrower one zeros of the padding's width."""
    out = []
    for i, (size, k, s, d) in enumerate(zip(sizes, k_sizes, strides, dilations)):
        padded, span = size + pads[2 * i] + pads[2 * i + 1], d * (k - 1) + 1
        empty = size == 0 and int((padded - span) / s) + 1 >= 0
        if size >= 0 and padded < span and not empty:
            raise ValueError(f"the dilated kernel ({span}) is larger than the padded input ({padded}) "
                             f"along {axis_name(i, len(sizes))}")
        out.append(-1 if size < 0 else int((padded - span) / s) + 1 if empty else (padded - span) // s + 1)
    return out


def conv_transpose_out_sizes(sizes, k_sizes, attrs):
    """(in - 1) * stride - pads + dilated kernel; output_size (or output_padding) may add to it."""
    pads, dils = resolve_padding(sizes, k_sizes, attrs["strides"], attrs["paddings"], attrs["dilations"],
                                 attrs["padding_algorithm"])
    out = []
    for i, (size, k, s) in enumerate(zip(sizes, k_sizes, attrs["strides"])):
        name = axis_name(i, len(sizes))
        if size < 0:
            out.append(attrs["output_size"][i] if attrs["output_size"] else -1)
            continue
        base = (size - 1) * s - pads[2 * i] - pads[2 * i + 1] + dils[i] * (k - 1) + 1
        extra = attrs["output_padding"][i] if attrs["output_padding"] else 0
        size_out = attrs["output_size"][i] if attrs["output_size"] else base + extra
        if size_out <= 0:
            raise ValueError(f"the output {name} would be {size_out}: the paddings exceed the output")
        if size_out < base:
            raise ValueError(f"output_size {size_out} along {name} is below the {base} that the input, "
                             f"filter, strides and paddings give")
        out.append(size_out)
    return out


def pool_geometry(sizes, attrs):
    """(ksize, pads [before, after] per dim, output sizes): global and adaptive pooling ignore paddings."""
    dims = len(sizes)
    ksize = list(attrs["ksize"])
    pads, _ = resolve_padding(sizes, ksize, attrs["strides"], attrs["paddings"], [1] * dims,
                              attrs["padding_algorithm"])
    if attrs["global_pooling"] or attrs["adaptive"]:
        pads = [0] * 2 * dims
    if attrs["global_pooling"]:
        ksize = list(sizes)
    if attrs["adaptive"]:
        return ksize, pads, list(ksize)
    ceil = attrs["ceil_mode"]
    out = [-1 if size < 0 else (size - k + pads[2 * i] + pads[2 * i + 1] + (s - 1 if ceil else 0)) // s + 1
           for i, (size, k, s) in enumerate(zip(sizes, ksize, attrs["strides"]))]
    if any(size >= 0 and o <= 0 for size, o in zip(sizes, out)):
        raise ValueError(f"a {ksize} window does not fit the padded input {list(sizes)} (pads {pads})")
    return ksize, pads, out


def infer_geometry(ctx, fn, *args):
    """A geometry helper's result; its ValueError becomes the op's inference error."""
    try:
        return fn(*args)
    except ValueError as err:
        ctx.fail(str(err))


def _split_layout(ctx, shape, dims: int):
    """(N, C, spatial sizes) of an activation with ``dims`` spatial dims in the op's data_format."""
    if len(shape) != dims + 2:
        ctx.fail(f"expects a {dims + 2}-D input, got shape {shape}")
    if channel_last(ctx.attr("data_format")):
        return shape[0], shape[-1], shape[1:-1]
    return shape[0], shape[1], shape[2:]


def _join_layout(ctx, n, c, sizes):
    return [n, *sizes, c] if channel_last(ctx.attr("data_format")) else [n, c, *sizes]


def _input_and_filter(ctx, dims: int, layout: str):
    """(N, C, spatial sizes) of Input and the Filter's dims, which must be [*layout, *kernel]."""
    n, c, sizes = _split_layout(ctx, ctx.shape("Input"), dims)
    filt = ctx.shape("Filter")
    if len(filt) != dims + 2:
        ctx.fail(f"Filter must be {dims + 2}-D [{layout}, *kernel], got {filt}")
    return n, c, sizes, filt


def conv_infer(dims: int):
    def infer(ctx):
        n, c, sizes, filt = _input_and_filter(ctx, dims, "C_out, C_in/groups")
        o, cg, k_sizes = filt[0], filt[1], filt[2:]
        groups = ctx.attr("groups")
        if groups < 1:
            ctx.fail(f"groups must be >= 1, got {groups}")
        if c >= 0 and cg * groups != c:
            ctx.fail(f"Input has {c} channels but Filter expects {cg} per group x {groups} groups")
        if o % groups:
            ctx.fail(f"Filter's {o} output channels do not split into {groups} groups")
        pads, dils = resolve_padding(sizes, k_sizes, ctx.attr("strides"), ctx.attr("paddings"), ctx.attr("dilations"),
                                     ctx.attr("padding_algorithm"))
        out = infer_geometry(ctx, conv_out_sizes, sizes, k_sizes, ctx.attr("strides"), pads, dils)
        return {"Output": (_join_layout(ctx, n, o, out), ctx.dtype("Input"))}
    return infer


def _conv_transpose_infer(dims: int):
    def infer(ctx):
        n, c, sizes, filt = _input_and_filter(ctx, dims, "C_in, C_out/groups")
        if c >= 0 and c != filt[0]:
            ctx.fail(f"Input has {c} channels but Filter [C_in, C_out/groups, *kernel] has C_in {filt[0]}")
        attrs = attr_values(ctx, conv_transpose_attrs(dims))
        out = infer_geometry(ctx, conv_transpose_out_sizes, sizes, filt[2:], attrs)
        return {"Output": (_join_layout(ctx, n, filt[1] * ctx.attr("groups"), out), ctx.dtype("Input"))}
    return infer


def _pool_infer(dims: int):
    def infer(ctx):
        n, c, sizes = _split_layout(ctx, ctx.shape("X"), dims)
        if ctx.attr("pooling_type") not in ("max", "avg"):
            ctx.fail(f"pooling_type {ctx.attr('pooling_type')!r} is not 'max' or 'avg'")
        _, _, out = infer_geometry(ctx, pool_geometry, sizes, attr_values(ctx, pool_attrs(dims)))
        return {"Out": (_join_layout(ctx, n, c, out), ctx.dtype("X"))}
    return infer


# op type -> spatial dims; the kernels register from the same tables
CONV_OPS = {"conv2d": 2, "depthwise_conv2d": 2, "conv3d": 3}
CONV_TRANSPOSE_OPS = {"conv2d_transpose": 2, "depthwise_conv2d_transpose": 2, "conv3d_transpose": 3}
POOL_OPS = {"pool2d": 2, "pool3d": 3}

for _name, _dims in CONV_OPS.items():
    defop(_name, ["Input", "Filter"], ["Output"], attrs=conv_attrs(_dims), infer=conv_infer(_dims),
          grad=grad_op("Input", "Filter"))
for _name, _dims in CONV_TRANSPOSE_OPS.items():
    defop(_name, ["Input", "Filter"], ["Output"], attrs=conv_transpose_attrs(_dims),
          infer=_conv_transpose_infer(_dims), grad=grad_op("Input", "Filter"),
          tensor_attrs=["output_size"] if _dims == 2 else [])
for _name, _dims in POOL_OPS.items():
    defop(_name, ["X"], attrs=pool_attrs(_dims), infer=_pool_infer(_dims), grad=grad_op("X", "Out"),
          tensor_attrs=["ksize"] if _dims == 2 else [])
