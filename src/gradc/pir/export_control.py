"""Export of legacy control flow (forward) to PIR regions, the way Paddle's own legacy-to-PIR
translator spells it:

    conditional_block(cond) {ops}  -> pd_op.if(cond) {ops; cf.yield(outs)} else {cf.yield(old values or zeros)}
    select_input(X=[f, t], Mask)   -> pd_op.select_input(mask, f, t)
    while(cond) {ops}              -> pd_op.while(cond, loop vars) {^args; ops; cf.yield(cond, loop vars)}

A region sees the values outside it; what it writes is visible outside only through the op's results.
Their backward (conditional_block_grad, while_grad) has no export: PIR differentiates control flow with
its own if/while regions and cf stacks, which gradc does not build.
"""

from __future__ import annotations

from ..ir import OpDesc, VarType
from . import schema
from .graph import Attr, Block, Region, Value


def conditional_block(op: OpDesc, exporter) -> None:
    if not op.attrs.get("is_scalar_condition", False):
        raise exporter.fail("conditional_block on a tensor condition (is_scalar_condition false) has no PIR export")
    cond = exporter.read(op.input("Cond")[0])
    outs = op.output("Out")
    before = dict(exporter.current)
    true_block, false_block = Block(), Block()
    exporter.export_block(exporter.program.blocks[op.attrs["sub_block"]], true_block)
    _yield(exporter, true_block, [exporter.read(name) for name in outs])
    exporter.current = dict(before)
    fake = any(name not in before for name in outs)
    outer, exporter.target = exporter.target, false_block
    kept = [before[name] if name in before else _zeros(exporter, name) for name in outs]
    exporter.target = outer
    _yield(exporter, false_block, kept)
    exporter.current = before
    results = [exporter.new_value(name) for name in outs]
    if_op = exporter.emit("pd_op.if", [cond], results, {"fake_false_branch": Attr("a_bool", fake)} if fake else {})
    if_op.regions = [Region([true_block]), Region([false_block])]
    exporter.current.update(zip(outs, results))


def select_input(op: OpDesc, exporter) -> None:
    operands = [exporter.read(op.input("Mask")[0])] + [exporter.read(name) for name in op.input("X")]
    name = op.output("Out")[0]
    result = exporter.new_value(name)
    exporter.emit("pd_op.select_input", operands, [result], {})
    exporter.current[name] = result


def while_(op: OpDesc, exporter) -> None:
    condition = op.input("Condition")[0]
    carried = [name for name in op.output("Out") if name != condition]
    missing = [name for name in carried if name not in exporter.current
               and (exporter.var(name) is None or exporter.var(name).type != VarType.DENSE_TENSOR_ARRAY)]
    if missing:
        raise exporter.fail(f"loop var(s) {', '.join(missing)} have no value before the loop; a PIR while needs one")
    inits = [in_place_target(exporter, name) for name in carried]   # an array the body fills starts empty
    body = Block(args=[Value(0, exporter.type_of(name)) for name in carried])
    before = dict(exporter.current)
    exporter.current.update(zip(carried, body.args))
    exporter.export_block(exporter.program.blocks[op.attrs["sub_block"]], body)
    _yield(exporter, body, [exporter.read(condition)] + [exporter.read(name) for name in carried])
    exporter.current = before
    results = [exporter.new_value(name) for name in carried]
    loop = exporter.emit("pd_op.while", [exporter.read(condition)] + inits, results, {})
    loop.regions = [Region([body])]
    exporter.current.update(zip(carried, results))


def in_place_target(exporter, name: str):
    """The value a PIR op writes ``name`` into: its current value, else a new empty array
    (pd_op.create_array) or zeros of its shape, as Paddle makes them before array_write_ / assign_value_."""
    if name in exporter.current:
        return exporter.current[name]
    var = exporter.var(name)
    value = exporter.new_value(name)
    dtype = Attr("a_dtype", schema.DTYPE_BY_VARTYPE[value.type.dtype])
    if var.type == VarType.DENSE_TENSOR_ARRAY:
        exporter.emit("pd_op.create_array", [], [value], {"dtype": dtype})
    elif all(d >= 0 for d in value.type.dims):
        exporter.emit("pd_op.full", [], [value], {
            "shape": Attr("a_intarray", list(value.type.dims)), "value": Attr("a_f64", 0.0), "dtype": dtype,
            "place": Attr("a_place", list(schema.PLACE_CPU))})
    else:
        raise exporter.fail(f"'{name}' has no value before this op writes it and its shape {list(value.type.dims)} "
                            f"is not static")
    exporter.current[name] = value
    return value


def _yield(exporter, block: Block, values: list[Value]) -> None:
    outer, exporter.target = exporter.target, block
    exporter.emit("cf.yield", values, [], {})
    exporter.target = outer


def _zeros(exporter, name: str) -> Value:
    """The false branch's stand-in for a result only the true branch makes (select_input picks the
    true one whenever it matters)."""
    result = exporter.new_value(name)
    if any(d < 0 for d in result.type.dims):
        raise exporter.fail(f"'{name}' is written only when the condition holds, and its shape "
                            f"{list(result.type.dims)} is not static enough for a placeholder")
    exporter.emit("pd_op.full", [], [result], {
        "shape": Attr("a_intarray", list(result.type.dims)), "value": Attr("a_f64", 0.0),
        "dtype": Attr("a_dtype", schema.DTYPE_BY_VARTYPE[result.type.dtype]),
        "place": Attr("a_place", list(schema.PLACE_CPU))})
    return result
