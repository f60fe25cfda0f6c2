"""Kernels of gradc.ops.math."""

from __future__ import annotations

import numpy as np

from ...bfloat16 import round_to_bfloat16
from ...shapes import normalize_axis
from ..selected_rows import SelectedRows
from ..sparse_value import SparseCoo, SparseCsr
from ..tensor_array import TensorArray
from . import kernel
from .activation import holomorphic, unary
from .broadcast import align, reduce_to, unbroadcast


def _elementwise(k, x: str, y: str, by_axis: bool):
    """The operands and their views lined up for broadcasting: by the op's axis attribute (Paddle's
    elementwise_*), or by trailing dims as numpy (ops without the attribute: not ``by_axis``)."""
    a, b = k.x(x), k.x(y)
    return (a, b, *align(a, b, k.attr("axis"))) if by_axis else (a, b, a, b)


def binary(name: str, fn, x: str = "X", y: str = "Y", out: str = "Out", by_axis: bool = True) -> None:
    """The kernel of out = fn(x, y), broadcast."""
    kernel(name)(lambda k: {out: fn(*_elementwise(k, x, y, by_axis)[2:])})


@kernel("elementwise_add")
def elementwise_add(k):
    x, y = k.x("X"), k.x("Y")
    if x.ndim != y.ndim:
        x, y = align(x, y, k.attr("axis"))
    return {"Out": np.add(x, y)}


binary("elementwise_sub", np.subtract)
binary("elementwise_mul", np.multiply)


def _integer_safe(fn):
    """``fn`` for floats; for integers after a check for zero divisors, which Paddle reports too."""
    def apply(x, y):
        if np.issubdtype(np.result_type(x, y), np.integer) and not np.all(y):
            raise ValueError("integer division by zero")
        return fn(x, y)
    return apply


def _divide(x, y):
    """Paddle's division: true division of floats, integers rounded toward zero (as C does)."""
    if not np.issubdtype(np.result_type(x, y), np.integer):
        return np.divide(x, y)
    quotient = np.floor_divide(x, y)
    return quotient + ((quotient < 0) & (quotient * y != x))


binary("elementwise_div", _integer_safe(_divide))
binary("elementwise_max", np.maximum)
binary("elementwise_min", np.minimum)
binary("elementwise_pow", np.power)
binary("elementwise_mod", _integer_safe(np.mod))                # the sign of Y, as Python's %
binary("elementwise_floordiv", _integer_safe(np.floor_divide))  # rounds toward -inf


@kernel("trunc_divide")
def trunc_divide(k):
    """x / y rounded toward zero: integers as C divides them, floats truncated (x / 0 stays inf or nan)."""
    x, y = k.x("x"), k.x("y")
    quotient = _integer_safe(_divide)(x, y)
    with np.errstate(divide="ignore", invalid="ignore"):
        return {"out": (quotient if np.issubdtype(quotient.dtype, np.integer) else np.trunc(quotient)).astype(x.dtype)}


def binary_grad(name: str, dx, dy, x: str = "X", y: str = "Y", out: str = "Out", by_axis: bool = True) -> None:
    """dx(xa, ya, dout) and dy(...) give the broadcast grads; they are summed back to x and y. None for one: the
    op is flat in that operand (zeros of its shape, not dOut's summed down)."""

    @kernel(name)
    def grad(k):
        a, b, xa, ya = _elementwise(k, x, y, by_axis)
        dout = k.x(out + "@GRAD")
        return k.grads({x + "@GRAD": lambda: _summed(dx, a, xa, xa, ya, dout),
                        y + "@GRAD": lambda: _summed(dy, b, ya, xa, ya, dout)})


def _summed(derivative, operand, aligned, xa, ya, dout):
    """derivative(xa, ya, dout) summed back to ``operand``, which was broadcast as ``aligned``."""
    if derivative is None:
        return np.zeros(operand.shape, dout.dtype)
    return reduce_to(np.broadcast_to(derivative(xa, ya, dout), dout.shape), operand, aligned)


