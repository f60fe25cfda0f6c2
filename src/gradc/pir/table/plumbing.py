"""Special rows for ops that are vars, lists or constants rather than computations: parameters, data,
fetch targets, builtin.combine / split (list plumbing), coalesce_tensor, full / full_int_array,
create_array; and shape64, which legacy programs spell as shape and a cast."""

from __future__ import annotations

from ...ir import AttrType, VarType
from ...ops.creation import LEGACY_VALUES
from .. import schema
from ..graph import TensorType


def parameter(op, ctx) -> None:
    """A persistable var with the parameter's name, unless its value says otherwise (dy2static's rnn DropoutState,
    "<name>__non_persistable", which no parameter file holds); trainable ones are legacy parameters."""
    value = op.results[0]
    name = ctx.define(value, None, ctx.program.global_block)
    var = ctx.program.global_block.vars[name]
    var.persistable = None if value.persistable is False else True
    trainable = bool(op.attr("trainable", True)) and not value.stop_gradient
    var.is_parameter = True if op.attr("is_parameter", True) and trainable else None
    var.stop_gradient = None if trainable else True


def data(op, ctx) -> None:
    """An input var fed by name; legacy programs have no op for it. A persistable one (the optimizer's moments and
    learning rate in Paddle's PIR training programs) is state the scope holds, not an input."""
    ctx.attr(op, "name", str)
    name = ctx.define(op.results[0], None)
    var = ctx.block.vars[name]
    var.need_check_feed = None if var.persistable else True


def fetch(op, ctx) -> None:
    """The legacy fetch op; its target var carries the fetch name (an assign makes one if the
    fetched value already has another name, e.g. a parameter)."""
    fetch_name = ctx.attr(op, "name", str)
    col = ctx.attr(op, "col", int, default=0)
    source = ctx.args(op.operands[0], op, 0)[0]
    if source != fetch_name:
        if fetch_name not in ctx.block.vars:
            var = ctx.var(fetch_name, op.operands[0].type, op.operands[0])
            var.persistable = None
            ctx.block.add_var(var)
        ctx.emit("assign", {"X": [source]}, {"Out": [fetch_name]})
    if "fetch" not in ctx.program.global_block.vars:
        ctx.program.global_block.create_var("fetch", None, None, type=VarType.FETCH_LIST, persistable=True)
    ctx.emit("fetch", {"X": [fetch_name]}, {"Out": ["fetch"]}, {"col": col})
    ctx.bind(op.results[0], fetch_name)


def keep_persistable(op, ctx) -> None:
    """builtin.set_parameter / shadow_output (how a startup program initialises): the value is assigned to the
    persistable var of that name, a parameter for set_parameter."""
    is_parameter = op.name == "builtin.set_parameter"
    name = ctx.attr(op, "parameter_name" if is_parameter else "output_name", str)
    source = ctx.args(op.operands[0], op, 0)[0]
    block = ctx.program.global_block
    if name not in block.vars:
        block.add_var(ctx.var(name, op.operands[0].type, op.operands[0]))
    block.vars[name].persistable = True
    block.vars[name].is_parameter = True if is_parameter else None
    if source != name:
        ctx.emit("assign", {"X": [source]}, {"Out": [name]})


def combine(op, ctx) -> None:
    """A list of values: the legacy side is just the list of their names."""
    ctx.bind(op.results[0], [ctx.args(v, op, i)[0] for i, v in enumerate(op.operands)])


def split(op, ctx) -> None:
    items = ctx.args(op.operands[0], op, 0)
    if len(items) != len(op.results):
        raise ctx.fail(op, f"splits a list of {len(items)} into {len(op.results)} values")
    for value, name in zip(op.results, items):
        ctx.bind(value, name)


def slice_one(op, ctx) -> None:
    """One value of a list, at attribute ``index`` (the translator takes an in-place list result apart with it)."""
    items, index = ctx.args(op.operands[0], op, 0), ctx.attr(op, "index", int)
    if not 0 <= index < len(items):
        raise ctx.fail(op, f"takes item {index} of a list of {len(items)}")
    ctx.bind(op.results[0], items[index])


