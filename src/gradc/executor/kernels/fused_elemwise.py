"""Kernels of gradc.ops.fused_elemwise: the two functors composed in float64, returned in X's dtype; the grad op
by the chain rule through them, Y's grad summed back over the dims Y was broadcast along."""

from __future__ import annotations

import numpy as np

from ...ops.fused_elemwise import BINARY, COMPOUNDS, FUSED_ELEMWISE
from . import kernel
from .activation import sigmoid
from .broadcast import align, reduce_to

ALPHA = np.sqrt(2 / np.pi)


def _gelu(v):
    """Paddle's compound gelu functor is the tanh approximation (checked against its CPU kernel)."""
    return 0.5 * v * (1 + np.tanh(ALPHA * (v + 0.044715 * v ** 3)))


def _gelu_slope(v):
    t = np.tanh(ALPHA * (v + 0.044715 * v ** 3))
    return 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * ALPHA * (1 + 3 * 0.044715 * v * v)


# unary functor -> (f(v, scale), f'(v, scale))
UNARY = {
    "scale": (lambda v, s: v * s, lambda v, s: np.full_like(v, s)),
    "relu": (lambda v, s: np.maximum(v, 0), lambda v, s: (v > 0).astype(v.dtype)),
    "tanh": (lambda v, s: np.tanh(v), lambda v, s: 1 - np.tanh(v) ** 2),
    "sigmoid": (lambda v, s: sigmoid(v), lambda v, s: sigmoid(v) * (1 - sigmoid(v))),
    "gelu": (lambda v, s: _gelu(v), lambda v, s: _gelu_slope(v)),
}
BINARY_OPS = {"elementwise_add": np.add, "elementwise_mul": np.multiply}


def _operands(k):
    functors = tuple(k.attr("functor_list"))
    if functors not in COMPOUNDS:
        raise ValueError(f"functor_list {list(functors)} is not one Paddle implements")
    x, y = (k.x(slot).astype(np.float64) for slot in ("X", "Y"))
    if y.ndim > x.ndim:
        raise ValueError(f"Y {list(y.shape)} must not have more dims than X {list(x.shape)}")
    xa, ya = align(x, y, k.attr("axis"))
    return functors, x, y, xa, ya


def _forward(k):
    functors, x, _, xa, ya = _operands(k)
    scale, dtype = k.attr("scale"), k.x("X").dtype
    if functors[0] in BINARY:   # Binary(X, Unary(Y))
        middle = UNARY[functors[1]][0](ya, scale)
        out, kept = BINARY_OPS[functors[0]](xa, middle), middle.reshape(k.x("Y").shape)
    else:   # Unary(Binary(X, Y))
        kept = BINARY_OPS[functors[1]](xa, ya)
        out = UNARY[functors[0]][0](kept, scale)
    return {"Out": np.broadcast_to(out, x.shape).astype(dtype), "IntermediateOut": kept.astype(dtype)}


def _backward(k):
    functors, x, y, xa, ya = _operands(k)
    dout, scale = k.x("Out@GRAD").astype(np.float64), k.attr("scale")
    if functors[0] in BINARY:
        f, slope = UNARY[functors[1]]
        middle = f(ya, scale)
        if functors[0] == "elementwise_add":
            dx, dmiddle = dout, dout
        else:
            dx, dmiddle = dout * middle, dout * xa
        dy = reduce_to(dmiddle, y, ya) * slope(y, scale)   # the unary reads Y before broadcasting
    else:
        dmiddle = dout * UNARY[functors[0]][1](BINARY_OPS[functors[1]](xa, ya), scale)
        dx, dy = (dmiddle, dmiddle) if functors[1] == "elementwise_add" else (dmiddle * ya, dmiddle * xa)
        dy = reduce_to(dy, y, ya)
    dtype = k.x("X").dtype
    return {"X@GRAD": np.broadcast_to(dx, x.shape).astype(dtype), "Y@GRAD": dy.astype(dtype)}


for _type in FUSED_ELEMWISE:
    kernel(_type)(_forward)
    kernel(f"{_type}_grad")(_backward)