@kernel("elementwise_add_grad", shape_only=("X", "Y"))
def elementwise_add_grad(k):
    """dX and dY are dOut summed back to each operand's shape (a bias: over the batch)."""
    x, y, dout = k.x("X"), k.x("Y"), k.x("Out@GRAD")
    axis = k.attr("axis")
    # a matrix plus a bias row (fc), as the general path computes it (which leaves a batch of 1 by axis 1 unsummed)
    if x.shape == dout.shape and dout.ndim == 2 and y.shape == dout.shape[1:] and (axis == -1 or axis == 1 < len(dout)):
        wanted, grads = k.wanted, {}
        if "X@GRAD" in wanted:
            grads["X@GRAD"] = dout
        if "Y@GRAD" in wanted:
            grads["Y@GRAD"] = dout.sum(axis=(0,))
        return grads
    xa, ya = align(x, y, axis)
    return k.grads({"X@GRAD": lambda: dout if x.shape == dout.shape else reduce_to(dout, x, xa),
                    "Y@GRAD": lambda: dout if y.shape == dout.shape else reduce_to(dout, y, ya)})


def conj(a: np.ndarray) -> np.ndarray:
    """The conjugate of a complex array (a complex operand's factor in a grad: dL/dRe + i dL/dIm), a real one as is."""
    return a.conj() if a.dtype.kind == "c" else a


binary_grad("elementwise_sub_grad", lambda x, y, d: d, lambda x, y, d: -d)
binary_grad("elementwise_mul_grad", lambda x, y, d: d * conj(y), lambda x, y, d: d * conj(x))
binary_grad("elementwise_div_grad", lambda x, y, d: d / conj(y), lambda x, y, d: -d * conj(x / (y * y)))
# A tie splits dOut in halves, as Paddle 3.3.1's kernels do (its operations, in its order).
binary_grad("elementwise_max_grad", lambda x, y, d: d * (x > y) + (d / 2) * (x == y),
            lambda x, y, d: d * (x < y) + (d / 2) * (x == y))
binary_grad("elementwise_min_grad", lambda x, y, d: d * (x < y) + (d / 2) * (x == y),
            lambda x, y, d: d * (x > y) + (d / 2) * (x == y))
# x mod y = x - y floor(x / y)
binary_grad("remainder_grad", lambda x, y, d: d, lambda x, y, d: -d * np.floor_divide(x, y))
# d(x^y)/dy = x^y log x, whose limit at x = 0 is 0 (log(1) stands in there).
binary_grad("elementwise_pow_grad", lambda x, y, d: d * y * np.power(x, y - 1),
            lambda x, y, d: d * np.power(x, y) * np.log(np.where(x == 0, 1, x)))


_ndarray = np.ndarray


def _scalar(k, slot: str, attr: str, dtype):
    """The slot's one value when given, else the attribute; Paddle casts both to an integer X's dtype."""
    tensor = k.optional(slot)
    value = tensor.reshape(-1)[0] if tensor is not None else k.attr(attr)
    return dtype.type(value) if dtype.kind in "iu" else float(value)


@kernel("scale")
def scale(k):
    """Also of a sparse grad's values (Paddle's SelectedRows kernel; a SparseCoo or SparseCsr gradient's, as the
    backward of a sum of them scales), checked here rather than by a wrapper: hot."""
    x = sparse = k.x("X")
    if type(x) is _ndarray or not isinstance(x, (SelectedRows, SparseCoo, SparseCsr)):
        sparse = None
    else:
        x = sparse.values
    dtype = x.dtype
    attrs = k.op.attrs   # read live, as k.attr does; its defaults only for an op that lacks one
    try:
        s, b, after = attrs["scale"], attrs["bias"], attrs["bias_after_scale"]
    except KeyError:
        s, b, after = k.attr("scale"), k.attr("bias"), k.attr("bias_after_scale")
    ins = k.ins   # the common case: X alone (or with empty tensor slots), of a float type
    if dtype.kind == "f" and (len(ins) == 1 or not (ins.get("ScaleTensor") or ins.get("BiasTensor"))):
        s, b = float(s), float(b)
    else:
        s, b = _scalar(k, "ScaleTensor", "scale", dtype), _scalar(k, "BiasTensor", "bias", dtype)
    if k.bfloat16:   # Paddle's bfloat16 kernel: scale and bias in bfloat16, each step rounded
        s, b = round_to_bfloat16(s), round_to_bfloat16(b)
        out = round_to_bfloat16(round_to_bfloat16(x * s) + b if after else round_to_bfloat16(x + b) * s)
    else:
        out = x * s + b if after else (x + b) * s
    out = out if out.dtype is dtype else out.astype(dtype)
    return {"Out": out if sparse is None else sparse.with_values(out)}


def add_up(arrays: list):
    """The sum of dense arrays (or of TensorArrays), in their order, into a new array."""
    if isinstance(arrays[0], TensorArray):   # the backward adds up gradient arrays too
        return TensorArray.sum(arrays)
    out = arrays[0].copy()
    for a in arrays[1:]:
        out += a
    return out


