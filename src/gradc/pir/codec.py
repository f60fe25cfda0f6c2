"""PIR types and attributes <-> their JSON form ({"#": "<dialect id>.<kind>", "D": data}).

Decoding checks every shape of data it relies on and raises CodecError (the reader adds where);
nesting of arrays and vector types is bounded so a hostile file cannot exhaust the stack.
"""

from __future__ import annotations

import json
import math

from ..ir import as_float32
from . import schema
from .graph import Attr, OtherType, TensorType, VectorType

MAX_NESTING = 64
_FLOAT_KINDS = {"a_f32", "a_f64"}
_INT_KINDS = {"a_i32", "a_i64", "a_index"}
_SPECIAL_FLOATS = {"NaN": math.nan, "NAN": math.nan, "INF": math.inf, "-INF": -math.inf}
_CONTROL_FLOW_TYPES = {"t_stack", "t_inlet", "t_outlet"}
# auto-parallel's attributes (process meshes, placements of values and of an op's operands and results): gradc
# keeps them as written (JSON data) and writes them back; DIST_TYPE is a value spread over a mesh
DIST_ATTRS = ("a_process_mesh", "a_tensor_dist", "a_op_dist", "a_placements")
DIST_TYPE = "t_dist_dtensor"


class CodecError(ValueError):
    """A type or attribute the reader cannot decode; the message says what, not where."""


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _kind(data, what: str) -> str:
    if not isinstance(data, dict) or not isinstance(data.get(schema.ID), str):
        raise CodecError(f"{what} is not an object with a '#' name")
    dialect, _, kind = data[schema.ID].partition(".")
    if not kind or dialect not in schema.DIALECT_NAMES:
        raise CodecError(f"{what} '{data[schema.ID]}' has no known dialect prefix")
    return kind


# ---------------------------------------------------------------- types

def decode_type(data, depth: int = 0):
    if depth > MAX_NESTING:
        raise CodecError(f"types nested deeper than {MAX_NESTING}")
    if isinstance(data, dict) and data.get(schema.ID) == schema.NULL_TYPE:
        return None
    kind = _kind(data, "type")
    body = data.get(schema.DATA)
    if kind in schema.SPARSE_TYPES:
        return _sparse_type(kind, body)
    if kind == DIST_TYPE:
        return _dist_type(body, depth)
    if kind in schema.TENSOR_TYPES:
        if not isinstance(body, list) or len(body) < 3 or not isinstance(body[1], list):
            raise CodecError(f"type {kind} needs D = [element type, dims, layout, ...], got {body!r:.80}")
        element = _kind(body[0], f"element type of {kind}")
        if element not in schema.ELEMENT_TYPES:
            raise CodecError(f"unknown element type '{element}' in {kind}")
        if not all(_is_int(d) for d in body[1]):
            raise CodecError(f"dims of {kind} are not integers: {body[1]!r:.80}")
        lod = body[3] if len(body) > 3 and isinstance(body[3], list) else []
        if not all(isinstance(level, list) and all(_is_int(v) for v in level) for level in lod):
            raise CodecError(f"lod of {kind} is not a list of int lists: {lod!r:.80}")
        lod = tuple(tuple(level) for level in lod)
        offset = body[4] if len(body) > 4 and _is_int(body[4]) else 0
        return TensorType(kind, schema.ELEMENT_TYPES[element], tuple(body[1]), str(body[2]), lod, offset)
    if kind == schema.VECTOR_TYPE:
        if not isinstance(body, list):
            raise CodecError(f"type t_vec needs a list D, got {body!r:.80}")
        return VectorType(tuple(decode_type(item, depth + 1) for item in body))
    if kind in schema.ELEMENT_TYPES or kind in _CONTROL_FLOW_TYPES:
        return OtherType(kind)
    raise CodecError(f"unknown type '{data[schema.ID]}'")


