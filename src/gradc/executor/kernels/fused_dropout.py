"""Kernels of gradc.ops.fused_dropout: fused_dropout_add and its grad where no draw decides (test, or p 0 or 1)."""

from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from ...ops.fused_dropout import dropout_add_factor
from . import kernel


def _factor(k) -> float:
    """The factor of x, with PTensor's rate when given (known here only: a training rate that draws is refused)."""
    rate = k.optional("PTensor")
    rate = k.attr("p") if rate is None else float(np.asarray(rate).reshape(-1)[0])
    if not k.attr("is_test") and rate not in (0, 1):
        raise ExecutionError(f"{k.where}: p={rate} in training keeps x by Paddle's GPU (curand Philox) draws, which "
                             "gradc cannot reproduce: only is_test or p = 0 or 1 run")
    return dropout_add_factor(rate, k.attr("is_test"), k.attr("mode"))


@kernel("fused_dropout_add")
def fused_dropout_add(k):
    x, y = k.x("x"), k.x("y")
    out = x.astype(np.float64) * _factor(k) + y
    return {"out": out.astype(x.dtype), "seed_offset": np.zeros(2, np.int64)}


@kernel("fused_dropout_add_grad", shape_only=("seed_offset",))
def fused_dropout_add_grad(k):
    dout = k.x("out@GRAD")
    factor = _factor(k)
    return k.grads({"x@GRAD": lambda: (dout.astype(np.float64) * factor).astype(dout.dtype),
                    "y@GRAD": lambda: dout.copy()})
