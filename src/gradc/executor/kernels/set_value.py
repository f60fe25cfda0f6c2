"""Kernels of gradc.ops.set_value: the slice is replaced (forward), so its grad goes to the value, and
Input's grad is Out@GRAD with the slice zeroed."""

from __future__ import annotations

import numpy as np

from ...ops.creation import literal
from ...ops.set_value import fitted, set_value_target
from . import kernel
from .broadcast import unbroadcast
from .index import ints


def _target(k, shape):
    bounds = (ints(k, [f"{name.capitalize()}TensorList"], name) for name in ("starts", "ends", "steps"))
    return set_value_target(list(shape), k.attr("axes"), *bounds, k.attr("decrease_axes"), k.attr("none_axes"))


@kernel("set_value")
def set_value(k):
    x = k.x("Input")
    index, dims, target = _target(k, x.shape)
    value = k.optional("ValueTensor")
    if value is None:
        value = np.array(literal(k.attrs), dtype=x.dtype).reshape(list(k.attr("shape")))
    out = x.copy()
    value = np.asarray(value, x.dtype)
    out[index] = np.broadcast_to(value.reshape(fitted(value.shape, target)), target).reshape(dims)
    return {"Out": out}


@kernel("set_value_grad")
def set_value_grad(k):
    dout = k.x("Out@GRAD")
    index, _, target = _target(k, dout.shape)

    def input_grad():
        grad = dout.copy()
        grad[index] = 0
        return grad

    def value_grad():
        value = k.x("ValueTensor")
        grad = unbroadcast(dout[index].reshape(target), tuple(fitted(value.shape, target)))
        return grad.reshape(value.shape).astype(value.dtype, copy=False)

    return k.grads({"Input@GRAD": input_grad, "ValueTensor@GRAD": value_grad})
