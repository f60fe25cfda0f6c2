"""pd_op.if and pd_op.while -> legacy conditional_block / while with sub-blocks, laid out as Paddle's
legacy static.nn.cond and while_loop lay them out:

    if:    conditional_block(cond) {branch; assign results}, logical_not, conditional_block(not cond),
           cast(cond -> int32), select_input([false result, true result], mask) per result;
           an if whose false branch is a placeholder (fake_false_branch) is one conditional_block
    while: assign each initial value into a loop var; while(cond) {body; assign new values into the
           loop vars and the condition}; the loop vars are the results
    pylayer: pylayer(inputs) {body; assign results} with blocks = [body] alone: a PIR program keeps the
           backward_fn out of its text (backward_function_id names a Python callable), so the legacy op has
           no backward block; Paddle's PIR backward runs the user's backward as another pd_op.pylayer, whose
           region computes the input grads from the output grads, and translates the same way
"""

from __future__ import annotations

from ..ir import AttrType, Block, OpDesc, VarDesc, VarType
from ..opdef import make_op
from .graph import Op


def translate_if(op: Op, ctx) -> None:
    if len(op.regions) != 2 or any(len(region.blocks) != 1 for region in op.regions):
        raise ctx.fail(op, "pd_op.if needs two regions (true, false) of one block each")
    cond = ctx.args(op.operands[0], op, 0)[0]
    if op.attr("fake_false_branch", False) is True:
        # the false branch only stands in for "no value" (Paddle's translation of a legacy
        # conditional_block): the legacy op leaves its outputs unwritten instead
        for result, name in zip(op.results, _branch(op, op.regions[0].blocks[0], cond, ctx)):
            ctx.bind(result, name)
        return
    not_cond = ctx.namer.fresh("logical_not")
    ctx.block.add_var(_bool_var(ctx, not_cond, cond))
    branch_outs = []
    for region, condition in zip(op.regions, (cond, not_cond)):
        if condition is not_cond:
            ctx.emit("logical_not", {"X": [cond]}, {"Out": [not_cond]})
        branch_outs.append(_branch(op, region.blocks[0], condition, ctx))
    if not op.results:
        return
    mask = ctx.namer.fresh("cast")
    ctx.block.add_var(_bool_var(ctx, mask, cond)).dtype = VarType.INT32   # shaped as the condition, [1] or []
    ctx.emit("cast", {"X": [cond]}, {"Out": [mask]}, {"in_dtype": int(VarType.BOOL), "out_dtype": int(VarType.INT32)})
    next_name = ctx.namer.for_op("select_input")
    for result, true_out, false_out in zip(op.results, *branch_outs):
        name = ctx.define(result, next_name)
        ctx.emit("select_input", {"X": [false_out, true_out], "Mask": [mask]}, {"Out": [name]})


def _region_block(op: Op, body, op_type: str, ctx) -> tuple[Block, list[str], str]:
    """The region's block as a sub-block assigning the results to new parent vars: (the sub-block, those vars,
    a new parent var of type STEP_SCOPES for the op's Scope)."""
    yielded = _yield_operands(op, body, len(op.results), ctx)
    parent = ctx.block
    sub = ctx.program.append_block(parent.idx)
    ctx.translate_block(body.ops[:-1], sub)
    next_name = ctx.namer.for_op(op_type)
    outs = []
    for result, value in zip(op.results, yielded):
        name = next_name()
        parent.add_var(ctx.var(name, result.type, result))
        sub.ops.append(_assign(ctx.args(value, body.ops[-1], len(outs))[0], name))
        outs.append(name)
    scope = next_name()
    parent.create_var(scope, None, None, type=VarType.STEP_SCOPES)
    return sub, outs, scope


def _branch(op: Op, body, condition: str, ctx) -> list[str]:
    """One branch as a conditional_block; returns the parent-block vars its results land in."""
    sub, outs, scope = _region_block(op, body, "conditional_block", ctx)
    written = [name for name in outer_writes(ctx.program, sub) if name not in outs]
    ctx.emit("conditional_block", {"Cond": [condition], "Input": sub_block_inputs(ctx.program, sub)},
             {"Out": outs + written, "Scope": [scope]}, {"sub_block": sub.idx, "is_scalar_condition": True},
             {"sub_block": AttrType.BLOCK})
    return outs


