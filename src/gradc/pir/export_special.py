"""Export of the legacy ops that are not one table row (fill_constant, feed, fetch) and of attribute
values into the PIR kinds a row names."""

from __future__ import annotations

from ..ir import GRAD_SUFFIX, OpDesc, VarType, roles
from . import export_control, export_grads, export_legacy, export_pylayer, schema
from .graph import Attr
from .table.rows import EXPORTS

_SCALAR_KINDS = {"bool": ("a_bool", bool), "i32": ("a_i32", int), "i64": ("a_i64", int), "f32": ("a_f32", float),
                 "f64": ("a_f64", float), "str": ("a_str", str)}
_ARRAY_KINDS = {"i32s": ("a_i32", int), "i64s": ("a_i64", int), "f32s": ("a_f32", float), "f64s": ("a_f64", float),
                "strs": ("a_str", str)}


def encode_attr_value(kind: str, value, exporter) -> Attr:
    """A legacy attribute value as the PIR attribute kind of a row (``i32s`` -> a_array of a_i32, ...)."""
    try:
        if kind in _SCALAR_KINDS:
            name, cast = _SCALAR_KINDS[kind]
            return Attr(name, cast(value))
        if kind in _ARRAY_KINDS:   # a complex literal's numbers are a_c128 (as Paddle writes them)
            name, cast = _ARRAY_KINDS[kind]
            return Attr("a_array", [Attr("a_c128", v) if isinstance(v, complex) else Attr(name, cast(v))
                                    for v in value])
        if kind == "intarray":
            return Attr("a_intarray", [int(v) for v in value])
        if kind == "dtype":
            return Attr("a_dtype", value if isinstance(value, str) else
                        schema.DTYPE_BY_VARTYPE.get(int(value), schema.UNDEFINED_DTYPE))
        if kind == "place":   # [allocation type, device id, device type]
            allocation, device, device_type = value
            return Attr("a_place", [int(allocation), int(device), str(device_type)])
    except (TypeError, ValueError):
        raise exporter.fail(f"attribute value {value!r:.60} does not fit PIR kind {kind}") from None
    raise exporter.fail(f"unknown attribute kind {kind} in gradc's PIR table")


def fill_constant(op: OpDesc, exporter) -> None:
    """pd_op.full; with a shape or value computed in the program, pd_op.full_with_tensor (its table row)."""
    if any(op.input(slot) for slot in ("ShapeTensor", "ShapeTensorList", "ValueTensor")):
        exporter.generic(EXPORTS["fill_constant"][0], op)
        return
    name = op.output("Out")[0]
    loss = name.removesuffix(GRAD_SUFFIX)
    if roles.has_role(op, roles.LOSS | roles.BACKWARD) and op.attrs.get("value") == 1.0 and loss in exporter.current:
        # the backward's seed as Paddle writes it, ones like the loss: PIR keeps no op_role, so a reader finds the
        # loss by it (a program fetching several scalars: a distillation's loss, KL and feature MSE)
        seed = OpDesc("fill_any_like", {"X": [loss]}, {"Out": [name]}, {"value": 1.0, "dtype": -1})
        exporter.generic(EXPORTS["fill_any_like"][0], seed)
        return
    text = op.attrs.get("str_value") or ""
    value = float(text) if text else float(op.attrs.get("value", 0.0))
    result = exporter.new_value(name)
    if list(op.attrs.get("shape", [])) == [0] and result.type.dtype in (VarType.INT32, VarType.INT64):
        # an empty int list, as Paddle makes one: its pd_op.full of no elements holds no memory to push to a stack
        exporter.emit("pd_op.full_int_array", [], [result], {
            "value": Attr("a_array", []), "dtype": Attr("a_dtype", schema.DTYPE_BY_VARTYPE[result.type.dtype]),
            "place": Attr("a_place", list(schema.PLACE_CPU))})
        exporter.current[name] = result
        return
    exporter.emit("pd_op.full", [], [result], {
        "shape": Attr("a_intarray", [int(d) for d in op.attrs.get("shape", [])]), "value": Attr("a_f64", value),
        "dtype": Attr("a_dtype", schema.DTYPE_BY_VARTYPE[result.type.dtype]),
        "place": Attr("a_place", list(schema.PLACE_CPU))})
    exporter.current[name] = result


def fetch(op: OpDesc, exporter) -> None:
    exporter.append_fetch(op.input("X")[0], int(op.attrs.get("col", 0)))


def feed(op: OpDesc, exporter) -> None:
    """A saved inference program's feed op reads its input from a holder: PIR names the input itself (block 0's
    feed ops are its data ops already, in col order)."""
    name = op.output("Out")[0]
    if name not in exporter.inputs:
        exporter.current[name] = exporter.data(name)


def data(op: OpDesc, exporter) -> None:
    """A legacy data op (paddle.static.data under FLAGS_enable_pir_in_executor) names its fed var: PIR's data op."""
    name = op.output("out")[0]
    if name not in exporter.current:
        exporter.current[name] = exporter.data(name)


SPECIAL_EXPORTS = {"fill_constant": fill_constant, "fetch": fetch, "feed": feed, "data": data,
                   "conditional_block": export_control.conditional_block, "select_input": export_control.select_input,
                   "while": export_control.while_, "conditional_block_grad": export_grads.conditional_block_grad,
                   "while_grad": export_grads.while_grad, "select_output": export_grads.select_output,
                   "mul": export_legacy.mul, "mul_grad": export_legacy.mul_grad, "pad_grad": export_legacy.pad_grad,
                   "fill_zeros_like": export_legacy.fill_zeros_like, "fill_any_like": export_legacy.fill_zeros_like,
                   "lookup_table": export_legacy.lookup_table, "lookup_table_grad": export_legacy.lookup_table_grad,
                   "merged_momentum": export_legacy.merged_momentum, "pylayer": export_pylayer.pylayer,
                   "pylayer_grad": export_pylayer.pylayer_grad, "set_value_grad": export_legacy.set_value_grad,
                   "one_hot_v2": export_legacy.one_hot, "sum": export_legacy.sum_}

