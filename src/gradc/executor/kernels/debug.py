"""Kernels of gradc.ops.debug: print and check_numerics, writing to standard output as Paddle's kernels do."""

from __future__ import annotations

import numpy as np

from ...errors import ExecutionError
from . import kernel

# Paddle's short names in check_numerics' reports
SHORT_DTYPES = {"float16": "fp16", "float32": "fp32", "float64": "fp64", "bfloat16": "bf16"}


def _dtype_name(array: np.ndarray) -> str:
    return "bfloat16" if array.dtype == np.uint16 else str(array.dtype)


def _printed(k, value: np.ndarray) -> str:
    """Paddle's listing of one tensor: each item where its attribute asks for it, the first `summarize` values."""
    name = k.op.inputs["In"][0]
    lines = [f"Variable: {name}"] if k.attr("print_tensor_name") else []
    if k.attr("message"):
        lines.append(f"  - message: {k.attr('message')}")
    if k.attr("print_tensor_lod"):
        lod = k.lod("In")
        lines.append("  - lod: {" + ", ".join("{" + ", ".join(map(str, level)) + "}" for level in lod or ()) + "}")
    lines.append("  - place: Place(cpu)")
    if k.attr("print_tensor_shape"):
        lines.append(f"  - shape: [{', '.join(map(str, value.shape))}]")
    if k.attr("print_tensor_layout"):
        lines.append("  - layout: NCHW")
    if k.attr("print_tensor_type"):
        lines.append(f"  - dtype: {_dtype_name(value)}")
    count = k.attr("summarize")
    shown = value.ravel() if count < 0 else value.ravel()[:count]
    lines.append("  - data: [" + " ".join(f"{float(v):f}" for v in shown) + "]")
    return "\n".join(lines)


@kernel("print")
def print_(k):
    value = np.asarray(k.x("In"))
    phase, forward = str(k.attr("print_phase")).upper(), k.attr("is_forward")
    printed = k.state or 0
    if phase in ("BOTH", "FORWARD" if forward else "BACKWARD") and (k.attr("first_n") < 0 or
                                                                      printed < k.attr("first_n")):
        print(_printed(k, value), flush=True)
        k.state = printed + 1
    return {"Out": value.copy()}   # Paddle shares the buffer; later kernels may write into it


@kernel("check_numerics")
def check_numerics(k):
    x = np.asarray(k.x("tensor"))
    nan, inf, zero = (int(np.count_nonzero(test)) for test in (np.isnan(x), np.isinf(x), x == 0))
    with np.errstate(invalid="ignore"):
        values = np.array([x.max(), x.min(), x.mean()] if x.size else [0, 0, 0], np.float32)
    where = (f"[device=cpu, op={k.attr('op_type')}, tensor={k.attr('var_name')}, "
             f"dtype={SHORT_DTYPES.get(_dtype_name(x), _dtype_name(x))}]")
    summary = f"max={values[0]:e}, min={values[1]:e}, mean={values[2]:e}"
    if nan or inf:
        print(f"[PRECISION] [ERROR] in {where}, numel={x.size}, num_nan={nan}, num_inf={inf}, num_zero={zero}, "
              f"{summary}", flush=True)
        if k.attr("check_nan_inf_level") == 0:
            raise ExecutionError(f"{k.where}: there are NaN or Inf values (num_nan={nan}, num_inf={inf}, "
                                 f"num_zero={zero}) in {where}")
    elif k.attr("check_nan_inf_level") == 3:
        print(f"[PRECISION] in {where}, numel={x.size}, num_zero={zero}, {summary}", flush=True)
    return {"stats": np.array([nan, inf, zero], np.int64), "values": values}
