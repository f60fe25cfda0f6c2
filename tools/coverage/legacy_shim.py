"""Paddle 3.3.1 builds some APIs (gelu, sigmoid, tanh, multiply, matmul, sum, ...) only as PIR ops:
in legacy static mode they raise "must be Value, but got Variable". Paddle 2.x built them as legacy
ops, and programs users saved hold those; inside `legacy_apis()` they append the same legacy ops
again, so the layers that call them still build. `used` names the APIs a build went through."""

from __future__ import annotations

import functools
import sys
from contextlib import contextmanager

import paddle
from paddle.base.layer_helper import LayerHelper


def append(op_type: str, inputs: dict, attrs: dict | None = None, dtype=None, out_slot: str = "Out"):
    """Append one legacy op; its output var is typed by the op's own shape inference."""
    helper = LayerHelper(op_type)
    first = next(iter(inputs.values()))
    out = helper.create_variable_for_type_inference(dtype or first.dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={out_slot: out}, attrs=attrs or {})
    return out


def _unary(op_type: str):
    return lambda x, name=None: append(op_type, {"X": x})


def _binary(op_type: str, dtype=None):
    return lambda x, y, name=None: append(op_type, {"X": x, "Y": y}, {"axis": -1}, dtype)


def _axes(axis, ndim: int) -> tuple[list[int], bool]:
    if axis is None or axis == [] or axis == ():
        return [0], True
    axes = [axis] if isinstance(axis, int) else list(axis)
    return axes, len(axes) == ndim


def _reduce(op_type: str):
    def reduce(x, axis=None, keepdim=False, name=None):
        dims, reduce_all = _axes(axis, len(x.shape))
        return append(op_type, {"X": x}, {"dim": dims, "keep_dim": keepdim, "reduce_all": reduce_all})
    return reduce


def _sum(x, axis=None, dtype=None, keepdim=False, name=None):
    dims, reduce_all = _axes(axis, len(x.shape))
    return append("reduce_sum", {"X": x}, {"dim": dims, "keep_dim": keepdim, "reduce_all": reduce_all})


def _logsumexp(x, axis=None, keepdim=False, name=None):
    dims, reduce_all = _axes(axis, len(x.shape))
    return append("logsumexp", {"X": x}, {"axis": dims, "keepdim": keepdim, "reduce_all": reduce_all})


def _outputs(op_type: str, inputs: dict, outputs: dict, attrs: dict):
    """Append one legacy op with several outputs: {slot: dtype}; returns the output vars in that order."""
    helper = LayerHelper(op_type)
    made = {slot: helper.create_variable_for_type_inference(dtype) for slot, dtype in outputs.items()}
    helper.append_op(type=op_type, inputs=inputs, outputs=made, attrs=attrs)
    return list(made.values())


def _median(x, axis=None, keepdim=False, mode="avg", out=None, name=None):
    axes = [] if axis is None else [axis] if isinstance(axis, int) else list(axis)
    values, _ = _outputs("median", {"x": x}, {"out": x.dtype, "medians": paddle.int64},
                         {"axis": axes, "keepdim": keepdim, "mode": mode})
    return values


def _isclose(x, y, rtol=1e-05, atol=1e-08, equal_nan=False, name=None):
    return append("isclose", {"Input": x, "Other": y}, {"rtol": str(rtol), "atol": str(atol), "equal_nan": equal_nan},
                  paddle.bool)


def _arg(op_type: str):
    def arg(x, axis=None, keepdim=False, dtype="int64", name=None):
        attrs = {"axis": 0 if axis is None else axis, "flatten": axis is None, "keepdims": keepdim, "dtype": 3}
        return append(op_type, {"X": x}, attrs, paddle.int64)
    return arg


def _triangle(lower: bool):
    return lambda x, diagonal=0, name=None: append("tril_triu", {"X": x}, {"diagonal": diagonal, "lower": lower})


def _roll(x, shifts, axis=None, name=None):
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    axes = [] if axis is None else [axis] if isinstance(axis, int) else list(axis)
    return append("roll", {"X": x}, {"shifts": shifts, "axis": axes})


