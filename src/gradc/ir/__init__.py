"""Program / Block / OpDesc / VarDesc: the in-memory form of a ProgramDesc."""

from .descs import EMPTY_VAR, GRAD_SUFFIX, VAR_KINDS, OpDesc, VarDesc, grad_name, infer_attr_type, var_attrs_of
from .program import Block, Program
from .types import (
    COMPLEX_DTYPES,
    DIFFERENTIABLE_DTYPES,
    FLOAT_DTYPES,
    AttrType,
    VarType,
    as_float32,
    dtype_fits,
    dtype_name,
    real_dtype,
    stored_attr_value,
    to_var_type,
)

__all__ = [
    "COMPLEX_DTYPES", "DIFFERENTIABLE_DTYPES", "EMPTY_VAR", "GRAD_SUFFIX", "FLOAT_DTYPES", "AttrType", "Block",
    "OpDesc", "Program", "VAR_KINDS", "VarDesc", "VarType", "as_float32", "dtype_fits", "dtype_name", "grad_name",
    "infer_attr_type", "real_dtype", "stored_attr_value", "to_var_type", "var_attrs_of",
]
