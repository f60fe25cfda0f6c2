"""Kernels of gradc.ops.conv, computed channels first ([N, C, *spatial]; channels-last data is moved at
the edges), for any number of spatial dims.

Convolution is im2col + a matmul per sample and group, as Paddle's CPU kernel does it, where a sample has enough
output cells (else one matmul for the whole batch), a batch slice at a time when a whole batch's columns would be
large; the products land in the output's own layout, [N, O, *out]. A small depthwise layer's columns are runs of
its padded image on the padded width (im2col's rows of a few cells cost more to copy). The columns and col2im are in
gradc.executor.kernels.conv_columns. The convolution's two adjoints give every other kernel: the input grad scatters
W^T @ dOut back with col2im (a depthwise filter's products made a tap at a time, a pointwise one's W^T @ dOut
itself, a grouped one's or one of few outputs with unit strides a convolution of dOut), the filter grad is
dOut @ cols^T over the whole batch, and conv_transpose is the input grad of the conv whose filter it shares. Pooling
is in gradc.executor.kernels.pool_windows and pool_taps.
"""

from __future__ import annotations

import math

import numpy as np

from ...ops import conv as ops
from . import blas_bits, kernel
from .conv_columns import (
    Geometry,
    add_taps,
    col2im,
    columns,
    grouped,
    inner,
    padded_sizes,
    pointwise,
    sample_columns,
    sum_taps,
    ungrouped,
    wide_columns,
)


def _geometry(k, sizes, k_sizes) -> Geometry:
    pads, dils = ops.resolve_padding(sizes, k_sizes, k.attr("strides"), k.attr("paddings"), k.attr("dilations"),
                                     k.attr("padding_algorithm"))
    return Geometry(tuple(k.attr("strides")), tuple(pads), tuple(dils), k.attr("groups"))


def channels_first(a, last: bool, dims: int):
    if a.ndim != dims + 2:
        spatial = ops.AXIS_NAMES[-dims:]
        raise ValueError(f"expects {dims + 2}-D {f'N{spatial}C' if last else f'NC{spatial}'} tensors, "
                         f"got shape {list(a.shape)}")
    return np.moveaxis(a, -1, 1) if last else a


def channels_back(a, last: bool):
    return np.ascontiguousarray(np.moveaxis(a, 1, -1) if last else a)


COLS_BUDGET = 8 << 20   # bytes of im2col columns at a time: a batch whose columns exceed it goes in slices
COLS_UNIT = 512         # slices start at multiples of this many columns: OpenBLAS on Intel then computes each
                        # output column as in one product (on AMD's Zen a column's bits follow its place in the
                        # product and the thread split: within float32 rounding); tests/test_conv_slices.py


def _batch_step(n: int, per_sample_cols: int, rows: int, itemsize: int) -> int:
    """Samples per slice: columns within COLS_BUDGET, slices aligned to COLS_UNIT columns; n: no slicing."""
    unit = COLS_UNIT // math.gcd(COLS_UNIT, max(per_sample_cols, 1))
    step = COLS_BUDGET // max(rows * per_sample_cols * itemsize, 1) // unit * unit
    return n if step == 0 or step >= n else step


def _batch_slices(x, k_sizes, geo: Geometry) -> list[slice]:
    out = ops.conv_out_sizes(x.shape[2:], k_sizes, geo.strides, geo.pads, geo.dilations)
    step = _batch_step(x.shape[0], math.prod(out), x.shape[1] * math.prod(k_sizes), x.itemsize)
    return [slice(start, start + step) for start in range(0, x.shape[0], step)]


def _by_sample(outputs: int, columns: int) -> bool:
    """Whether to multiply each sample's columns on its own, the products landing in the output's layout, rather
    than the whole batch's: BLAS packs the filter matrix once a product, which costs about outputs / columns of a
    product, and the copies of the whole batch's layout cost about 1 / columns of it. So a sample's product pays
    where it has at least a quarter as many output cells as the filter matrix has columns (C/g * prod(kernel)):
    measured 0.55-0.9x the time of the whole batch's there, 1.04-1.17x below (AlexNet's and ResNet's late layers)."""
    return 4 * outputs >= columns


# a depthwise 2-D convolution with unit strides builds its columns on the padded width (wide_columns) where its
# output plane has at most WIDE_PLANE cells: 1.3-2.5x faster on MobileNet's and ShuffleNet's 3x3 layers up to
# 28x28, as fast on their 5x5 ones, 1.6x slower on [2, 144, 56, 56]
WIDE_PLANE = 1024


