"""Enums of the wire format, as plain ints, plus the numpy dtype mapping the executor uses."""

import math
import struct
from enum import IntEnum


class AttrType(IntEnum):
    INT = 0
    FLOAT = 1
    STRING = 2
    INTS = 3
    FLOATS = 4
    STRINGS = 5
    BOOLEAN = 6
    BOOLEANS = 7
    BLOCK = 8
    LONG = 9
    BLOCKS = 10
    LONGS = 11
    FLOAT64S = 12
    VAR = 13
    VARS = 14
    FLOAT64 = 15
    SCALAR = 16
    SCALARS = 17


class VarType(IntEnum):
    BOOL = 0
    INT16 = 1
    INT32 = 2
    INT64 = 3
    FP16 = 4
    FP32 = 5
    FP64 = 6
    DENSE_TENSOR = 7
    SELECTED_ROWS = 8
    FEED_MINIBATCH = 9
    FETCH_LIST = 10
    STEP_SCOPES = 11
    LOD_RANK_TABLE = 12
    DENSE_TENSOR_ARRAY = 13
    PLACE_LIST = 14
    READER = 15
    RAW = 17
    TUPLE = 18
    SIZE_T = 19
    UINT8 = 20
    INT8 = 21
    BF16 = 22
    COMPLEX64 = 23
    COMPLEX128 = 24
    STRING = 25
    STRINGS = 26
    VOCAB = 27
    FEED_LIST = 28
    PSTRING = 29
    SPARSE_COO = 30
    SPARSE_CSR = 31
    FP8_E4M3FN = 32
    FP8_E5M2 = 33
    UINT16 = 36
    UINT32 = 37
    UINT64 = 38


FLOAT_DTYPES = frozenset({VarType.FP16, VarType.FP32, VarType.FP64, VarType.BF16})
# float8: few ops take them (float kernels refuse them), but a gradient flows through them as in Paddle: a cast's
# grad casts the gradient back, so a float8 var's grad is float8 too
FLOAT8_DTYPES = frozenset({VarType.FP8_E4M3FN, VarType.FP8_E5M2})
COMPLEX_DTYPES = frozenset({VarType.COMPLEX64, VarType.COMPLEX128})
# vars a gradient flows through: a complex var's grad is dL/dRe + i dL/dIm (Paddle's convention)
DIFFERENTIABLE_DTYPES = FLOAT_DTYPES | FLOAT8_DTYPES | COMPLEX_DTYPES
INTEGER_DTYPES = frozenset({VarType.UINT8, VarType.INT8, VarType.INT16, VarType.INT32, VarType.INT64})   # not bool


def dtype_fits(declared: int, inferred: int) -> bool:
    """Whether a var declared ``declared`` may hold what an op's inference gives: the same type, or two integer types
    (Paddle's legacy API declares int64 where its kernel writes int32, as matrix_nms's Index; no gradient to type)."""
    return int(declared) == int(inferred) or (declared in INTEGER_DTYPES and inferred in INTEGER_DTYPES)

# numpy names rather than numpy objects: the compiler side must not import numpy.
NUMPY_DTYPE_NAMES = {
    VarType.BOOL: "bool",
    VarType.INT8: "int8",
    VarType.INT16: "int16",
    VarType.INT32: "int32",
    VarType.INT64: "int64",
    VarType.UINT8: "uint8",
    VarType.UINT16: "uint16",
    VarType.UINT32: "uint32",
    VarType.UINT64: "uint64",
    VarType.FP16: "float16",
    VarType.FP32: "float32",
    VarType.FP64: "float64",
    VarType.COMPLEX64: "complex64",
    VarType.COMPLEX128: "complex128",
}
DTYPE_BY_NUMPY_NAME = {name: vt for vt, name in NUMPY_DTYPE_NAMES.items()}
# the data types a dtype attribute may name: numpy's, bfloat16 and float8 (the executor's are float32,
# gradc.bfloat16, gradc.float8)
TENSOR_DTYPES = frozenset(NUMPY_DTYPE_NAMES) | {VarType.BF16} | FLOAT8_DTYPES
_PADDLE_NAMES = {"bfloat16": VarType.BF16, "float8_e4m3fn": VarType.FP8_E4M3FN, "float8_e5m2": VarType.FP8_E5M2}


def real_dtype(dtype: int | None) -> int | None:
    """The real dtype of a complex one's parts (complex64 -> float32); any other dtype as it is."""
    return {VarType.COMPLEX64: VarType.FP32, VarType.COMPLEX128: VarType.FP64}.get(dtype, dtype)


def dtype_name(dtype: int | None) -> str:
    """A short readable name for a VarType data type ("float32", "BF16", ...)."""
    if dtype is None:
        return "?"
    if dtype in NUMPY_DTYPE_NAMES:
        return NUMPY_DTYPE_NAMES[dtype]
    try:
        return VarType(dtype).name
    except ValueError:
        return f"type{dtype}"


def to_var_type(dtype) -> int:
    """Accept a VarType, its int, or a numpy dtype name ("float32", and "bfloat16", "float8_e4m3fn", "float8_e5m2")
    and return the VarType int."""
    if isinstance(dtype, str):
        if dtype in DTYPE_BY_NUMPY_NAME:
            return DTYPE_BY_NUMPY_NAME[dtype]
        return _PADDLE_NAMES[dtype] if dtype in _PADDLE_NAMES else VarType[dtype.upper()]   # Paddle's name of it
    if hasattr(dtype, "name") and not isinstance(dtype, IntEnum):  # a numpy dtype
        return DTYPE_BY_NUMPY_NAME[dtype.name]
    return int(dtype)


def as_float32(value: float) -> float:
    """The float32 nearest to value, as C's cast to float gives it (beyond float32's range: inf)."""
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def _float32_number(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    rounded = as_float32(float(value))
    return value if rounded == value else rounded   # an int a float32 holds stays an int


def stored_attr_value(kind: int, value):
    """The value an attribute of wire type ``kind`` holds: a FLOAT (FLOATS) attribute is float32 on the wire and
    in Paddle's kernels, so a Python number set there is rounded to float32 (1e-5 -> 9.99999974737875e-06)."""
    if kind == AttrType.FLOAT:
        return _float32_number(value)
    if kind == AttrType.FLOATS and isinstance(value, (list, tuple)):
        return [_float32_number(v) for v in value]
    return value
