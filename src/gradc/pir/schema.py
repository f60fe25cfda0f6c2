"""The vocabulary of Paddle's PIR JSON files (docs/pir-format.md): keys, dialect ids, versions, dtypes.

Facts of the format as Paddle 3.3.1 writes it (paddle/fluid/pir/serialize_deserialize/include/schema.h).
"""

from __future__ import annotations

from ..ir import VarType

MAGIC = "pir"
# base_code.version: the PIR format version, independent of Paddle's release number. Paddle's source
# tree holds upgrade patches for 1..4; Paddle 3.3.1 writes 4. 0 is an unreleased develop build.
KNOWN_VERSIONS = frozenset({1, 2, 3, 4})
WRITE_VERSION = 4

# keys
ID, VALUE_ID, DATA, VOID_DATA = "#", "%", "D", "VD"
OPERANDS, RESULTS, ATTRS, RESULT_ATTRS, DIST_ATTRS, QUANT_ATTRS = "I", "O", "A", "OA", "DA", "QA"
REGIONS, BLOCKS, ARGS, KWARGS, KWARG_NAME, OPS = "regions", "blocks", "args", "kwargs", "key", "ops"
TYPE, NAME, ATTR_TYPE = "TT", "N", "AT"
NULL_TYPE = "NULL"
PARAMETER_OP = "p"  # builtin.parameter, written compactly

# dialect name <-> the id that prefixes op, type and attribute names in files
DIALECT_IDS = {"builtin": "0", "pd_op": "1", "cf": "2", "custom_op": "3", "dist_op": "4"}
DIALECT_NAMES = {v: k for k, v in DIALECT_IDS.items()}

# element types (builtin dialect "t_*") <-> legacy VarType
ELEMENT_TYPES = {
    "t_bool": VarType.BOOL, "t_i8": VarType.INT8, "t_ui8": VarType.UINT8, "t_i16": VarType.INT16,
    "t_i32": VarType.INT32, "t_i64": VarType.INT64, "t_f16": VarType.FP16, "t_bf16": VarType.BF16,
    "t_f32": VarType.FP32, "t_f64": VarType.FP64, "t_c64": VarType.COMPLEX64, "t_c128": VarType.COMPLEX128,
    "t_f8e4m3fn": VarType.FP8_E4M3FN, "t_f8e5m2": VarType.FP8_E5M2,
}
ELEMENT_TYPE_NAMES = {v: k for k, v in ELEMENT_TYPES.items()}
# tensor-like types: their D is [element type, dims, layout, lod, offset] (arrays: the first three)
TENSOR_TYPES = {"t_dtensor": VarType.DENSE_TENSOR, "t_selected_rows": VarType.SELECTED_ROWS,
                "t_dense_tensor_array": VarType.DENSE_TENSOR_ARRAY, "t_sparse_coo_tensor": VarType.SPARSE_COO,
                "t_sparse_csr_tensor": VarType.SPARSE_CSR}
# sparse types: D is [element type, dims, non-zero dims, layout, its indices' type, its values' type]
SPARSE_TYPES = ("t_sparse_coo_tensor", "t_sparse_csr_tensor")
VECTOR_TYPE = "t_vec"

# a_dtype strings (phi::DataTypeToString) <-> legacy VarType; -1 is Paddle's "undefined" dtype attr
DTYPE_NAMES = {
    "bool": VarType.BOOL, "int8": VarType.INT8, "uint8": VarType.UINT8, "int16": VarType.INT16,
    "uint16": VarType.UINT16, "int32": VarType.INT32, "uint32": VarType.UINT32, "int64": VarType.INT64,
    "uint64": VarType.UINT64, "float16": VarType.FP16, "bfloat16": VarType.BF16, "float32": VarType.FP32,
    "float64": VarType.FP64, "complex64": VarType.COMPLEX64, "complex128": VarType.COMPLEX128,
    "float8_e4m3fn": VarType.FP8_E4M3FN, "float8_e5m2": VarType.FP8_E5M2,
}
UNDEFINED_DTYPE = "Undefined(ALL_DTYPE)"
DTYPE_BY_VARTYPE = {v: k for k, v in DTYPE_NAMES.items()}

# a row's attribute kind -> the family of PIR attribute kinds it reads: the format's versions change a number's
# kind (kthvalue's k a_i32 to a_i64, float attributes a_f32 to a_f64), never a number into a list
_NUMBERS, _LISTS = ("bool", "i32", "i64", "f32", "f64"), ("intarray", "i32s", "i64s", "f32s", "f64s", "strs")
ATTR_FAMILIES = {**dict.fromkeys(_NUMBERS, "a number"), **dict.fromkeys(_LISTS, "a list"), "str": "a string",
                 "dtype": "a dtype", "place": "a place"}
_FAMILIES = {**{f"a_{kind}": "a number" for kind in _NUMBERS}, "a_array": "a list", "a_intarray": "a list",
             "a_str": "a string", "a_dtype": "a dtype", "a_place": "a place"}


def attr_family(kind: str) -> str:
    return _FAMILIES.get(kind, kind)


# a_place: [allocation type, device id, device type]; 0 undefined, 1 CPU
PLACE_UNDEFINED = [0, 0, ""]
PLACE_CPU = [1, 0, ""]


def split_name(name: str) -> tuple[str, str]:
    """'1.matmul' -> ('pd_op', 'matmul'); an unknown dialect id is kept as written."""
    dialect, _, rest = name.partition(".")
    return DIALECT_NAMES.get(dialect, dialect), rest


def full_name(compressed: str) -> str:
    """The op name Paddle prints: '1.matmul' -> 'pd_op.matmul', 'p' -> 'builtin.parameter'."""
    if compressed == PARAMETER_OP:
        return "builtin.parameter"
    dialect, rest = split_name(compressed)
    return f"{dialect}.{rest}" if rest else compressed


def compressed_name(name: str) -> str:
    """'pd_op.matmul' -> '1.matmul'; an op of a dialect Paddle 3.3.1's map of op dialects has no id for keeps its name
    (dist_op: "can't find dialect dist_op's compress id", though its types and attributes are written 4.*; onednn_op,
    whose ops a oneDNN-optimised model holds)."""
    dialect, _, rest = name.partition(".")
    return name if dialect == "dist_op" or dialect not in DIALECT_IDS else f"{DIALECT_IDS[dialect]}.{rest}"
