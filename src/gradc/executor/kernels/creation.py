"""Kernels of gradc.ops.creation."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from ...ops.creation import aligned_length, dtype_bytes, literal
from . import kernel
from .tensor import numpy_dtype


@kernel("assign_value")
def assign_value(k):
    shape, values = list(k.attr("shape")), literal(k.attrs)
    if len(values) != int(np.prod(shape)):
        raise ValueError(f"assign_value holds {len(values)} values for shape {shape}")
    return {"Out": np.array(values, dtype=numpy_dtype(k.attr("dtype"))).reshape(shape)}


@kernel("eye")
def eye(k):
    rows, cols = k.attr("num_rows"), k.attr("num_columns")
    cols = rows if cols == -1 else cols
    check_shape([rows, cols], numpy_dtype(k.attr("dtype")), "eye")
    return {"Out": np.eye(rows, cols, dtype=numpy_dtype(k.attr("dtype")))}


def _scalar(k, slot: str):
    value = np.ravel(k.x(slot))
    if value.size != 1:
        raise ValueError(f"{slot} must hold one value, got {value.size}")
    return value[0]


def _two_sided(k, dtype, count: int, work):
    """Paddle's linspace rule: the first half steps up from Start, the rest down from Stop, in ``work``."""
    start, stop = (work(dtype.type(_scalar(k, s))) for s in ("Start", "Stop"))
    step = (stop - start) / work(max(count - 1, 1))
    i = np.arange(count, dtype=work)
    values = np.where(i < count // 2, start + step * i, stop - step * (count - 1 - i))
    return values if count > 1 else np.full(count, start, work)


@kernel("linspace")
def linspace(k):
    """In the output's float type (float64 for integers, truncated at the end)."""
    dtype, count = numpy_dtype(k.attr("dtype")), int(_scalar(k, "Num"))
    if count < 0:
        raise ValueError(f"Num must be >= 0, got {count}")
    check_shape([count], np.float64, "linspace")
    work = np.float32 if dtype == np.float32 else np.float64
    return {"Out": _two_sided(k, dtype, count, work).astype(dtype)}


@kernel("logspace")
def logspace(k):
    """Base to the powers linspace(Start, Stop, Num); Start, Stop and Base are first cast to the output dtype (an
    integer logspace of base 2.5 is one of base 2), the powers are taken in float64 and truncated for integers."""
    dtype, count = numpy_dtype(k.attr("dtype")), int(_scalar(k, "Num"))
    if count < 1:
        raise ValueError(f"Num must be >= 1, got {count}")
    check_shape([count], np.float64, "logspace")
    base = np.float64(dtype.type(_scalar(k, "Base")))
    with np.errstate(invalid="ignore"):   # a negative base to a fractional power is NaN, as in Paddle
        return {"Out": np.power(base, _two_sided(k, dtype, count, np.float64)).astype(dtype)}


@kernel("range")
def range_(k):
    start, end, step = (_scalar(k, s) for s in ("Start", "End", "Step"))
    if step == 0:
        raise ValueError("Step must not be 0")
    count = int(np.ceil(abs(end - start) / abs(step))) if (end - start) * step > 0 else 0
    dtype = k.x("Start").dtype
    check_shape([count], np.float64, "range")
    # Paddle adds the step once per element, so float rounding accumulates as it does there
    return {"Out": np.cumsum(np.concatenate([[start], np.full(max(count - 1, 0), step)]).astype(dtype))[:count]}


@kernel("range_v2")
def range_v2(k):
    """paddle.range: Start, then Step added once an element, while the steps do not pass End: End itself is
    included when reached (Paddle's kernel takes float32, float64, int32 and int64)."""
    dtype = k.x("Start").dtype
    work = np.dtype(dtype)
    start, end, step = (work.type(_scalar(k, s)) for s in ("Start", "End", "Step"))
    if step == 0 or (end - start) * step < 0:
        raise ValueError(f"Step {step} does not lead from Start {start} to End {end}")   # Paddle's kernel fails too
    count = int(np.floor((end - start) / step)) + 1   # the rounded quotient, as Paddle (1 / 0.1 is 10 in float32)
    check_shape([count], np.float64, "range_v2")
    return {"Out": np.add.accumulate(np.concatenate([[start], np.full(max(count - 1, 0), step)]).astype(work))
            [:count].astype(dtype)}


@kernel("sequence_mask")
def sequence_mask(k):
    lengths = k.x("X")
    tensor = k.optional("MaxLenTensor")
    maxlen = int(np.ravel(tensor)[0]) if tensor is not None else k.attr("maxlen")
    if maxlen < 0:
        maxlen = int(lengths.max()) if lengths.size else 0
    check_shape([*lengths.shape, maxlen], np.float64, "the sequence mask")
    return {"Y": (np.arange(maxlen) < lengths[..., None]).astype(numpy_dtype(k.attr("out_dtype")))}


@kernel("coalesce_tensor")
def coalesce_tensor(k):
    """One flat buffer holding every input (each padded to the alignment), and the outputs as its pieces.
    Paddle's outputs share the buffer's memory; gradc's are copies, which read the same until an op rewrites
    one of them (an optimizer step): in Paddle's CPU programs no op reads the buffer after that."""
    inputs, dtype = k.xs("Input"), numpy_dtype(k.attr("dtype"))
    _check_concated_shapes(k, inputs)
    lengths = [aligned_length(x.size, dtype_bytes(k.attrs), k.attr("use_align"), k.attr("align_size")) for x in inputs]
    fused = np.zeros(sum(lengths), dtype)   # Paddle leaves padding (and, without copy_data, all) uninitialised
    offsets = np.cumsum([0] + lengths)
    if k.attr("set_constant") and not k.attr("copy_data"):
        fused[:] = k.attr("constant")
    elif k.attr("copy_data") or k.attr("persist_output"):   # Output vars are the Input vars in Paddle's programs
        for x, offset in zip(inputs, offsets):
            fused[offset:offset + x.size] = np.ravel(x)
    outputs = [fused[offset:offset + x.size].reshape(x.shape).copy() for x, offset in zip(inputs, offsets)]
    return {"Output": outputs, "FusedOutput": fused}


def _check_concated_shapes(k, inputs) -> None:
    ranks, dims = list(k.attr("concated_ranks")), list(k.attr("concated_shapes"))
    if not ranks:
        return
    ends = np.cumsum([0] + ranks)
    shapes = [dims[a:b] for a, b in zip(ends, ends[1:])]
    if len(ranks) != len(inputs) or ends[-1] != len(dims) or any(list(x.shape) != s for x, s in zip(inputs, shapes)):
        raise ValueError(f"concated_shapes {dims} / concated_ranks {ranks} do not describe the inputs "
                         f"{[list(x.shape) for x in inputs]}")


def _keep(k, dtype):
    """1 - epsilon, computed in float32 as Paddle does (epsilon is a float attribute) before the cast."""
    return dtype.type(np.float32(1) - np.float32(k.attr("epsilon")))


@kernel("label_smooth")
def label_smooth(k):
    x, epsilon = k.x("X"), np.float32(k.attr("epsilon"))
    prior = k.optional("PriorDist")
    prior = prior.reshape(-1) if prior is not None else None
    spread = x.dtype.type(epsilon) * prior if prior is not None else x.dtype.type(epsilon / np.float32(x.shape[-1]))
    return {"Out": (_keep(k, x.dtype) * x + spread).astype(x.dtype)}


kernel("label_smooth_grad")(lambda k: {"X@GRAD": _keep(k, k.x("Out@GRAD").dtype) * k.x("Out@GRAD")})
