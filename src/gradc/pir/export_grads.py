"""Export of legacy control-flow gradients to PIR, as Paddle's PIR backward spells them: the forward
region pushes the values of each run that its grad block reads onto a cf stack (gradc.pir.export_control),
and the grad region pops them, last run first:

    conditional_block_grad(cond) {g}  -> pd_op.if(cond) {cf.tuple_pop; g; cf.yield(input grads)}
                                         else {cf.yield(passed-through grads or zeros)}
    while_grad {g}                    -> pd_op.while(cf.has_elements, carried grads, sums)
                                         {cf.tuple_pop; g; sums += this run's grads; cf.yield(...)}
    select_output(X, Mask)            -> pd_op.select_output(mask, x)

The semantics are those of gradc's kernels (gradc.executor.kernels.control_flow): a grad block's input
grads are what it writes, zeros where it writes none; a loop carries the output grads, the loop vars'
grads and the counters its backward steps back from one run to the one before; grads of the outer vars
it reads are summed over the runs.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, GRAD_SUFFIX, OpDesc, Program, VarType, grad_name
from ..ops.control_flow import updated_in_place
from . import schema
from .export_control import emitting_into, has_elements, in_place_target, restore_saved
from .graph import Attr, Block, Region, TensorType, Value

GRAD_OPS = {"conditional_block_grad": "sub_block", "while_grad": "sub_block", "pylayer_grad": "backward_block"}


def _forward_blocks(program: Program) -> dict[int, OpDesc]:
    """Forward block index -> the control-flow op that runs it."""
    owners = {op.attrs["sub_block"]: op for block in program.blocks for op in block.ops
              if op.type in ("while", "conditional_block") and isinstance(op.attrs.get("sub_block"), int)}
    owners.update((op.attrs["blocks"][0], op) for block in program.blocks for op in block.ops
                  if op.type == "pylayer" and op.attrs.get("blocks"))
    return owners


def plan_saves(program: Program) -> dict[int, list[str]]:
    """Forward block index -> the names of it that its grad block (and blocks nested in it) read, in
    first-read order: vars the block declares, and a loop's vars that are not updated in place."""
    owners = _forward_blocks(program)
    saves: dict[int, list[str]] = {}
    for block in program.blocks:
        for op in block.ops:
            sub = op.attrs.get(GRAD_OPS.get(op.type, ""))
            if not isinstance(sub, int) or not 0 <= sub < len(program.blocks):
                continue
            forward = program.blocks[sub].forward_block_idx
            if forward not in owners:
                continue   # the grad op's export names the problem
            loop_vars = set()
            if owners[forward].type == "while":
                loop_vars = set(owners[forward].input("X")) & set(owners[forward].output("Out"))
                loop_vars -= updated_in_place(program.blocks[forward])
            declared = program.blocks[forward].vars
            names: dict[str, None] = {}
            for inner in _nested(program, sub):
                for inner_op in inner.ops:
                    names.update((n, None) for n in _values_read(inner_op) if n in declared or n in loop_vars)
            saves[forward] = list(names)
    return saves


# slots whose vars a grad op's export reads by name only: a nested cond's outputs (unwritten where its branch did not
# run) and scopes, which PIR has no values for
_NAMES_ONLY = {"conditional_block_grad": ("Out", "Scope"), "while_grad": ("Out", "StepScopes")}


def _values_read(op: OpDesc) -> list[str]:
    skip = _NAMES_ONLY.get(op.type, ())
    return [n for slot, args in op.inputs.items() if slot not in skip for n in args] + op.attr_var_names()


def _nested(program: Program, idx: int) -> list:
    inside = {idx}
    for block in program.blocks[idx + 1:]:
        if block.parent_idx in inside:
            inside.add(block.idx)
    return [program.blocks[i] for i in sorted(inside)]


def _forward_of(op, exporter) -> int:
    forward = exporter.program.blocks[op.attrs["sub_block"]].forward_block_idx
    if forward not in exporter.saves:
        raise exporter.fail(f"its grad block {op.attrs['sub_block']} differentiates no while or conditional_block "
                            f"of this program")
    return forward


def conditional_block_grad(op, exporter) -> None:
    if not op.attrs.get("is_scalar_condition", False):
        raise exporter.fail("conditional_block_grad on a tensor condition has no PIR export")
    grad_block = exporter.program.blocks[op.attrs["sub_block"]]
    forward = _forward_of(op, exporter)
    cond = exporter.read(op.input("Cond")[0])
    pairs = [(x, out) for x, out in zip(op.input("Input"), op.output("Input@GRAD")) if out != EMPTY_VAR]
    written = {name for inner in grad_block.ops for name in inner.output_names()}
    before = dict(exporter.current)
    ran, skipped = Block(), Block()
    with emitting_into(exporter, ran):
        restore_saved(exporter, forward)
        exporter.export_block(grad_block, ran)
        grads = [exporter.current[grad_name(x)] if grad_name(x) in written else zeros_like(exporter, x)
                 for x, _ in pairs]
        exporter.emit("cf.yield", grads, [], {})
    exporter.current = dict(before)
    passes = set(op.input("Out"))   # the branch did not run: an input it would have overwritten passes its grad
    with emitting_into(exporter, skipped):
        kept = [before[grad_name(x)] if x in passes and grad_name(x) in before else zeros_like(exporter, x)
                for x, _ in pairs]
        exporter.emit("cf.yield", kept, [], {})
    exporter.current = before
    results = [exporter.new_value(out) for _, out in pairs]
    if_op = exporter.emit("pd_op.if", [cond], results, {})
    if_op.regions = [Region([ran]), Region([skipped])]
    exporter.current.update((out, value) for (_, out), value in zip(pairs, results))


