"""FlowNet's correlation layer (paddle.incubate.layers.correlation, PWC-Net's cost volume): for each displacement
(dx, dy) on a grid of stride2 up to max_displacement, the channel-mean product of a kernel_size^2 window of Input1
around each output position (a stride1 grid over the padded input, from max_displacement on) and the window of
Input2 displaced by it:

    Output[n, (dy, dx), y, x] = sum over window offsets and channels of P1[n, c, h + j, w + i] P2[n, c, h + dy + j,
                                w + dx + i] / (kernel_size^2 C),   h = y stride1 + max_displacement, w likewise

P1, P2 the inputs zero-padded by pad_size. Its gradient is linear in each input: the other input's window times
dOutput, spread back over the window. Paddle 3.3.1 has a GPU kernel only, which gradc follows; with kernel_size > 1
its window starts before the padded input at the first positions (it reads memory before the buffer), where gradc
reads zeros. corr_type_multiply is ignored, as by Paddle's kernel.
"""

from __future__ import annotations

from math import ceil

from ..registry import defop, grad_op
from ..shapes import dims_match
from .infer import check_float, one_dtype


def correlation_shape(ctx, x: list[int]) -> list[int]:
    """[N, (2 (max_displacement / stride2) + 1)^2, ceil((H + 2 pad - 2 border) / stride1), ...] (border: kernel
    radius + max_displacement)."""
    pad, kernel, displacement = ctx.attr("pad_size"), ctx.attr("kernel_size"), ctx.attr("max_displacement")
    stride1, stride2 = ctx.attr("stride1"), ctx.attr("stride2")
    if kernel is None or kernel < 1 or kernel % 2 == 0 or min(stride1, stride2) < 1 or displacement < 0 or pad < 0:
        ctx.fail(f"correlation needs an odd kernel_size, strides >= 1 and max_displacement, pad_size >= 0, got "
                 f"kernel_size {kernel}, stride1 {stride1}, stride2 {stride2}, max_displacement {displacement}, "
                 f"pad_size {pad}")
    border = (kernel - 1) // 2 + displacement
    sides = [-1 if d < 0 else ceil((d + 2 * pad - 2 * border) / stride1) for d in x[2:]]
    if any(0 <= side < 1 for side in sides):
        ctx.fail(f"correlation's output of X {x} would be empty (pad_size {pad}, border {border})")
    return [x[0], (2 * (displacement // stride2) + 1) ** 2, *sides]


def _correlation_infer(ctx):
    x, y = ctx.shape("Input1"), ctx.shape("Input2")
    dtype = one_dtype(ctx, "Input1", "Input2")
    check_float(ctx, "Input1")
    if x is None:
        return {"Output": (None, dtype)}
    if len(x) != 4 or (y is not None and (len(y) != 4 or not all(map(dims_match, x, y)))):
        ctx.fail(f"correlation needs Input1 and Input2 of one NCHW shape, got {x} and {y}")
    return {"Output": (correlation_shape(ctx, x), dtype)}


defop("correlation", ["Input1", "Input2"], ["Output"],
      attrs={"pad_size": 0, "kernel_size": 1, "max_displacement": 0, "stride1": 1, "stride2": 1,
             "corr_type_multiply": 1},
      infer=_correlation_infer, grad=grad_op("Input1", "Input2"))