def _dist_type(body, depth: int) -> TensorType:
    """A value of an auto-parallel program: D = [its dense type (global dims), its tensor_dist attribute, the dims
    of the part this rank holds] (Paddle's dist_type.h); gradc computes with this rank's part."""
    if not isinstance(body, list) or len(body) != 3 or not isinstance(body[2], list) or \
            not all(_is_int(d) for d in body[2]):
        raise CodecError(f"type {DIST_TYPE} needs D = [dense type, tensor_dist, local dims], got {body!r:.80}")
    dense = decode_type(body[0], depth + 1)
    if not isinstance(dense, TensorType) or dense.kind != "t_dtensor" or len(body[2]) != len(dense.dims):
        raise CodecError(f"type {DIST_TYPE} needs a t_dtensor of as many dims as its local dims, got {body!r:.80}")
    spread = decode_attr(body[1], depth + 1)
    if spread.kind != "a_tensor_dist":
        raise CodecError(f"type {DIST_TYPE} needs an a_tensor_dist, got {spread.kind}")
    return TensorType(dense.kind, dense.dtype, tuple(body[2]), dense.layout, dense.lod, dense.offset,
                      (dense.dims, json.dumps(body[1], sort_keys=True)))


# where a sparse type's D holds its layout: COO [element, dims, non-zero dims, layout, indices, values], CSR
# [element, dims, layout, crows, cols, values] (Paddle's serialize_utils.h)
_SPARSE_LAYOUT_AT = {"t_sparse_coo_tensor": 3, "t_sparse_csr_tensor": 2}


def _sparse_type(kind: str, body) -> TensorType:
    """A sparse type as a TensorType of its element type, dims and layout (Paddle writes the rest from those)."""
    if not isinstance(body, list) or len(body) != 6 or not isinstance(body[1], list) or \
            not all(_is_int(d) for d in body[1]):
        parts = "non-zero dims, layout, indices' type" if kind == "t_sparse_coo_tensor" else \
            "layout, crows' type, cols' type"
        raise CodecError(f"type {kind} needs D = [element type, dims, {parts}, values' type], got {body!r:.80}")
    element = _kind(body[0], f"element type of {kind}")
    if element not in schema.ELEMENT_TYPES:
        raise CodecError(f"unknown element type '{element}' in {kind}")
    return TensorType(kind, schema.ELEMENT_TYPES[element], tuple(body[1]), str(body[_SPARSE_LAYOUT_AT[kind]]))


def encode_type(type_) -> dict:
    if type_ is None:
        return {schema.ID: schema.NULL_TYPE}
    if isinstance(type_, VectorType):
        return {schema.ID: "0.t_vec", schema.DATA: [encode_type(item) for item in type_.items]}
    if isinstance(type_, OtherType):
        prefix = "2" if type_.kind in _CONTROL_FLOW_TYPES else "0"
        return {schema.ID: f"{prefix}.{type_.kind}"}
    if type_.dist:
        global_dims, spread = type_.dist
        dense = TensorType(type_.kind, type_.dtype, global_dims, type_.layout, type_.lod, type_.offset)
        return {schema.ID: f"4.{DIST_TYPE}", schema.DATA: [encode_type(dense), json.loads(spread), list(type_.dims)]}
    prefix = "0" if type_.kind == "t_dtensor" else "1"
    element = {schema.ID: "0." + schema.ELEMENT_TYPE_NAMES[type_.dtype]}
    if type_.kind in schema.SPARSE_TYPES:   # its indices' and values' types as Paddle writes them: undefined tensors
        part = {schema.ID: "0.t_dtensor", schema.DATA: [element, [], "Undefined(AnyLayout)", [], 0]}
        if type_.kind == "t_sparse_csr_tensor":
            return {schema.ID: f"1.{type_.kind}", schema.DATA: [element, list(type_.dims), type_.layout, part, part,
                                                                part]}
        return {schema.ID: f"1.{type_.kind}", schema.DATA: [element, list(type_.dims), [], type_.layout, part, part]}
    data = [element, list(type_.dims), type_.layout]
    if type_.kind != "t_dense_tensor_array":
        data += [[list(level) for level in type_.lod], type_.offset]
    return {schema.ID: f"{prefix}.{type_.kind}", schema.DATA: data}


