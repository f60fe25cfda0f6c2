"""Kernels of gradc.ops.control_flow.

Sub-blocks run in child scopes: a body's writes to outer vars land in the outer scope (Scope.assign),
its temporaries stay in the child. ``while`` keeps one scope per iteration, each also holding the
values the loop vars had when the iteration started (except vars the body updates in place, which
Paddle shares between iterations), so ``while_grad`` can replay the iterations in reverse. A backward
block runs in a GradScope under the forward scope it differentiates, seeded with the outer grads the
grad op lists (Out@GRAD): it reads forward values through the scope chain and writes only locally.
"""

from __future__ import annotations

import re
import weakref

import numpy as np

from ...errors import ExecutionError
from ...ir import EMPTY_VAR, GRAD_SUFFIX, VarType
from ...limits import LIMITS
from ...ops.control_flow import updated_in_place
from ..lod import lift_lods
from ..scope import Scope
from ..tensor_array import TensorArray
from . import kernel


class GradScope(Scope):
    """A backward replay scope: grad ops write here, never into the forward scopes above it."""

    __slots__ = ()

    def home(self, name: str) -> Scope:
        return self


def _truth(k, slot: str) -> bool:
    cond = np.asarray(k.x(slot))
    if cond.size != 1:
        raise ValueError(f"the condition {k.op.input(slot)[0]} must hold one element, not {list(cond.shape)}")
    return bool(cond.reshape(()))


def _grad_scope(k, forward: Scope) -> GradScope:
    scope = GradScope(forward)
    for name in k.op.input("Out@GRAD"):
        value = k.scope.find(name)
        if value is not None:
            scope.vars[name] = value
    return scope


_RENAMED = re.compile(r"@RENAME@block\d+@\d+$")


def _inner_grads(k, slot: str) -> list:
    """The name the backward block gives the grad of each var of ``slot`` (None where none is wanted): the
    op's output, as the backward pass named it before summing made it a renamed part."""
    return [None if out == EMPTY_VAR else _RENAMED.sub("", out) for out in k.out_names(slot + "@GRAD")]


def _zeros_like(value):
    if value is None:
        return None
    return value.map(np.zeros_like) if isinstance(value, TensorArray) else np.zeros_like(value)


def _zeros_for(k, slot: str, grads: list) -> list:
    """The grads, with zeros (shaped like the forward input) where none was computed; none for an input that
    has no value either (the grad, in a second backward, of a branch's output grad when the branch did not run)."""
    names = k.op.input(slot)
    return [None if out == EMPTY_VAR else g if g is not None else _zeros_like(k.scope.find(names[i]))
            for i, (out, g) in enumerate(zip(k.out_names(slot + "@GRAD"), grads))]


def _created_arrays(k, names: list[str]) -> None:
    """Outputs that are tensor arrays the body creates by its first write: created empty before the loop,
    so every iteration writes the same array (Paddle creates each declared var up front)."""
    for name in names:
        var = k.block.find_var(name)
        if var is not None and var.type == VarType.DENSE_TENSOR_ARRAY and k.scope.find(name) is None:
            k.scope.assign(name, TensorArray())


_SCOPES_READ: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # global block -> (version, reads)


def _grad_reads(k, slot: str) -> set[str] | None:
    """What the grad op(s) replaying the scope(s) in the op's output ``slot`` (a while's step scopes, a conditional
    block's scope) read: their inputs and those of every op of the blocks they run. None where no grad op reads
    them, as in a forward-only run: keeping them would only hold memory (each holds its iteration's values, and a
    conditional block's scope in a loop body makes a cycle with the iteration's, which the collector frees late: a
    table recognizer's 500-step decoder reached 20 GB)."""
    reads = _scope_readers(k.block.program)
    found = [reads[name] for name in k.op.output(slot) if name in reads]
    return set().union(*found) if found else None


def _scope_readers(program) -> dict[str, set[str]]:
    """For each scope var a grad op reads, what that grad op reads; cached per program version."""
    return _scope_grad_ops(program)[0]


def _scope_grad_ops(program) -> tuple[dict[str, set[str]], dict[str, set[int]]]:
    """For each scope var grad ops read: what they read, and the blocks they are in; cached per program version."""
    cached = _SCOPES_READ.get(program.global_block)
    version = (program.revision, [len(block.ops) for block in program.blocks])   # also ops added unannounced
    if cached is None or cached[0] != version:
        reads: dict[str, set[str]] = {}
        blocks: dict[str, set[int]] = {}
        for block in program.blocks:
            for op in (op for op in block.ops if op.type.endswith("_grad")):
                for name in op.input("Scope") + op.input("StepScopes"):
                    reads.setdefault(name, set()).update(op.input_names(), _block_reads(program, op))
                    blocks.setdefault(name, set()).add(block.idx)
        cached = _SCOPES_READ[program.global_block] = (version, (reads, blocks))
    return cached[1]


def _block_reads(program, op) -> set[str]:
    """The vars the ops of the blocks ``op`` names read, nested blocks included."""
    reads, pending, seen = set(), [idx for _, idx in op.block_refs()], set()
    while pending:
        idx = pending.pop()
        if idx in seen or not 0 <= idx < len(program.blocks):
            continue
        seen.add(idx)
        for inner in program.blocks[idx].ops:
            reads.update(inner.input_names())
            pending += [ref for _, ref in inner.block_refs()]
    return reads


def _shared_in_backward(block) -> list[str]:
    """Forward vars that an op of a backward block updates in place: Paddle's loop counter, which its
    backward block steps back down (increment by -step) from one iteration to the previous one."""
    return sorted(name for name in updated_in_place(block) if GRAD_SUFFIX not in name)