def while_grad(op, exporter) -> None:
    grad_block = exporter.program.blocks[op.attrs["sub_block"]]
    forward = _forward_of(op, exporter)
    xs, outs = op.input("X"), set(op.input("Out"))
    wanted = [grad_name(x) for x, out in zip(xs, op.output("X@GRAD")) if out != EMPTY_VAR]
    loop_grads = [grad_name(x) for x in xs if grad_name(x) in wanted and x in outs]
    shared = sorted(n for n in updated_in_place(grad_block) if GRAD_SUFFIX not in n)
    carried = list(dict.fromkeys([*op.input("Out@GRAD"), *loop_grads, *shared]))
    sums = [name for name in wanted if name not in carried]
    written = {name for inner in grad_block.ops for name in inner.output_names()}
    inits = [exporter.current.get(name) or _zeros_for(exporter, name) for name in carried]
    inits += [zeros_like(exporter, name.removesuffix(GRAD_SUFFIX)) for name in sums]
    body = Block(args=[Value(0, value.type) for value in inits])
    before = dict(exporter.current)
    exporter.current.update(zip(carried, body.args))
    with emitting_into(exporter, body):
        restore_saved(exporter, forward)
        exporter.export_block(grad_block, body)
        new = [exporter.read(name) for name in carried]
        for name, total in zip(sums, body.args[len(carried):]):
            new.append(add(exporter, total, exporter.current[name]) if name in written else total)
        exporter.emit("cf.yield", [has_elements(exporter, forward), *new], [], {})
    exporter.current = before
    results = [Value(0, value.type) for value in inits]
    loop = exporter.emit("pd_op.while", [has_elements(exporter, forward), *inits], results, {})
    loop.regions = [Region([body])]
    final = dict(zip(carried + sums, results))
    exporter.current.update((name, final[name]) for name in shared)
    exporter.current.update((out, final[grad_name(x)]) for x, out in zip(xs, op.output("X@GRAD"))
                            if out != EMPTY_VAR and grad_name(x) in final)


def select_output(op, exporter) -> None:
    mask, x = exporter.read(op.input("Mask")[0]), exporter.read(op.input("X")[0])
    results = [Value(0, x.type) if name == EMPTY_VAR else exporter.new_value(name) for name in op.output("Out")]
    exporter.emit("pd_op.select_output", [mask, x], results, {})
    exporter.current.update((name, value) for name, value in zip(op.output("Out"), results) if name != EMPTY_VAR)


def _zeros_for(exporter, grad: str) -> Value:
    """A grad nothing computed yet: an empty array for an array's grad, else zeros like its var."""
    var = exporter.var(grad)
    if var is not None and var.type == VarType.DENSE_TENSOR_ARRAY:
        return in_place_target(exporter, grad)
    return zeros_like(exporter, grad.removesuffix(GRAD_SUFFIX))


def zeros_like(exporter, name: str) -> Value:
    """Zeros like var ``name``: pd_op.full_like of 0, or for a tensor array (an input of a cond that did not run)
    pd_op.create_array_like of 0, as Paddle's backward writes (its full_like refuses an array)."""
    source = exporter.read(name)
    result = Value(0, source.type)
    if isinstance(source.type, TensorType) and source.type.kind == "t_dense_tensor_array":
        exporter.emit("pd_op.create_array_like", [source], [result], {"val": Attr("a_f32", 0.0)})
        return result
    value = exporter.constant("float", 0.0)
    exporter.emit("pd_op.full_like", [source, value], [result], {
        "dtype": Attr("a_dtype", schema.DTYPE_BY_VARTYPE[source.type.dtype]), "place": Attr("a_place", [0, 0, ""])})
    return result


def add(exporter, x: Value, y: Value) -> Value:
    """x + y; two tensor arrays (a loop's grads of an array it reads in every iteration) by pd_op.add_n_array, as
    Paddle adds them (its pd_op.add takes dense tensors only)."""
    result = Value(0, x.type)
    if isinstance(x.type, TensorType) and x.type.kind == "t_dense_tensor_array":
        exporter.emit("pd_op.add_n_array", [exporter.combine([x, y])], [result], {})
    else:
        exporter.emit("pd_op.add", [x, y], [result], {})
    return result
