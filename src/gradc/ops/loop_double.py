"""Second derivatives through while loops: while_grad's maker (gradc.ops.control_flow_double has the idea).

while_grad replays the loop body's backward block once per iteration, in reverse, in the step scopes the
forward loop kept. Its maker replays the whole loop instead, with ordinary ops the backward pass can
differentiate, in a conditional_block that always runs (so conditional_block's maker differentiates it):

    state = the loop vars' values before the loop       (their writers run again, from values still intact)
    T = the number of iterations                          (a loop of copies of the body, counting)
    carry = the output grads while_grad started from; sums = 0
    for t = T, T-1, ..., 1:                               (a while loop)
        s = state, run t - 1 times through the body      (a nested while loop: the state at iteration t)
        run the body once more from s                     (the values of iteration t)
        carry, d = the backward block of iteration t     (copies of its ops); sums += d
    while_grad's outputs = carry (loop vars) or sums (the others)

That is O(T^2) body runs. The loop vars must be set by ops whose inputs are intact when while_grad runs
(h = assign(x), i = fill_constant, cond = less_than(i, n): what Paddle's while_loop and gradc's examples write).
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import EMPTY_VAR, AttrType, Block, OpDesc, VarType
from ..registry import defgrad
from . import control_flow  # noqa: F401  (registers the grad ops given makers here)
from .control_flow_double import GRAD_REPLAYS, RENAMED, Replay, differentiated_run
from .replay_names import child_block


def _tree(block: Block) -> list[Block]:
    blocks = [block]
    for op in block.ops:
        for _, sub in op.block_refs():
            blocks += _tree(block.program.blocks[sub])
    return blocks


def _loop(parent: Replay, condition: str, body: Block, is_test: bool) -> None:
    """A while op running ``body`` while ``condition``: X and Out list what the body's blocks read and write
    outside themselves, as Paddle's while_loop does."""
    local = {EMPTY_VAR} | {name for b in _tree(body) for name in b.vars}   # a grad op's unwanted grad is no var
    reads = dict.fromkeys(n for b in _tree(body) for op in b.ops for n in op.input_names() if n not in local)
    writes = dict.fromkeys(n for b in _tree(body) for op in b.ops for n in op.output_names() if n not in local)
    op = parent.op("while", {"Condition": [condition], "X": list(reads)},
                   {"Out": list(writes), "StepScopes": [parent.var("step_scopes", VarType.STEP_SCOPES, None)]},
                   {"is_test": is_test})
    op.set_attr("sub_block", body.idx, AttrType.BLOCK)


def _value_before(replay: Replay, ops: list[OpDesc], name: str, at: int, seen: dict, keep=None) -> str:
    """The value ``name`` had before op ``at`` of ``ops``: the name itself if no op from there on writes it,
    else its last writer run again (its inputs found the same way) into a fresh var: control flow too (an earlier
    loop over the same var, the grad of a later loop, after its loop). Where no op of the block set it (a fed var,
    a parameter), ``keep(name, at)``: a copy made before op ``at``."""
    if not any(name in op.output_names() for op in ops[at:]):
        return name
    if (name, at) not in seen:
        idx = next((i for i in range(at - 1, -1, -1) if name in ops[i].output_names()), None)
        if idx is None and keep is not None:
            seen[(name, at)] = keep(name, at)
            return seen[(name, at)]
        if idx is None:
            raise GradError(f"while_grad: the value '{name}' had before the loop is gone (the loop overwrites it, "
                            f"and no op of the block set it): start the loop from a copy, e.g. h = assign(x)")
        if ops[idx].type == "while_grad":   # its replay starts from its loop's copy: that loop first
            body = replay.block.program.blocks[ops[idx].attr("sub_block")].forward_block_idx
            loop = next((i for i in range(idx) if ops[i].type == "while" and ops[i].attrs.get("sub_block") == body),
                        None)
            if loop is not None and body not in replay.loops:
                replay.copy_ops([ops[loop]], {n: _value_before(replay, ops, n, loop, seen, keep)
                                              for n in ops[loop].input_names()})
        reads = {n: _value_before(replay, ops, n, idx, seen, keep) for n in ops[idx].input_names()}
        seen[(name, at)] = replay.copy_ops([ops[idx]], reads)[name]
    return seen[(name, at)]