def _wide(x, w, geo: Geometry, out) -> bool:
    """Whether wide_columns makes the columns: a depthwise 2-D convolution, unit strides, a small output plane, and
    the batch's columns within COLS_BUDGET (they are made for the whole batch at once)."""
    if len(out) != 2 or math.prod(out) > WIDE_PLANE or not w.shape[0] == geo.groups == x.shape[1]:
        return False
    if any(s != 1 for s in (*geo.strides, *geo.dilations)) or min(geo.pads) < 0:
        return False
    padded_width = out[1] + w.shape[3] - 1
    return math.prod(x.shape[:2]) * math.prod(w.shape[2:]) * out[0] * padded_width * x.itemsize <= COLS_BUDGET


def conv(x, w, geo: Geometry):
    """y = conv(x, w): x [N, C, *S], w [O, C/g, *K] -> [N, O, *out]: the filter matrix times each sample's
    columns (or the whole batch's, ``_by_sample``), a batch slice at a time."""
    g, n, o = geo.groups, x.shape[0], w.shape[0]
    filters = w.reshape(g, o // g, -1)
    out = ops.conv_out_sizes(x.shape[2:], w.shape[2:], geo.strides, geo.pads, geo.dilations)
    if x.size == 0:   # Paddle's output of an empty input: zeros (of the padding's width, or none)
        return np.zeros((n, o, *out), dtype=np.result_type(x, w))
    if _wide(x, w, geo, out):
        cols, (oh, wp) = wide_columns(x, w.shape[2:], geo)
        return np.ascontiguousarray((filters @ cols).reshape(n, o, oh, wp)[..., :out[1]])
    by_sample = _by_sample(math.prod(out), filters.shape[2])
    make_columns = sample_columns if by_sample else columns
    slices = _batch_slices(x, w.shape[2:], geo)
    if len(slices) == 1:
        product = filters @ make_columns(x, w.shape[2:], geo)[0]
        return product.reshape(n, o, *out) if by_sample else ungrouped(product, n, out)
    result = np.empty((n, g, o // g, math.prod(out)) if by_sample else (g, o // g, n * math.prod(out)),
                      dtype=np.result_type(x, w))
    for part in slices:
        cols = make_columns(x[part], w.shape[2:], geo)[0]
        np.matmul(filters, cols, out=result[part] if by_sample else
                  result[:, :, part.start * math.prod(out):part.stop * math.prod(out)])
    return result.reshape(n, o, *out) if by_sample else ungrouped(result, n, out)


def _times_columns(dy_rows, cols):
    """dy_rows @ cols^T ([g, O/g, L] @ [g, L, C/g * prod(kernel)]); in float32, for 2 to 64 outputs a group, at least
    twice as many column rows and 2^22 multiply-adds, as (cols @ dy_rows^T)^T, the same values bit for bit (2,187
    shapes of 1-32 groups; float64's differ in 96 of 150), where BLAS runs 0.57-0.9x the time: DenseNet's 3x3 layers
    of 32 outputs 0.59-0.70x, LeNet's at batch 512 0.71x, AlexNet's first 0.8x, GoogLeNet's 1x1 of 16-64 outputs
    0.57-0.85x; 0.9-1.4x at 96 to 256 outputs (MobileNet's pointwise 512: 1.2x) or fewer rows (its [64, 32] at
    112x112: 1.31x), 1.0x for a depthwise filter's single output, 1.2-1.4x on small products. Not taken on a
    machine whose BLAS gives the swapped product other bits (blas_bits)."""
    o, rows, macs = dy_rows.shape[1], cols.shape[1], math.prod(dy_rows.shape) * cols.shape[1]
    checked = dy_rows.dtype == cols.dtype == np.float32 and dy_rows.flags.c_contiguous and cols.flags.c_contiguous
    if 2 <= o <= 64 and rows >= 2 * o and macs >= 1 << 22 and checked and blas_bits.filter_grad_product():
        return np.ascontiguousarray((cols @ dy_rows.transpose(0, 2, 1)).transpose(0, 2, 1))
    return dy_rows @ cols.transpose(0, 2, 1)


def conv_filter_grad(x, dy, w_shape, geo: Geometry):
    """dL/dw of y = conv(x, w), given dy = dL/dy: dy times the columns, summed over batch slices (in
    float32 for float32 data: the slices' sums are added, an order of summation of its own)."""
    slices = _batch_slices(x, w_shape[2:], geo)
    total = None
    for part in slices:
        cols, _ = columns(x[part], w_shape[2:], geo)
        grad = _times_columns(grouped(dy[part], geo.groups), cols)
        total = grad if total is None else np.add(total, grad, out=total)
    return total.reshape(w_shape)


# a depthwise input grad goes channels last where output rows are shorter than SHORT_ROWS cells and N * C holds
# LAST_ROWS_RATIO rows' cells: measured 1.4-2.3x faster there, up to 1.4x slower on longer rows
SHORT_ROWS, LAST_ROWS_RATIO = 16, 4


def _full_correlation(dy, w, geo: Geometry):
    """A unit-stride convolution's input grad as a convolution of dy, padded by the kernel's span less the forward's
    padding, with the filter flipped (its channels swapped within each group); None where the forward's padding
    exceeds the span. Taken for grouped filters: 1.5-2.7x faster than adding a depthwise filter's taps on MobileNet's
    layer shapes, 1.9-2.2x than col2im on ResNeXt's [2, 256, 14, 14] of 32 groups; and for ungrouped filters of few
    outputs (``_few_outputs``). A cell's grad is then one dot product over outputs and taps, not col2im's sum of a dot
    product over outputs per tap: the largest difference from float64's, relative to the largest grad, was
    3e-7 to 8e-7 against col2im's 1e-7 to 4e-7 on the shapes measured below."""
    spans = [(k - 1) * d for k, d in zip(w.shape[2:], geo.dilations)]
    pads = tuple(span - pad for span, pair in zip(spans, zip(geo.pads[0::2], geo.pads[1::2])) for pad in pair)
    if any(s != 1 for s in geo.strides) or min(pads) < 0:
        return None
    g, (o, cg), dims = geo.groups, w.shape[:2], len(spans)
    flipped = w[(Ellipsis, *[slice(None, None, -1)] * dims)].reshape(g, o // g, cg, *w.shape[2:]).swapaxes(1, 2)
    return conv(dy, np.ascontiguousarray(flipped).reshape(g * cg, o // g, *w.shape[2:]),
                Geometry(geo.strides, pads, geo.dilations, g))


def _few_outputs(w, geo: Geometry) -> bool:
    """An ungrouped filter wider than 1 cell, of at most 64 outputs and twice as many inputs, whose col2im is a
    product of only as many terms as outputs: its input grad as a convolution took 0.2-0.57x col2im's time on
    DenseNet's 3x3 layers of 128 inputs and 32 outputs (7x7 to 56x56, batch 2 to 64) and other such shapes; 0.62-1.5x
    where outputs were more than half the inputs or above 64 (ResNet's 64 to 64: 0.87x, LeNet's at batch 512:
    1.5-4.3x), where it is not taken. A pointwise filter's grad is W^T @ dy itself, no col2im to save."""
    o, c = w.shape[:2]
    return geo.groups == 1 and o <= 64 and 2 * o <= c and math.prod(w.shape[2:]) > 1


def _depthwise_input_grad(dy, w, x_sizes, geo: Geometry):
    """A depthwise filter's input grad: dy times each channel's tap weight, a tap at a time, added where the tap's
    windows read. Where the output's rows are short and samples x channels many, that is done channels last
    ([*S, N, C]), so numpy's adds run along N * C contiguous values, not along rows of a few cells; the result is
    the same view of a padded [N, C, *S] buffer either way."""
    n, c, out, k_sizes = dy.shape[0], dy.shape[1], dy.shape[2:], w.shape[2:]
    padded, dtype = padded_sizes(x_sizes, geo), np.result_type(dy, w)
    if out[-1] >= SHORT_ROWS or n * c < LAST_ROWS_RATIO * out[-1]:
        taps, per_channel = w.reshape(c, *k_sizes), (c,) + (1,) * len(k_sizes)
        xp, product = np.zeros((n, c, *padded), dtype), np.empty(dy.shape, dtype)   # a tap's product, added at once
        add_taps(lambda offset: np.multiply(dy, taps[(slice(None), *offset)].reshape(per_channel), out=product),
                  out, k_sizes, geo, xp)
        return inner(xp, x_sizes, geo)
    last = np.ascontiguousarray(np.moveaxis(dy, (0, 1), (-2, -1)))
    taps = np.moveaxis(w.reshape(c, *k_sizes), 0, -1)   # [*K, C]
    xp_last, product = np.zeros((*padded, n, c), dtype), np.empty(last.shape, dtype)
    add_taps(lambda offset: np.multiply(last, taps[offset], out=product), out, k_sizes, geo, xp_last, last=True)
    inside = inner(np.empty((n, c, *padded), dtype), x_sizes, geo)   # only the inside is ever read
    inside[...] = np.moveaxis(inner(xp_last, x_sizes, geo, last=True), (-2, -1), (0, 1))
    return inside


def conv_input_grad(dy, w, x_sizes, geo: Geometry):
    """dL/dx of y = conv(x, w) for x of spatial sizes x_sizes: a grouped filter's or one of few outputs with unit
    strides a convolution (``_full_correlation``); else col2im of W^T @ dy, each sample's (or the whole batch's,
    ``_by_sample``), a batch slice at a time, and a pointwise convolution's W^T @ dy itself."""
    g, n, out, (o, cg), k_sizes = geo.groups, dy.shape[0], dy.shape[2:], w.shape[:2], w.shape[2:]
    correlated = _full_correlation(dy, w, geo) if g > 1 or _few_outputs(w, geo) else None
    if correlated is not None:
        return correlated
    if o == g and cg == 1:
        return _depthwise_input_grad(dy, w, x_sizes, geo)
    wt = w.reshape(g, o // g, -1).transpose(0, 2, 1)
    by_sample = _by_sample(math.prod(out), wt.shape[1])
    if by_sample and pointwise(k_sizes, geo):
        return (wt @ dy.reshape(n, g, o // g, -1)).reshape(n, g * cg, *out)
    dims = len(out)
    step = _batch_step(n, math.prod(out), g * cg * math.prod(k_sizes), dy.itemsize)
    xp = np.zeros((n, g * cg, *padded_sizes(x_sizes, geo)), dtype=np.result_type(wt, dy))
    for start in range(0, n, step):
        part = dy[start:start + step]
        if by_sample:
            cols = (wt @ part.reshape(part.shape[0], g, o // g, -1)).reshape(part.shape[0], g * cg, *k_sizes, *out)
            sum_taps(cols.transpose(*range(2, 2 + dims), 0, 1, *range(2 + dims, 2 + 2 * dims)), x_sizes, geo,
                      xp[start:start + step])
        else:
            col2im((wt @ grouped(part, g)).reshape(g * cg, *k_sizes, part.shape[0], *out), x_sizes, geo,
                   xp[start:start + step])
    return inner(xp, x_sizes, geo)


def conv_args(k, dims: int, transpose: bool = False):
    last = ops.channel_last(k.attr("data_format"))
    x, w = channels_first(k.x("Input"), last, dims), channels_first(k.x("Filter"), False, dims)
    channels, groups = (w.shape[0], 1) if transpose else (w.shape[1], k.attr("groups"))
    if k.attr("groups") < 1 or x.shape[1] != channels * groups or w.shape[0] % k.attr("groups"):
        raise ValueError(f"Input has {x.shape[1]} channels, which Filter {list(w.shape)} with "
                         f"groups={k.attr('groups')} does not fit")
    geo = _geometry(k, x.shape[2:], w.shape[2:])
    if not transpose:
        ops.conv_out_sizes(x.shape[2:], w.shape[2:], geo.strides, geo.pads, geo.dilations)  # raises if it does not fit
    return last, x, w, geo


def _conv_kernels(name: str, dims: int) -> None:
    @kernel(name)
    def forward(k):
        last, x, w, geo = conv_args(k, dims)
        return {"Output": channels_back(conv(x, w, geo), last)}

    @kernel(name + "_grad")
    def backward(k):
        last, x, w, geo = conv_args(k, dims)
        dy = channels_first(k.x("Output@GRAD"), last, dims)
        if x.size == 0:   # an empty input's output (zeros of the padding) depends on neither input
            return k.grads({"Input@GRAD": lambda: np.zeros_like(k.x("Input")), "Filter@GRAD": lambda: np.zeros_like(w)})
        return k.grads({"Input@GRAD": lambda: channels_back(conv_input_grad(dy, w, x.shape[2:], geo), last),
                        "Filter@GRAD": lambda: conv_filter_grad(x, dy, w.shape, geo)})


# conv_transpose(x, w) is the input grad of conv(y, w) with y of the transpose's output size.
def _conv_transpose_kernels(name: str, dims: int) -> None:
    @kernel(name)
    def forward(k):
        last, x, w, geo = conv_args(k, dims, transpose=True)
        out = ops.conv_transpose_out_sizes(x.shape[2:], w.shape[2:], ops.attr_values(k, ops.conv_transpose_attrs(dims)))
        return {"Output": channels_back(conv_input_grad(x, w, out, geo), last)}

    @kernel(name + "_grad")
    def backward(k):
        last, x, w, geo = conv_args(k, dims, transpose=True)
        dy = channels_first(k.x("Output@GRAD"), last, dims)
        return k.grads({"Input@GRAD": lambda: channels_back(conv(dy, w, geo), last),
                        "Filter@GRAD": lambda: conv_filter_grad(dy, x, w.shape, geo)})


for _name, _dims in ops.CONV_OPS.items():
    _conv_kernels(_name, _dims)
for _name, _dims in ops.CONV_TRANSPOSE_OPS.items():
    _conv_transpose_kernels(_name, _dims)
