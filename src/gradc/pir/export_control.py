"""Export of legacy control flow (forward) to PIR regions, the way Paddle's own legacy-to-PIR
translator spells it:

    conditional_block(cond) {ops}  -> pd_op.if(cond) {ops; cf.yield(outs)} else {cf.yield(old values or zeros)}
    select_input(X=[f, t], Mask)   -> pd_op.select_input(mask, f, t)
    while(cond) {ops}              -> pd_op.while(cond, loop vars) {^args; ops; cf.yield(cond, loop vars)}

A region sees the values outside it; what it writes is visible outside only through the op's results,
except tensor arrays, which PIR writes in place (array_write_): a branch's array is a result only where the branch
binds it to a copy. When the
program differentiates the block (gradc.pir.export_grads), the region ends by pushing the values its
grad block reads onto a cf stack (cf.tuple_push).
"""

from __future__ import annotations

from contextlib import contextmanager

from ..ir import OpDesc, VarType
from ..ops.control_flow import updated_in_place
from . import schema
from .graph import Attr, Block, OtherType, Region, TensorType, Value


def conditional_block(op: OpDesc, exporter) -> None:
    if not op.attrs.get("is_scalar_condition", False):
        raise exporter.fail("conditional_block on a tensor condition (is_scalar_condition false) has no PIR export")
    cond = exporter.read(op.input("Cond")[0])
    sub = exporter.program.blocks[op.attrs["sub_block"]]
    outs = _tensors(exporter, op.output("Out")) + _copied_arrays(exporter, sub, op.output("Out"))
    before = dict(exporter.current)
    true_block, false_block = Block(), Block()
    exporter.export_block(sub, true_block)
    save_for_backward(exporter, op.attrs["sub_block"], true_block)
    _yield(exporter, true_block, [exporter.read(name) for name in outs])
    exporter.current = dict(before)
    fake = any(name not in before for name in outs)
    with emitting_into(exporter, false_block):
        kept = [before[name] if name in before else _zeros(exporter, name) for name in outs]
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
    carried = [name for name in _tensors(exporter, op.output("Out")) if name != condition]
    missing = [name for name in carried if name not in exporter.current]
    if missing:
        raise exporter.fail(f"loop var(s) {', '.join(missing)} have no value before the loop; a PIR while needs one")
    inits = [exporter.read(name) for name in carried]
    body = Block(args=[Value(0, exporter.type_of(name)) for name in carried])
    before = dict(exporter.current)
    exporter.current.update(zip(carried, body.args))
    sub = exporter.program.blocks[op.attrs["sub_block"]]
    exporter.export_block(sub, body)
    in_place = updated_in_place(sub)   # a backward reads the value a loop var had when the iteration started
    starts = {name: arg for name, arg in zip(carried, body.args) if name not in in_place}
    save_for_backward(exporter, sub.idx, body, starts)
    _yield(exporter, body, [exporter.read(condition)] + [exporter.read(name) for name in carried])
    exporter.current = before
    results = [exporter.new_value(name) for name in carried]
    loop = exporter.emit("pd_op.while", [exporter.read(condition)] + inits, results, {})
    loop.regions = [Region([body])]
    exporter.current.update(zip(carried, results))


def _copied_arrays(exporter, block, names: list[str]) -> list[str]:
    """The arrays a branch last binds to a new array (a copy: assign_array), not written in place: the if yields
    them, as Paddle's own programs do, else the ops after it would read the array as it was before."""
    last_writer = {name: inner.type for inner in block.ops for name in inner.output_names()}
    return [name for name in names if getattr(exporter.var(name), "type", None) == VarType.DENSE_TENSOR_ARRAY
            and last_writer.get(name, "write_to_array") not in ("write_to_array", "conditional_block", "while")]


def _tensors(exporter, names: list[str]) -> list[str]:
    """The outputs a region yields; tensor arrays it writes in place are made before it if need be."""
    tensors = []
    for name in names:
        var = exporter.var(name)
        if var is not None and var.type == VarType.DENSE_TENSOR_ARRAY:
            in_place_target(exporter, name)
        else:
            tensors.append(name)
    return tensors


# ---------------------------------------------------------------- stacks for the backward

def stack_for(exporter, forward_block: int) -> tuple[Value, Value, Value]:
    """The cf stack of a forward block's saved values, created at the top of the program so the forward
    region and the grad region both see it."""
    if forward_block not in exporter.stacks:
        values = tuple(Value(0, OtherType(kind)) for kind in ("t_stack", "t_inlet", "t_outlet"))
        with emitting_into(exporter, exporter.body):
            create = exporter.emit("cf.stack_create", [], list(values), {})
        exporter.body.ops.insert(0, exporter.body.ops.pop(exporter.body.ops.index(create)))
        exporter.stacks[forward_block] = values
    return exporter.stacks[forward_block]