def _counter(replay: Replay, name: str, value: float) -> str:
    var = replay.var(name, VarType.INT64)
    replay.op("fill_constant", {}, {"Out": [var]}, {"shape": [1], "dtype": int(VarType.INT64), "value": value})
    return var


def _copies(replay: Replay, values: dict[str, str]) -> dict[str, str]:
    """Fresh vars of the replay's block holding ``values`` (name -> var)."""
    copies = {name: replay.fresh(name) for name in values}
    for name, var in values.items():
        replay.op("assign", {"X": [var]}, {"Out": [copies[name]]})
    return copies


def _iterations(top: Replay, body: Block, initial: dict[str, str], condition: str, base: dict[str, str]) -> str:
    """The number of iterations: the body's copies run from the initial state, counted."""
    count = _counter(top, "iterations", 0)
    state = _copies(top, initial)
    counting = Replay(child_block(top.block), *top.sources)
    counting.copy_ops(body.ops, {**base, **state}, state)
    counting.op("increment", {"X": [count]}, {"Out": [count]}, {"step": 1.0})
    _loop(top, state[condition], counting.block, is_test=True)
    return count


def _sweep_step(top: Replay, body: Block, backward: Block, initial: dict, carry: dict, sums: dict,
                step: str, zero: str, going: str, base: dict[str, str]) -> Block:
    """The reverse sweep's body for iteration t = step: the state at t (t - 1 iterations from the start), the
    values of iteration t, its backward block; carry and sums updated, step decremented."""
    sweep = Replay(child_block(top.block), *top.sources)
    start = _copies(sweep, initial)
    done, before = _counter(sweep, "done", 0), sweep.fresh(step)
    sweep.op("assign", {"X": [step]}, {"Out": [before]})
    sweep.op("increment", {"X": [before]}, {"Out": [before]}, {"step": -1.0})
    more = sweep.var("more", VarType.BOOL)
    sweep.op("less_than", {"X": [done], "Y": [before]}, {"Out": [more]})
    forward = Replay(child_block(sweep.block), *top.sources)
    forward.copy_ops(body.ops, {**base, **start}, start)
    forward.op("increment", {"X": [done]}, {"Out": [done]}, {"step": 1.0})
    forward.op("less_than", {"X": [done], "Y": [before]}, {"Out": [more]})
    _loop(sweep, more, forward.block, is_test=False)
    values = sweep.copy_ops(body.ops, {**base, **start})
    grads = sweep.copy_ops(backward.ops, {**values, **start, **carry})   # loop vars: their values at the start
    for name, var in carry.items():
        if grads.get(name, var) != var:
            sweep.op("assign", {"X": [grads[name]]}, {"Out": [var]})
    for name, var in sums.items():
        if name in grads:
            sweep.op("sum", {"X": [var, grads[name]]}, {"Out": [var]})
    sweep.op("increment", {"X": [step]}, {"Out": [step]}, {"step": -1.0})
    sweep.op("less_than", {"X": [zero], "Y": [step]}, {"Out": [going]})
    return sweep.block


