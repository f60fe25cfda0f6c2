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
# unary functor -> f'(its input) from its output, where Paddle's grad reads Out (fuse_elewise_add_act_pass's grad op
# holds neither X nor IntermediateOut)
SLOPE_OF_OUT = {"relu": lambda out, s: (out > 0).astype(out.dtype), "scale": lambda out, s: np.full_like(out, s),
                "tanh": lambda out, s: 1 - out ** 2, "sigmoid": lambda out, s: out * (1 - out)}


def functors_of(k) -> tuple[str, ...]:
    """functor_list, each name without the _grad a pass-written grad op gives it; failing unless Paddle has the pair."""
    functors = tuple(name.removesuffix("_grad") for name in k.attr("functor_list"))
    if functors not in COMPOUNDS:
        raise ValueError(f"functor_list {list(k.attr('functor_list'))} is not one Paddle implements")
    return functors


def _operands(k, x):
    functors = functors_of(k)
    x, y = x.astype(np.float64), k.x("Y").astype(np.float64)
    if y.ndim > x.ndim:
        raise ValueError(f"Y {list(y.shape)} must not have more dims than X {list(x.shape)}")
    xa, ya = align(x, y, k.attr("axis"))
    return functors, x, y, xa, ya


def _forward(k):
    functors, x, _, xa, ya = _operands(k, k.x("X"))
    scale, dtype = k.attr("scale"), k.x("X").dtype
    if functors[0] in BINARY:   # Binary(X, Unary(Y))
        middle = UNARY[functors[1]][0](ya, scale)
        out, kept = BINARY_OPS[functors[0]](xa, middle), middle.reshape(k.x("Y").shape)
    else:   # Unary(Binary(X, Y))
        kept = BINARY_OPS[functors[1]](xa, ya)
        out = UNARY[functors[0]][0](kept, scale)
    return {"Out": np.broadcast_to(out, x.shape).astype(dtype), "IntermediateOut": kept.astype(dtype)}


def _backward(k):
    """Without X (fuse_elewise_add_act_pass leaves it out of the add variant's grad op) dOut stands in for its shape:
    an add of X needs no X's values, and Unary(X + Y) reads X + Y from IntermediateOut or its slope from Out."""
    dout, scale = k.x("Out@GRAD").astype(np.float64), k.attr("scale")
    given = k.optional("X")
    functors, x, y, xa, ya = _operands(k, dout if given is None else given)
    saved = k.optional("IntermediateOut") if k.attr("save_intermediate_out") else None
    out = k.optional("Out")
    from_out = given is None and saved is None and functors[0] in SLOPE_OF_OUT and out is not None
    needs_x = "elementwise_mul" in functors or (functors[0] not in BINARY and saved is None and not from_out)
    if given is None and needs_x:
        raise ValueError(f"functor_list {list(functors)} needs X (or IntermediateOut, or Out) and the op has neither")
    if functors[0] in BINARY:
        f, slope = UNARY[functors[1]]
        middle = f(ya, scale)
        if functors[0] == "elementwise_add":
            dx, dmiddle = dout, dout
        else:
            dx, dmiddle = dout * middle, dout * xa
        dy = reduce_to(dmiddle, y, ya) * slope(y, scale)   # the unary reads Y before broadcasting
    else:
        if from_out:
            dmiddle = dout * SLOPE_OF_OUT[functors[0]](out.astype(np.float64), scale)
        else:
            inner = BINARY_OPS[functors[1]](xa, ya) if saved is None else saved.astype(np.float64)
            dmiddle = dout * UNARY[functors[0]][1](inner, scale)
        dx, dy = (dmiddle, dmiddle) if functors[1] == "elementwise_add" else (dmiddle * ya, dmiddle * xa)
        dy = reduce_to(dy, y, ya)
    dtype = k.x("Y").dtype
    return {"X@GRAD": np.broadcast_to(dx, x.shape).astype(dtype), "Y@GRAD": dy.astype(dtype)}


for _type in FUSED_ELEMWISE:
    kernel(_type)(_forward)
    kernel(f"{_type}_grad")(_backward)