SHIMS = {
    "multiply": _binary("elementwise_mul"),
    "maximum": _binary("elementwise_max"),
    "minimum": _binary("elementwise_min"),
    "greater_than": _binary("greater_than", paddle.bool),
    "matmul": lambda x, y, transpose_x=False, transpose_y=False, name=None: append(
        "matmul_v2", {"X": x, "Y": y}, {"trans_x": transpose_x, "trans_y": transpose_y}),
    "bmm": lambda x, y, name=None: append("bmm", {"X": x, "Y": y}),
    "gelu": lambda x, approximate=False, name=None: append("gelu", {"X": x}, {"approximate": approximate}),
    "softplus": lambda x, beta=1, threshold=20, name=None: append(
        "softplus", {"X": x}, {"beta": float(beta), "threshold": float(threshold)}),
    "sum": _sum,
    "logsumexp": _logsumexp,
    "amax": _reduce("reduce_amax"),
    "all": _reduce("reduce_all"),
    "any": _reduce("reduce_any"),
    "amin": _reduce("reduce_amin"),
    "tril": _triangle(True),
    "isnan": lambda x, name=None: append("isnan_v2", {"X": x}, dtype=paddle.bool),
    "isinf": lambda x, name=None: append("isinf_v2", {"X": x}, dtype=paddle.bool),
    "isfinite": lambda x, name=None: append("isfinite_v2", {"X": x}, dtype=paddle.bool),
    "logical_not": lambda x, out=None, name=None: append("logical_not", {"X": x}),
    "isclose": _isclose,
    "argmax": _arg("arg_max"),
    "argmin": _arg("arg_min"),
    "dot": lambda x, y, name=None: append("dot", {"X": x, "Y": y}),
    "median": _median,
    "diagonal": lambda x, offset=0, axis1=0, axis2=1, name=None: append(
        "diagonal", {"Input": x}, {"offset": offset, "axis1": axis1, "axis2": axis2}),
    "grid_sample": lambda x, grid, mode="bilinear", padding_mode="zeros", align_corners=True, name=None: append(
        "grid_sampler", {"X": x, "Grid": grid}, {"mode": mode, "padding_mode": padding_mode,
                                                 "align_corners": align_corners}, out_slot="Output"),
    "index_put": lambda x, indices, value, accumulate=False, name=None: append(
        "index_put", {"x": x, "indices": list(indices), "value": value}, {"accumulate": accumulate}, out_slot="out"),
    "expand_as": lambda x, y, target_shape=None, name=None: append(
        "expand_as_v2", {"X": x, "Y": y}, {"target_shape": list(target_shape or y.shape)}),
    "triu": _triangle(False),
    "roll": _roll,
    **{name: _unary(name) for name in ("sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "sign", "log1p",
                                       "expm1", "floor", "ceil", "round", "sin", "cos", "log2", "log10", "asin",
                                       "acos", "sinh", "cosh", "acosh", "atanh", "squared_l2_norm")},
}


@functools.cache
def _places() -> list[tuple[object, str, str, object]]:
    """(owner, attribute, API, builtin) for every paddle module attribute holding one of the builtins
    (some modules import them by name: `from paddle._C_ops import gelu`), and Variable's methods
    that are the builtins themselves (`x.sum()` then passes no tensor at all)."""
    builtins = {id(getattr(paddle._C_ops, name)): name for name in SHIMS}
    owners = [m for name, m in list(sys.modules.items()) if name.startswith("paddle") and m]
    owners.append(paddle.base.framework.Variable)
    return [(owner, attr, builtins[id(value)], value)
            for owner in owners for attr, value in list(vars(owner).items()) if id(value) in builtins]


@contextmanager
def legacy_apis(used: set[str]):
    def recording(name):
        def call(*args, **kwargs):
            used.add(name)
            return SHIMS[name](*args, **kwargs)
        return call

    shims = {name: recording(name) for name in SHIMS}
    for module, attr, name, _ in _places():
        setattr(module, attr, shims[name])
    try:
        yield
    finally:
        for module, attr, _, original in _places():
            setattr(module, attr, original)
