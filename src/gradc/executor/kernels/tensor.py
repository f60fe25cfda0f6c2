"""Kernels of gradc.ops.tensor: constants, random initialisers, assign, cast."""

from __future__ import annotations

import math

import numpy as np

from ...bfloat16 import STORAGE, round_to_bfloat16
from ...float8 import FORMATS as FLOAT8_FORMATS
from ...float8 import round_to_float8
from ...ir.types import NUMPY_DTYPE_NAMES, VarType, dtype_name
from ...limits import check_allocation
from .. import paddle_random, randomness
from ..tensor_array import TensorArray
from . import kernel


def numpy_dtype(code) -> np.dtype:
    """The numpy dtype a kernel makes values of data type ``code`` in: bfloat16's and float8's are float32 (rounded
    when stored, gradc.bfloat16, gradc.float8)."""
    if code == VarType.BF16 or code in FLOAT8_FORMATS:
        return STORAGE
    if code not in NUMPY_DTYPE_NAMES:
        raise ValueError(f"data type {code} ({dtype_name(code)}) has no numpy type: gradc's executor cannot run it")
    return np.dtype(NUMPY_DTYPE_NAMES[code])


def _shape(k, tensor_first: bool) -> tuple[int, ...]:
    """The created tensor's dims, in the op's order of priority (gradc.ops.tensor.created_dims), checked
    against the memory limit before anything is allocated."""
    if k.has("ShapeTensorList") and not (tensor_first and k.has("ShapeTensor")):
        shape = [int(np.asarray(t).reshape(())) for t in k.xs("ShapeTensorList")]
    elif k.has("ShapeTensor") and (tensor_first or not k.attr("shape")):
        shape = [int(d) for d in k.x("ShapeTensor").reshape(-1)]
    else:
        shape = list(k.attr("shape"))
    if any(d < 0 for d in shape):
        raise ValueError(f"the shape {shape} has a negative dim")
    check_allocation(math.prod(shape), numpy_dtype(k.attr("dtype")).itemsize, f"a tensor of shape {shape}")
    return tuple(shape)


@kernel("fill_constant")
def fill_constant(k):
    value = k.optional("ValueTensor")
    if value is None:
        text = k.attr("str_value")
        value = float(text) if text else k.attr("value")
    return {"Out": np.full(_shape(k, tensor_first=True), np.ravel(value)[0], dtype=numpy_dtype(k.attr("dtype")))}


@kernel("fill_any_like", shape_only=("X",))
def fill_any_like(k):
    code = k.attr("dtype")

    def fill(x):
        return np.full(x.shape, k.attr("value"), dtype=x.dtype if code == -1 else numpy_dtype(code))

    x = k.x("X")
    return {"Out": x.map(fill) if isinstance(x, TensorArray) else fill(x)}


@kernel("shape", shape_only=("Input",))
def shape(k):
    return {"Out": np.array(np.shape(k.x("Input")), dtype=np.int32)}


kernel("size")(lambda k: {"Out": np.array(np.size(k.x("Input")), dtype=np.int64)})


@kernel("fill_zeros_like")
def fill_zeros_like(k):
    x = k.x("X")
    return {"Out": x.map(np.zeros_like) if isinstance(x, TensorArray) else np.zeros_like(x)}


@kernel("uniform_random")
def uniform_random(k):
    shape, dtype, seed = _shape(k, tensor_first=False), numpy_dtype(k.attr("dtype")), k.attr("seed")
    engine = randomness.engine(seed or None)   # Paddle's own draws
    out = paddle_random.uniform(engine, math.prod(shape), k.attr("min"), k.attr("max"),
                                paddle_random.distribution_dtype(dtype)).reshape(shape)
    out = out.astype(dtype)
    count, step = k.attr("diag_num"), k.attr("diag_step")
    if count > 0:  # an identity-like start: diag_val at flat positions i * (diag_step + 1)
        if (count - 1) * (step + 1) >= out.size:
            raise ValueError(f"diag_num {count} with diag_step {step} does not fit {out.size} elements")
        out.reshape(-1)[np.arange(count) * (step + 1)] = k.attr("diag_val")
    return {"Out": out}


@kernel("gaussian_random")
def gaussian_random(k):
    shape, dtype, seed = _shape(k, tensor_first=False), numpy_dtype(k.attr("dtype")), k.attr("seed")
    engine = randomness.engine(seed or None)   # Paddle's own draws (to an ulp)
    out = paddle_random.normal(engine, math.prod(shape), k.attr("mean"), k.attr("std"),
                               paddle_random.distribution_dtype(dtype)).reshape(shape)
    return {"Out": out.astype(dtype)}


kernel("empty")(lambda k: {"Out": np.zeros(_shape(k, tensor_first=True), dtype=numpy_dtype(k.attr("dtype")))})


@kernel("randint")
def randint(k):
    shape, seed = _shape(k, tensor_first=False), k.attr("seed")
    engine = randomness.engine(seed or None)   # Paddle's own draws
    out = paddle_random.integers(engine, math.prod(shape), k.attr("low"), k.attr("high")).reshape(shape)
    return {"Out": out.astype(numpy_dtype(k.attr("dtype")))}


@kernel("randperm")
def randperm(k):
    seed = k.attrs.get("seed", 0)   # an extra attribute in Paddle 3.3.1: programs may omit it
    engine = randomness.engine(seed or None)   # Paddle's own shuffle
    return {"Out": paddle_random.permutation(engine, k.attr("n")).astype(numpy_dtype(k.attr("dtype")))}


def _copy(x):
    return np.array(x, copy=True)


@kernel("share_data")
def share_data(k):
    return {"Out": _copy(k.x("X"))}


@kernel("assign")
def assign(k):
    x = k.optional("X")
    if x is None:  # Paddle's assign without X writes nothing: Out keeps what it holds
        return {}
    return {"Out": x.map(_copy) if isinstance(x, TensorArray) else _copy(x)}


@kernel("cast")
def cast(k):
    x, dtype = k.x("X"), numpy_dtype(k.attr("out_dtype"))
    if x.dtype.kind == "c" and dtype.kind != "c":   # Paddle's cast of a complex value keeps its real part
        x = x.real
    if k.attr("out_dtype") == VarType.BF16:
        return {"Out": round_to_bfloat16(x)}
    if k.attr("out_dtype") in FLOAT8_FORMATS:   # through float32, as Paddle's static_cast<float> first
        return {"Out": round_to_float8(x, k.attr("out_dtype"))}
    return {"Out": x.astype(dtype)}