def translate_while(op: Op, ctx) -> None:
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        raise ctx.fail(op, "pd_op.while needs one region of one block")
    body = op.regions[0].blocks[0]
    inits = op.operands[1:]
    if not (len(inits) == len(body.args) == len(op.results)):
        raise ctx.fail(op, f"pd_op.while has {len(inits)} loop values, {len(body.args)} block arguments and "
                           f"{len(op.results)} results; they must agree")
    yielded = _yield_operands(op, body, 1 + len(inits), ctx)
    parent = ctx.block
    next_name = ctx.namer.for_op("while")
    carries, placeholders = [], {}
    for position, (init, arg, result) in enumerate(zip(inits, body.args, op.results)):
        source = ctx.args(init, op, position + 1)[0]
        if _is_array(ctx, source):   # written in place: the loop carries the array itself
            name = source
        else:
            name = next_name()
            parent.add_var(ctx.var(name, result.type, result))
            entry = ctx.emit("assign", {"X": [source]}, {"Out": [name]})
            if _is_placeholder(init):
                placeholders[name] = entry
        ctx.bind(arg, name)
        carries.append(name)
    condition = next_name()
    parent.add_var(_bool_var(ctx, condition, ctx.args(op.operands[0], op, 0)[0]))
    ctx.emit("assign", {"X": ctx.args(op.operands[0], op, 0)}, {"Out": [condition]})
    sub = ctx.program.append_block(parent.idx)
    ctx.translate_block(body.ops[:-1], sub)
    new_names = [ctx.args(value, body.ops[-1], i)[0] for i, value in enumerate(yielded)]
    for name, new in zip(carries, new_names[1:]):
        if name in placeholders:
            _type_as_the_body_does(parent, placeholders[name], sub.find_var(new))
    sub.ops.extend(_loop_update(ctx, sub, new_names, [condition] + carries))
    scopes = next_name()
    parent.create_var(scopes, None, None, type=VarType.STEP_SCOPES)
    written = [name for name in outer_writes(ctx.program, sub) if name not in carries and name != condition]
    ctx.emit("while", {"Condition": [condition], "X": sub_block_inputs(ctx.program, sub)},
             {"Out": carries + written + [condition], "StepScopes": [scopes]}, {"sub_block": sub.idx, "is_test": False},
             {"sub_block": AttrType.BLOCK})
    for result, name in zip(op.results, carries):
        ctx.bind(result, name)


def translate_pylayer(op: Op, ctx) -> None:
    if len(op.regions) != 1 or len(op.regions[0].blocks) != 1:
        raise ctx.fail(op, "pd_op.pylayer needs one region of one block")
    inputs = [name for i, value in enumerate(op.operands) for name in ctx.args(value, op, i)]
    sub, outs, scope = _region_block(op, op.regions[0].blocks[0], "pylayer", ctx)
    for result, name in zip(op.results, outs):
        ctx.bind(result, name)
    ctx.emit("pylayer", {"Input": inputs}, {"Out": outs, "Scope": [scope]}, {"blocks": [sub.idx]},
             {"blocks": AttrType.BLOCKS})


def _is_placeholder(value) -> bool:
    """dy2static's stand-in for a value only the loop body defines: a 0-d pd_op.full typed as its guess of it."""
    made = value.op
    return made is not None and made.name == "pd_op.full" and "shape" in made.attrs and not made.attrs["shape"].value


def _type_as_the_body_does(parent: Block, entry: OpDesc, given: VarDesc | None) -> None:
    """A loop var that enters as dy2static's placeholder holds what the body gives it: where dy2static guessed
    another dtype (float32 for RPN's int32 counts in PaddleDetection's R-CNNs), the var takes the body's, and the
    placeholder enters cast to it."""
    carried = parent.vars[entry.output("Out")[0]]
    if given is None or given.dtype is None or given.dtype == carried.dtype:
        return
    source = parent.find_var(entry.input("X")[0])
    parent.ops[parent.ops.index(entry)] = make_op("cast", entry.inputs, entry.outputs,
                                                  {"in_dtype": int(source.dtype), "out_dtype": int(given.dtype)})
    carried.dtype = given.dtype


