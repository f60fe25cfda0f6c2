"""Kernel of gradc.ops.constant: assign_value, whose values attribute holds Paddle Scalar messages."""

from __future__ import annotations

import numpy as np

from ...ir.types import NUMPY_DTYPE_NAMES
from ...proto import framework_pb2
from . import kernel


def scalar_value(raw: bytes):
    """A Scalar message as the Python number its type says (bool, int64, double or complex)."""
    scalar = framework_pb2.Scalar.FromString(raw)
    kind = framework_pb2.Scalar.Type.Name(scalar.type)
    if kind == "COMPLEX128":
        return complex(scalar.c.r, scalar.c.i)
    return {"BOOLEAN": scalar.b, "LONG": scalar.i, "FLOAT64": scalar.r}[kind]


@kernel("assign_value")
def assign_value(k):
    """Out = the attribute's values in ``dtype`` and ``shape``: Scalar bytes (from a file) or numbers (a program
    built in Python). ValuesTensor is the var written in place (Paddle's assign_value_), not a source of values."""
    values = [v if isinstance(v, (bool, int, float, complex)) else scalar_value(v) for v in k.attr("values")]
    dtype = np.dtype(NUMPY_DTYPE_NAMES[k.attr("dtype")])
    return {"Out": np.array(values, dtype=dtype).reshape(k.attr("shape"))}