@kernel("conditional_block")
def conditional_block(k):
    if k.attr("is_scalar_condition"):
        run = _truth(k, "Cond")
    else:
        run = all(np.size(c) != 0 for c in k.xs("Cond"))
    if not run:
        return {"Scope": [[]]}
    scope = k.scope.child()
    k.run_block(k.attr("sub_block"), scope)
    lift_lods(k, scope, k.out_names("Out"))
    replayed = _scope_readers(k.block.program).keys() & set(k.op.output("Scope"))   # only then kept
    kept = [scope] if replayed else []
    return {"Out": [scope.find(name) for name in k.out_names("Out")], "Scope": [kept]}


@kernel("conditional_block_grad")
def conditional_block_grad(k):
    inputs, scopes, inner = k.op.input("Input"), k.x("Scope"), _inner_grads(k, "Input")
    if scopes:
        scope = _grad_scope(k, scopes[0])
        k.run_block(k.attr("sub_block"), scope)
        grads = [scope.vars.get(grad) if grad else None for grad in inner]
    else:  # the branch did not run: an input it would have overwritten passes its grad through
        outs = set(k.op.input("Out"))
        grads = [k.scope.find(grad) if grad and name in outs else None for name, grad in zip(inputs, inner)]
    return {"Input@GRAD": _zeros_for(k, "Input", grads)}


@kernel("while")
def while_(k):
    outs = k.out_names("Out")
    loop_vars = [name for name in k.op.input("X") if name in set(outs)]
    _created_arrays(k, outs)
    in_place = updated_in_place(k.block.program.blocks[k.attr("sub_block")])
    kept = [name for name in loop_vars if name not in in_place]   # Paddle copies these per iteration
    needed = None if k.attr("is_test") else _grad_reads(k, "StepScopes")
    if needed is not None:
        needed.update(outs)
    steps, last, count = [], k.scope, 0
    while _truth(k, "Condition"):
        if count == LIMITS.max_iterations:
            raise ExecutionError(f"{k.where}: the loop ran {count:,} iterations and its condition is still true "
                                 f"(the limit is --max-iterations)")
        count += 1
        start = {name: value for name in kept if (value := k.scope.find(name)) is not None}
        last = k.scope.child()
        k.run_block(k.attr("sub_block"), last)
        if needed is not None:
            last.vars.update(start)   # shadows the outer loop vars for this iteration's grad
            for name in [name for name in last.vars if name not in needed]:   # what the grad does not read
                del last.vars[name]
            steps.append(last)
    lift_lods(k, last, [name for name in outs if name not in loop_vars])
    return {"Out": [k.scope.find(name) if name in loop_vars else last.find(name) for name in outs],
            "StepScopes": [steps]}


@kernel("while_grad")
def while_grad(k):
    xs, outs, inner = k.op.input("X"), set(k.op.input("Out")), _inner_grads(k, "X")
    scopes = k.op.input("StepScopes")
    # a grad op of another block (a second backward of a loop in a branch) may replay them after this one
    later = any(scopes == op.input("StepScopes") for op in k.block.ops[k.op_idx + 1:]) or bool(
        _scope_grad_ops(k.block.program)[1].get(scopes[0], set()) - {k.block.idx})
    wanted = [grad for grad in inner if grad]
    loop_grads = [grad for name, grad in zip(xs, inner) if grad and name in outs]
    # grads of the outputs, carried from each iteration to the previous one (loop vars: to the start)
    shared = _shared_in_backward(k.block.program.blocks[k.attr("sub_block")])
    carry = {name: k.scope.find(name) for name in [*k.op.input("Out@GRAD"), *loop_grads, *shared]}
    sums = {name: None for name in wanted if name not in carry}   # read in every iteration: added up
    for step in reversed(k.x("StepScopes")):
        scope = GradScope(step)
        scope.vars.update((name, value) for name, value in carry.items() if value is not None)
        k.run_block(k.attr("sub_block"), scope)
        for name in carry:
            carry[name] = scope.vars.get(name, carry[name])
        for name, total in sums.items():
            value = scope.vars.get(name)
            if value is not None:   # an array's grads add position by position (list + list would join them)
                sums[name] = value if total is None else (
                    TensorArray.sum([total, value]) if isinstance(value, TensorArray) else total + value)
        if not later:   # replayed: its forward values are no longer needed (unless a second backward replays it)
            step.vars.clear()
    for name in shared:   # stepped back through every iteration, as Paddle leaves it
        k.scope.assign(name, carry[name])
    grads = [carry.get(grad, sums.get(grad)) if grad else None for grad in inner]
    return {"X@GRAD": _zeros_for(k, "X", grads)}


def _mask(k, count: int) -> int:
    mask = int(np.asarray(k.x("Mask")).reshape(-1)[0])
    if not 0 <= mask < count:
        raise ValueError(f"Mask {mask} selects none of the {count} branches")
    return mask


@kernel("select_input")
def select_input(k):
    """Out = X[Mask]; the other branches did not run, so only the selected one is read."""
    return {"Out": k.x("X", _mask(k, len(k.op.input("X"))))}


@kernel("select_output")
def select_output(k):
    """Out[Mask] = X; the others zeros shaped like X (Paddle leaves them unwritten): as the grads of a cond's branch
    outputs, a branch that did not run then still has a zero grad for the replays of higher derivatives to read."""
    x = k.x("X")
    outs = [_zeros_like(x) for _ in k.out_names("Out")]
    outs[_mask(k, len(outs))] = x
    return {"Out": outs}
