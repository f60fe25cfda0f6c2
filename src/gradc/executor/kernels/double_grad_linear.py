"""Kernels of gradc.ops.double_grad_linear: the forward's kernel run on grad_x@GRAD as its X."""

from __future__ import annotations

import copy

from . import KERNELS, kernel


def _at_ddx(name: str, forward: str, check=None, constants: dict | None = None) -> None:
    def run(k):
        if check is not None:
            check(k)
        view = copy.copy(k)
        view.ins = {**k.ins, "X": k.ins["grad_x@GRAD"]}
        view.inputs = None   # the forward's slots, not this op's
        if constants:
            view.op = k.op.copy()
            view.op.attrs.update(constants)
        return {"grad_out@GRAD": KERNELS[forward](view)["Out"]}

    kernel(name)(run)


def _average_only(k) -> None:
    if k.attr("pooling_type") == "max":
        raise ValueError("pool2d_double_grad takes average pooling only (Paddle 3.3.1's kernel raises for max)")


_at_ddx("pool2d_double_grad", "pool2d", _average_only)
# the pad value is a constant, so ddX's padding is 0: Paddle 3.3.1's kernel pads ddX with the value, a wrong gradient
_at_ddx("pad3d_double_grad", "pad3d", constants={"value": 0.0})
