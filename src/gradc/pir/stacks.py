"""The cf dialect's stacks -> legacy tensor arrays and a counter.

Paddle's PIR backward of control flow saves what a branch or a loop iteration computed (cf.tuple_push in
the forward region) and takes it back, last in first out, in the grad region (cf.tuple_pop); the grad
loop runs while cf.has_elements. Legacy programs have no stack, so each pushed slot becomes a tensor
array indexed by a counter of the values pushed:

    cf.stack_create          counter = fill_constant(0, int64 [1]); one array per pushed tensor (per item of
                             a pushed list); a pushed tensor array is kept by reference
    cf.tuple_push(inlet, v…) write_to_array(v_k, I=counter) -> array_k for each k; increment(counter, +1)
    cf.has_elements(stack)   cast(counter -> bool)
    cf.tuple_pop(outlet)     increment(counter, -1); read_from_array(array_k, I=counter) for each k
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import VarType
from .graph import Op, TensorType, Value, VectorType, walk_ops


@dataclass(frozen=True)
class Stack:
    counter: str
    slots: tuple   # per pushed value: its array's name, a list of names (a t_vec), None (a tensor array) or UNREAD
    pushed: tuple = ()   # the values pushed, when one tuple_push feeds the stack: a pop gives them back


UNREAD = False   # a slot whose popped value no op reads: not kept (Paddle pushes such values, an empty int list too)


def stack_create(op: Op, ctx) -> None:
    if ctx.pushes is None:   # inlet -> its tuple_push ops, outlet -> its tuple_pop ops, the values ops read
        ctx.pushes, ctx.pops, ctx.read_values = {}, {}, set()
        for other in walk_ops(ctx.module.body):
            if other.name in ("cf.tuple_push", "cf.tuple_pop") and other.operands:
                (ctx.pushes if other.name == "cf.tuple_push" else ctx.pops).setdefault(other.operands[0], []).append(
                    other)
            ctx.read_values.update(id(value) for value in other.operands if value is not None)
    pushes, pops = ctx.pushes.get(op.results[1], []), ctx.pops.get(op.results[2], [])
    if len(pushes) > 1 and len({len(push.operands) for push in pushes}) > 1:
        raise ctx.fail(op, "its stack is pushed tuples of different sizes")
    values = pushes[0].operands[1:] if pushes else []
    counter = ctx.namer.fresh("stack_counter")
    ctx.block.create_var(counter, [1], VarType.INT64, stop_gradient=True)
    ctx.emit("fill_constant", {}, {"Out": [counter]},
             {"shape": [1], "dtype": int(VarType.INT64), "value": 0.0, "str_value": "0"}, {"shape": 11})
    read = [any(index < len(pop.results) and id(pop.results[index]) in ctx.read_values for pop in pops)
            for index in range(len(values))]
    slots = tuple(_slot(value, pushes[0], ctx) if wanted else UNREAD for value, wanted in zip(values, read))
    stack = Stack(counter, slots, tuple(values) if len(pushes) == 1 else ())
    for result in op.results:
        ctx.stacks[result] = stack


def _slot(value, push: Op, ctx):
    """Where a pushed value is kept: a tensor in an array, a list in one array per item; a tensor array
    is pushed by reference (it is written in place, so the grad reads the same array)."""
    if value is not None and isinstance(value.type, TensorType) and value.type.kind == "t_dense_tensor_array":
        return None
    items = value.type.items if value is not None and isinstance(value.type, VectorType) else [
        value.type if value is not None else None]
    if not all(isinstance(item, TensorType) and item.kind == "t_dtensor" for item in items):
        raise ctx.fail(push, "pushes a value that is not a tensor, a list of tensors or a tensor array")
    names = []
    for item in items:
        names.append(ctx.namer.fresh("stack_array"))
        ctx.block.create_var(names[-1], list(item.dims), item.dtype, type=VarType.DENSE_TENSOR_ARRAY,
                             stop_gradient=True)
    return names if isinstance(value.type, VectorType) else names[0]


def _stack(op: Op, ctx) -> Stack:
    stack = ctx.stacks.get(op.operands[0]) if op.operands else None
    if stack is None:
        raise ctx.fail(op, "operand 0 is not a stack made by cf.stack_create")
    return stack


def tuple_push(op: Op, ctx) -> None:
    stack = _stack(op, ctx)
    if len(op.operands) - 1 != len(stack.slots):
        raise ctx.fail(op, f"pushes {len(op.operands) - 1} values onto a stack of {len(stack.slots)}")
    for position, (value, slot) in enumerate(zip(op.operands[1:], stack.slots), start=1):
        if slot is None or slot is UNREAD:
            continue
        names = ctx.args(value, op, position)
        arrays = slot if isinstance(slot, list) else [slot]
        if len(names) != len(arrays):
            raise ctx.fail(op, f"operand {position} holds {len(names)} values; the stack keeps {len(arrays)}")
        for name, array in zip(names, arrays):
            ctx.emit("write_to_array", {"X": [name], "I": [stack.counter]}, {"Out": [array]})
    ctx.emit("increment", {"X": [stack.counter]}, {"Out": [stack.counter]}, {"step": 1.0})


def tuple_pop(op: Op, ctx) -> None:
    stack = _stack(op, ctx)
    if len(op.results) != len(stack.slots):
        raise ctx.fail(op, f"pops {len(op.results)} values from a stack of {len(stack.slots)}")
    ctx.emit("increment", {"X": [stack.counter]}, {"Out": [stack.counter]}, {"step": -1.0})
    next_name = ctx.namer.for_op("read_from_array")
    for index, (value, slot) in enumerate(zip(op.results, stack.slots)):
        if slot is UNREAD:
            continue
        if slot is None:
            if index >= len(stack.pushed):
                raise ctx.fail(op, "pops a tensor array that more than one tuple_push pushed")
            ctx.bind(value, ctx.args(stack.pushed[index], op, 0)[0])
            continue
        arrays = slot if isinstance(slot, list) else [slot]
        names = ctx.define(value, next_name)
        names_list = names if isinstance(names, list) else [names]
        if len(names_list) != len(arrays):
            raise ctx.fail(op, f"result {index} holds {len(names_list)} values; the stack keeps {len(arrays)}")
        for name, array in zip(names_list, arrays):
            ctx.emit("read_from_array", {"X": [array], "I": [stack.counter]}, {"Out": [name]})


def has_elements(op: Op, ctx) -> None:
    stack = _stack(op, ctx)
    name = ctx.define(op.results[0], ctx.namer.for_op("cast"))
    ctx.emit("cast", {"X": [stack.counter]}, {"Out": [name]},
             {"in_dtype": int(VarType.INT64), "out_dtype": int(VarType.BOOL)})


def origin(value: Value | None, stacks: dict) -> Value | None:
    """The value a tuple_pop result gives back (a constant a grad op folds into an attribute, say)."""
    seen = set()   # a hostile file may push a value its own pop gives
    while value is not None and value.op is not None and value.op.name == "cf.tuple_pop" and value.op.operands:
        stack = stacks.get(value.op.operands[0])
        if stack is None or value.index >= len(stack.pushed) or id(value) in seen:
            break
        seen.add(id(value))
        value = stack.pushed[value.index]
    return value