def _is_array(ctx, name: str) -> bool:
    var = ctx.block.find_var(name)
    return var is not None and var.type == VarType.DENSE_TENSOR_ARRAY


def _loop_update(ctx, sub: Block, sources: list[str], targets: list[str]) -> list:
    """Assigns of the new values into the loop vars; a new value that is another loop var (a swap)
    is copied to a temporary first, so no assign reads a var an earlier one overwrote."""
    ops, moves = [], []
    for source, target in zip(sources, targets):
        if source == target:
            continue
        if source in targets:
            temp = ctx.namer.fresh("assign")
            sub.add_var(sub.find_var(source).copy(temp))
            ops.append(_assign(source, temp))
            source = temp
        moves.append(_assign(source, target))
    return ops + moves


def _yield_operands(op: Op, body, count: int, ctx) -> list:
    last = body.ops[-1] if body.ops else None
    if last is None or last.name != "cf.yield":
        raise ctx.fail(op, "a region of control flow must end with cf.yield")
    if len(last.operands) != count:
        raise ctx.fail(last, f"yields {len(last.operands)} values; {op.name} needs {count}")
    if any(value is None for value in last.operands):
        raise ctx.fail(last, "yields a null value")
    return last.operands


def sub_block_inputs(program, sub: Block) -> list[str]:
    """Vars the sub-block (and blocks nested in it) read that live outside it, in first-read order."""
    return _outer_vars(program, sub, lambda op: op.input_names())


def outer_writes(program, sub: Block) -> list[str]:
    """Vars the sub-block (and blocks nested in it) write that live outside it (PIR's in-place ops:
    array_write_, increment_, assign_out_); a legacy loop lists them among its outputs."""
    return _outer_vars(program, sub, lambda op: op.output_names())


def _outer_vars(program, sub: Block, names_of) -> list[str]:
    inside = {sub.idx}
    for block in program.blocks[sub.idx + 1:]:
        if block.parent_idx in inside:
            inside.add(block.idx)
    names: dict[str, None] = {}
    for idx in sorted(inside):
        block = program.blocks[idx]
        for op in block.ops:
            for name in names_of(op):
                var_block = _owner(block, name)
                if var_block is not None and var_block.idx not in inside:
                    names[name] = None
    return list(names)


def _owner(block: Block, name: str) -> Block | None:
    while block is not None:
        if name in block.vars:
            return block
        block = block.parent
    return None


def _assign(source: str, target: str) -> OpDesc:
    return OpDesc("assign", {"X": [source]}, {"Out": [target]})


def _bool_var(ctx, name: str, like: str) -> VarDesc:
    """A condition var shaped like the condition it derives from ([1] or [])."""
    like_var = ctx.block.find_var(like)
    shape = like_var.shape if like_var is not None and like_var.shape is not None else [1]
    return VarDesc(name, shape, VarType.BOOL, stop_gradient=True)


def translate_select_input(op: Op, ctx) -> None:
    """pd_op.select_input(mask, x0, x1, ...): the legacy op takes the candidates as one list."""
    if len(op.operands) < 2:
        raise ctx.fail(op, "pd_op.select_input needs a mask and at least one candidate")
    candidates = [ctx.args(value, op, i + 1)[0] for i, value in enumerate(op.operands[1:])]
    name = ctx.define(op.results[0], ctx.namer.for_op("select_input"))
    ctx.emit("select_input", {"X": candidates, "Mask": ctx.args(op.operands[0], op, 0)}, {"Out": [name]})


def translate_select_output(op: Op, ctx) -> None:
    """pd_op.select_output(mask, x) -> one result per branch: x lands in the one the mask picks."""
    mask, x = (ctx.args(value, op, i)[0] for i, value in enumerate(op.operands))
    next_name = ctx.namer.for_op("select_output")
    outs = [ctx.define(result, next_name) for result in op.results]
    ctx.emit("select_output", {"X": [x], "Mask": [mask]}, {"Out": outs})