def _replayed_grads(top: Replay, loop: OpDesc, backward: Block, grad_op: OpDesc, initial: dict[str, str],
                    base: dict[str, str]) -> dict[str, str]:
    """The reverse sweep (module docstring) into ``top``: each of ``grad_op``'s X@GRAD -> the var holding it.
    ``base`` maps the names the loop reads from outside to their vars in ``top``'s block."""
    body = top.block.program.blocks[backward.forward_block_idx]
    count = _iterations(top, body, initial, loop.input("Condition")[0], base)
    inner = {out: RENAMED.sub("", out) for out in grad_op.output("X@GRAD") if out != EMPTY_VAR}
    carry = _copies(top, {k: base.get(k, k) for k in grad_op.input("Out@GRAD")})
    sums = {}
    for x, out in zip(grad_op.input("X"), grad_op.output("X@GRAD")):   # a loop var's grad starts at 0 when not
        if out in inner and inner[out] not in carry:                    # given; others add up
            target = carry if x in loop.output("Out") else sums
            target[inner[out]] = top.fresh(inner[out])
            top.zeros_like(base.get(x, x), target[inner[out]])
    step, zero, going = top.fresh(count), _counter(top, "zero", 0), top.var("going", VarType.BOOL)
    top.op("assign", {"X": [count]}, {"Out": [step]})
    top.op("less_than", {"X": [zero], "Y": [step]}, {"Out": [going]})
    sweep = _sweep_step(top, body, backward, initial, carry, sums, step, zero, going, base)
    _loop(top, going, sweep, is_test=False)
    return {out: carry.get(name) or sums[name] for out, name in inner.items()}


def _while_grad(g) -> list[OpDesc]:
    program, ops = g.block.program, g.block.ops
    backward = program.blocks[g.attr("sub_block")]
    body = program.blocks[backward.forward_block_idx]
    at = next(i for i, op in enumerate(ops) if op is g.fwd)
    start = next((i for i in range(at) if ops[i].type == "while" and ops[i].attrs.get("sub_block") == body.idx), None)
    if start is None:
        raise GradError("while_grad: its while op is not in its block (the replay starts from the loop's state)")
    loop, top, seen = ops[start], Replay(child_block(g.block), body, backward), {}
    state = list(dict.fromkeys([n for n in loop.input("X") if n in loop.output("Out")] + loop.input("Condition")))
    copies: dict[str, tuple[str, OpDesc]] = {}

    def keep(name: str, before: int) -> str:
        """A value no op of the block set (a fed var the loop overwrites): copied before that op, its grad given
        back there."""
        copy = g.value_before(name, ops[before])
        copies[copy] = (name, ops[before])
        return copy

    initial = {v: _value_before(top, ops, v, start, seen, keep) for v in state}
    given = {k: _value_before(top, ops, k, at, seen) for k in g.fwd.input("Out@GRAD")}
    grads = _replayed_grads(top, loop, backward, g.fwd, initial, given)
    for out, var in grads.items():
        top.op("assign", {"X": [var]}, {"Out": [out]})
    for copy, (name, op) in copies.items():
        g.add_grad_before(name, op, g.grad_of(copy))
    return differentiated_run(g, top.block, list(grads))


def _nested_while_grad(replay: Replay, grad_op: OpDesc, reads: dict[str, str]) -> None:
    """A while_grad in a block a control-flow grad op runs: the sweep replayed in that block's copy, from the
    state the copied while started from."""
    backward = replay.block.program.blocks[grad_op.attr("sub_block")]
    if backward.forward_block_idx not in replay.loops:
        raise GradError("while_grad: its while op is not in its block (the replay starts from the loop's state)")
    loop, initial = replay.loops[backward.forward_block_idx]
    top = Replay(replay.block, replay.block.program.blocks[backward.forward_block_idx], backward, *replay.sources)
    for out, var in _replayed_grads(top, loop, backward, grad_op, initial, reads).items():
        reads[out] = top.fresh(out)
        top.op("assign", {"X": [var]}, {"Out": [reads[out]]})


GRAD_REPLAYS["while_grad"] = _nested_while_grad
# a grad op: the path search sees it through its inputs and outputs; the replay recomputes the loop's outputs
defgrad("while_grad", grad=_while_grad, no_grad_inputs=["Out", "StepScopes"], of="while")
