"""Kernels of Paddle's conv second-derivative ops (gradc.ops.conv_double): with ddI, ddW the optional grads of the
first grad op's Input@GRAD and Filter@GRAD, grad_out@GRAD = F(ddI, W) + F(I, ddW), Input@GRAD = G_I(ddW, dOut),
Filter@GRAD = G_W(ddI, dOut); an absent ddI or ddW adds nothing (a zero grad where it alone reaches)."""

from __future__ import annotations

import numpy as np

from ...ops.conv import CONV_OPS
from ...ops.conv_double import ddi_slot
from . import kernel
from .conv import channels_back, channels_first, conv, conv_args, conv_filter_grad, conv_input_grad


def _directions(k, forward: str, last: bool, dims: int):
    """ddI (in the op's layout, channels first here) and ddW, None where absent."""
    ddx, ddw = k.optional(ddi_slot(forward)), k.optional("grad_filter@GRAD")
    return (None if ddx is None else channels_first(ddx, last, dims),
            None if ddw is None else channels_first(ddw, False, dims))


def _summed(terms, like):
    return sum(terms) if terms else np.zeros_like(like)


def _conv_grad_grad(forward: str, dims: int) -> None:
    @kernel(f"{forward}_grad_grad")
    def run(k):
        last, x, w, geo = conv_args(k, dims)
        dy = channels_first(k.x("grad_out"), last, dims)
        ddx, ddw = _directions(k, forward, last, dims)
        pairs = [(a, b) for a, b in ((ddx, w), (x, ddw)) if a is not None and b is not None]
        return k.grads({
            "grad_out@GRAD": lambda: channels_back(_summed([conv(a, b, geo) for a, b in pairs], dy), last),
            "Input@GRAD": lambda: channels_back(
                np.zeros_like(x) if ddw is None else conv_input_grad(dy, ddw, x.shape[2:], geo), last),
            "Filter@GRAD": lambda: np.zeros_like(w) if ddx is None else conv_filter_grad(ddx, dy, w.shape, geo)})


@kernel("conv2d_transpose_grad_grad")
def conv2d_transpose_grad_grad(k):
    """The transpose T(x, w) is the conv's input grad, its grads G_I = conv(dOut, w), G_W = the conv's filter grad
    with dOut and x swapped."""
    last, x, w, geo = conv_args(k, 2, transpose=True)
    dy = channels_first(k.x("grad_out"), last, 2)
    ddx, ddw = _directions(k, "conv2d_transpose", last, 2)
    pairs = [(a, b) for a, b in ((ddx, w), (x, ddw)) if a is not None and b is not None]
    return k.grads({
        "grad_out@GRAD": lambda: channels_back(
            _summed([conv_input_grad(a, b, dy.shape[2:], geo) for a, b in pairs], dy), last),
        "Input@GRAD": lambda: channels_back(np.zeros_like(x) if ddw is None else conv(dy, ddw, geo), last),
        "Filter@GRAD": lambda: np.zeros_like(w) if ddx is None else conv_filter_grad(dy, ddx, w.shape, geo)})


for _name, _dims in CONV_OPS.items():
    _conv_grad_grad(_name, _dims)