# ---------------------------------------------------------------- attributes

def decode_attr(data, depth: int = 0) -> Attr:
    if depth > MAX_NESTING:
        raise CodecError(f"attributes nested deeper than {MAX_NESTING}")
    kind = _kind(data, "attribute")
    body = data.get(schema.DATA)
    if kind in _FLOAT_KINDS:
        if schema.VOID_DATA in data and data[schema.VOID_DATA] in _SPECIAL_FLOATS:
            return Attr(kind, _SPECIAL_FLOATS[data[schema.VOID_DATA]])
        if isinstance(body, (int, float)) and not isinstance(body, bool):
            return Attr(kind, as_float32(float(body)) if kind == "a_f32" else float(body))
    elif kind in _INT_KINDS:
        if _is_int(body):
            return Attr(kind, body)
    elif kind == "a_bool":
        if isinstance(body, bool):
            return Attr(kind, body)
    elif kind in ("a_str", "a_tensorname", "a_layout", "a_dtype"):
        if isinstance(body, str):
            if kind == "a_dtype" and body not in schema.DTYPE_NAMES and body != schema.UNDEFINED_DTYPE:
                raise CodecError(f"unknown dtype '{body}' in a_dtype")
            return Attr(kind, body)
    elif kind == "a_array":
        if isinstance(body, list):
            return Attr(kind, [decode_attr(item, depth + 1) for item in body])
    elif kind == "a_intarray":
        if isinstance(body, list) and all(_is_int(v) for v in body):
            return Attr(kind, list(body))
    elif kind == "a_scalar":
        if isinstance(body, list) and len(body) >= 2 and isinstance(body[0], str) \
                and all(isinstance(v, (int, float)) for v in body[1:]):
            return Attr(kind, list(body))
    elif kind == "a_place":
        if isinstance(body, list) and len(body) == 3 and _is_int(body[0]) and _is_int(body[1]):
            return Attr(kind, list(body))
    elif kind in ("a_c64", "a_c128"):
        if isinstance(body, list) and len(body) == 2 and all(isinstance(v, (int, float)) for v in body):
            return Attr(kind, complex(body[0], body[1]))
    elif kind == "a_type":
        return Attr(kind, decode_type(body, depth + 1))
    elif kind in DIST_ATTRS:
        if isinstance(body, list):
            return Attr(kind, body)
    else:
        raise CodecError(f"unknown attribute kind '{data[schema.ID]}'")
    raise CodecError(f"attribute kind {kind} cannot hold {body!r:.80}")


_ATTR_PREFIX = {"a_intarray": "1", "a_scalar": "1", "a_dtype": "1", "a_place": "1", "a_layout": "1",
                **dict.fromkeys(DIST_ATTRS, "4")}


def encode_attr(attr: Attr) -> dict:
    out = {schema.ID: f"{_ATTR_PREFIX.get(attr.kind, '0')}.{attr.kind}"}
    value = attr.value
    if attr.kind == "a_array":
        out[schema.DATA] = [encode_attr(item) for item in value]
    elif attr.kind in _FLOAT_KINDS and (math.isnan(value) or math.isinf(value)):
        # Paddle 3.3.1 writes "NaN" but reads only "NAN": write what it reads
        out[schema.VOID_DATA] = "NAN" if math.isnan(value) else ("INF" if value > 0 else "-INF")
    elif attr.kind in ("a_c64", "a_c128"):
        out[schema.DATA] = [value.real, value.imag]
    elif attr.kind == "a_type":
        out[schema.DATA] = encode_type(value)
    else:
        out[schema.DATA] = value
    return out