def coalesce(op, ctx) -> None:
    """Fuses a list of tensors into one buffer for speed; its list result is the same tensors."""
    ctx.bind(op.results[0], ctx.args(op.operands[0], op, 0))


def full(op, ctx) -> None:
    """fill_constant; dropped at the end if every reader took the value as an attribute."""
    dtype = schema.DTYPE_NAMES.get(ctx.attr(op, "dtype", str), VarType.FP32)
    value = ctx.attr(op, "value", int, float)
    shape = ctx.attr(op, "shape", list)
    name = ctx.define(op.results[0], ctx.namer.for_op("fill_constant"))
    ctx.emit_constant("fill_constant", {}, {"Out": [name]},
                      {"shape": shape, "dtype": int(dtype), "value": float(value),
                       "str_value": _str_value(value)},
                      {"shape": 11})  # LONGS, as Paddle's proto declares it


def full_int_array(op, ctx) -> None:
    """A constant int list; legacy ops take these as attributes, so readers fold it and the op is dropped. A
    reader that needs it as a tensor (a stack push) gets fill_constant of its one value (or of none), else
    assign_value of the list."""
    values = ctx.attr(op, "value", list)
    if not all(isinstance(v, int) for v in values):
        raise ctx.fail(op, f"attribute 'value' must be a list of ints, got {values!r:.60}")
    result = op.results[0]
    name = ctx.define(result, ctx.namer.for_op("fill_constant"))
    dtype = int(result.type.dtype if isinstance(result.type, TensorType) else VarType.INT64)
    if len(set(values)) <= 1:
        first = values[0] if values else 0
        ctx.emit_constant("fill_constant", {}, {"Out": [name]},
                          {"shape": [len(values)], "dtype": dtype, "value": float(first), "str_value": str(first)},
                          {"shape": AttrType.LONGS})
    else:
        field = LEGACY_VALUES.get(dtype, "int64_values")
        ctx.emit_constant("assign_value", {}, {"Out": [name]}, {"shape": [len(values)], "dtype": dtype, field: values},
                          {"shape": AttrType.INTS, field: AttrType.INTS if field == "int32_values" else AttrType.LONGS})


def create_array(op, ctx) -> None:
    """An empty tensor array: legacy programs declare the var and let write_to_array fill it. It is not
    stop_gradient: it holds what is written into it (Paddle 3.3.1 marks it so, and its backward then gives a while
    loop's x no gradient through the array: known_issues.while_loop_array)."""
    ctx.attr(op, "dtype", str)
    name = ctx.define(op.results[0], ctx.namer.for_op("create_array"))
    ctx.block.find_var(name).stop_gradient = None


def shape64(op, ctx) -> None:
    """The legacy shape op makes int32: shape, then a cast to the int64 PIR promises."""
    source = ctx.args(op.operands[0], op, 0)[0]
    if not isinstance(op.results[0].type, TensorType):
        raise ctx.fail(op, "the result of pd_op.shape64 must be a tensor")
    dims = ctx.namer.fresh("shape")
    ctx.block.create_var(dims, list(op.results[0].type.dims), VarType.INT32, stop_gradient=True)
    ctx.emit("shape", {"Input": [source]}, {"Out": [dims]})
    name = ctx.define(op.results[0], ctx.namer.for_op("cast"))
    ctx.emit("cast", {"X": [dims]}, {"Out": [name]}, {"in_dtype": int(VarType.INT32), "out_dtype": int(VarType.INT64)})


def _str_value(value) -> str:
    number = float(value)
    return str(int(number)) if number.is_integer() and abs(number) < 1e15 else repr(number)


def unexpected_yield(op, ctx) -> None:
    raise ctx.fail(op, "cf.yield outside of the region of a pd_op.if or pd_op.while")