def save_for_backward(exporter, forward_block: int, target: Block, starts: dict | None = None) -> None:
    """Push the values of this run of the block that its grad block reads (loop vars: as the iteration
    started; an XShape: the X it describes)."""
    names = exporter.saves.get(forward_block)
    if names is None:
        return
    values = [(starts or {}).get(name) or exporter.xshape_source.get(name) or exporter.read(name) for name in names]
    _, inlet, _ = stack_for(exporter, forward_block)
    with emitting_into(exporter, target):
        exporter.emit("cf.tuple_push", [inlet, *values], [], {})


def restore_saved(exporter, forward_block: int) -> None:
    """Pop what the forward pushed for this run of the block and read the forward's names as those values."""
    names = exporter.saves.get(forward_block)
    if names is None:
        return
    _, _, outlet = stack_for(exporter, forward_block)
    sources = exporter.xshape_source   # an XShape is saved as the X it describes, which PIR's grads read
    values = [Value(0, sources[name].type if name in sources else exporter.type_of(name)) for name in names]
    exporter.emit("cf.tuple_pop", [outlet], values, {})
    for name, value in zip(names, values):
        (sources if name in sources else exporter.current)[name] = value


def has_elements(exporter, forward_block: int) -> Value:
    stack, _, _ = stack_for(exporter, forward_block)
    result = Value(0, TensorType("t_dtensor", VarType.BOOL, (1,)), stop_gradient=True)
    exporter.emit("cf.has_elements", [stack], [result], {})
    return result


# ---------------------------------------------------------------- helpers

@contextmanager
def emitting_into(exporter, block: Block):
    outer, exporter.target = exporter.target, block
    try:
        yield
    finally:
        exporter.target = outer


def copied_before_overwrite(exporter, row, op, operands: list) -> list:
    """A PIR op that writes in place into an operand whose legacy var stays itself (legacy set_value writes Out,
    not Input): Paddle would clobber the var for its later readers, so the op writes into a copy (pd_op.assign)."""
    for spec in row.results:
        source = next((i for i, o in enumerate(row.operands) if o.name == spec.inplace and o.slot), None)
        if source is None or operands[source] is None or not spec.slot:
            continue
        reads, writes = op.input(row.operands[source].slot), op.output(spec.slot)
        if reads and writes and reads[0] != writes[0] and _read_later(exporter, reads[0]):
            copy = Value(0, operands[source].type)
            exporter.emit("pd_op.assign", [operands[source]], [copy], {})
            operands[source] = copy
    return operands


def _read_later(exporter, name: str) -> bool:
    """Whether an op after the current one reads the var (a var of an enclosing block counts as read later: its
    readers there are not looked at)."""
    return (exporter.last_read.get(name, -1) > exporter.index or name not in exporter.exporting.vars
            or name in exporter.fetched_at_end)


def in_place_target(exporter, name: str):
    """The value a PIR op writes ``name`` into: its current value, else the parameter of that name, a new
    empty array (pd_op.create_array) or zeros of its shape, as Paddle makes them before array_write_ /
    assign_value_."""
    if name in exporter.current:
        return exporter.current[name]
    var = exporter.var(name)
    if var is not None and var.persistable and exporter.block.find_var(name) is var:   # in the scope: rnn's buffer
        exporter.current[name] = exporter.parameter(name)
        return exporter.current[name]
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
    with emitting_into(exporter, block):
        exporter.emit("cf.yield", values, [], {})


def _zeros(exporter, name: str) -> Value:
    """The false branch's stand-in for a result only the true branch makes (select_input picks the
    true one whenever it matters). A shape with unknown dims gets dy2static's own placeholder: a 0-d full
    typed as the result (Paddle 3.3.1 writes these for a loop var a while body defines: PaddleOCR's table models)."""
    result = exporter.new_value(name)
    dims = list(result.type.dims)
    exporter.emit("pd_op.full", [], [result], {
        "shape": Attr("a_intarray", [] if any(d < 0 for d in dims) else dims), "value": Attr("a_f64", 0.0),
        "dtype": Attr("a_dtype", schema.DTYPE_BY_VARTYPE[result.type.dtype]),
        "place": Attr("a_place", list(schema.PLACE_CPU))})
    return result