@kernel("sum")
def sum_(k):
    return {"Out": add_up(k.xs("X"))}


def _factor(k):
    return float(k.x("FactorTensor").reshape(-1)[0]) if k.has("FactorTensor") else k.attr("factor")


def _sign(x: np.ndarray) -> np.ndarray:
    """np.sign, and z / |z| (0 at 0) for a complex z: numpy before 2.0 gives the sign of its real part."""
    if x.dtype.kind != "c":
        return np.sign(x)
    return np.divide(x, np.abs(x), out=np.zeros_like(x), where=x != 0)


def _abs_grad(x, d, k):
    """dOut * sign(x), and 0 at 0 even where dOut is infinite (as Paddle's kernel: no inf * 0 there)."""
    out = np.zeros(np.broadcast_shapes(x.shape, d.shape), np.result_type(d, x))
    return np.multiply(d, _sign(x), out=out, where=x != 0)


unary("exp", lambda x, k: np.exp(x), holomorphic(lambda out, d, k: d * out), uses="Out")
unary("log", lambda x, k: np.log(x), holomorphic(lambda x, d, k: d / x))
unary("sqrt", lambda x, k: np.sqrt(x), holomorphic(lambda out, d, k: d * 0.5 / out), uses="Out")
unary("rsqrt", lambda x, k: 1 / np.sqrt(x), lambda out, d, k: d * -0.5 * out ** 3, uses="Out")
unary("square", lambda x, k: x * x, holomorphic(lambda x, d, k: d * 2 * x))
unary("abs", lambda x, k: np.abs(x), _abs_grad)
unary("cos", lambda x, k: np.cos(x), holomorphic(lambda x, d, k: -d * np.sin(x)))
unary("sin", lambda x, k: np.sin(x), holomorphic(lambda x, d, k: d * np.cos(x)))
unary("pow", lambda x, k: np.power(x, _factor(k)), lambda x, d, k: d * _factor(k) * np.power(x, _factor(k) - 1))
kernel("sign")(lambda k: {"Out": _sign(k.x("X"))})


def _bounds(k):
    """clip's bounds: the Min/Max tensors when given, else the attributes."""
    lo = float(k.x("Min").reshape(-1)[0]) if k.has("Min") else k.attr("min")
    hi = float(k.x("Max").reshape(-1)[0]) if k.has("Max") else k.attr("max")
    if not lo <= hi:
        raise ValueError(f"min {lo:g} is above max {hi:g}")
    return lo, hi


def _clip_grad(x, d, k):
    """dOut where min <= x <= max, bounds included, as Paddle 3.3.1's kernel passes it."""
    lo, hi = _bounds(k)
    return d * ((x >= lo) & (x <= hi))


unary("clip", lambda x, k: np.clip(x, *_bounds(k)), _clip_grad)


@kernel("where")
def where(k):
    return {"Out": np.where(k.x("Condition"), k.x("X"), k.x("Y"))}


@kernel("where_grad")
def where_grad(k):
    cond, dout = k.x("Condition"), k.x("Out@GRAD")
    return k.grads({"X@GRAD": lambda: unbroadcast(np.where(cond, dout, 0), k.x("X").shape),
                    "Y@GRAD": lambda: unbroadcast(np.where(cond, 0, dout), k.x("Y").shape)})


def _cumsum(x, k, reverse):
    """Running sum along `axis` (of the flattened array with `flatten`), optionally exclusive/reversed."""
    flat = k.attr("flatten")
    axis = 0 if flat else normalize_axis(k.attr("axis"), x.ndim)
    a = np.moveaxis(x.reshape(-1) if flat or x.ndim == 0 else x, axis, -1)  # a 0-d X runs as [1]
    a = a[..., ::-1] if reverse else a
    out = np.cumsum(a, axis=-1, dtype=a.dtype)
    if k.attr("exclusive"):
        out = np.concatenate([np.zeros_like(out[..., :1]), out[..., :-1]], axis=-1)
    out = np.moveaxis(out[..., ::-1] if reverse else out, -1, axis)
    return out if flat else out.reshape(x.shape)


kernel("cumsum")(lambda k: {"Out": _cumsum(k.x("X"), k, k.attr("reverse"))})
kernel("cumsum_grad")(lambda k: {"X@GRAD": _cumsum(k.x("Out@GRAD"), k, not k.attr("reverse")).reshape(k.x("X").shape)})
