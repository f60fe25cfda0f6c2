"""Asks each forward op's grad maker for its grad ops, in reverse, and wires them together:
zero-filled grads where a grad op reads a grad nobody writes, summed grads where several write."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .. import registry
from ..ir import GRAD_SUFFIX, Block, OpDesc, grad_name
from . import control_flow
from .accumulate import GradAccumulator
from .path import OpPath
from .vars import lookup
from .versions import Versions


def zeros_like(var: str) -> OpDesc:
    """``var@GRAD`` = zeros shaped like ``var`` (Paddle: fill_any_like, value 0, dtype -1 = same as X)."""
    return OpDesc("fill_any_like", {"X": [var]}, {"Out": [var + GRAD_SUFFIX]}, {"value": 0.0, "dtype": -1})


def emit_grad_ops(block: Block, forward_ops: list[OpDesc], path: OpPath, seeds: list[OpDesc],
                  new_tmp: Callable[[str], str], given: Iterable[str] = (),
                  required: Iterable[str] = (), forward_block: Block | None = None,
                  versions: Versions | None = None) -> list[OpDesc]:
    """The backward ops of ``forward_ops[path.op_indices]`` (the first ops of ``forward_block``,
    default ``block``), after the ``seeds`` that start them, for ``block`` to hold; ``given`` grads
    are written by the caller, ``required`` grads are written by the end (zeros if nothing else
    writes them). Copies of forward values that are overwritten later go into the forward block."""
    forward_block = forward_block or block
    versions = versions or Versions(block.program)
    acc = GradAccumulator(block.idx)
    for name in given:
        acc.give(name)
    emitted: list[OpDesc] = []

    def append(op: OpDesc) -> None:
        for name in op.input_names():
            if name.endswith(GRAD_SUFFIX) and not acc.is_written(name) and name not in acc.pending:
                if lookup(block, name[: -len(GRAD_SUFFIX)]) is not None:
                    zero = zeros_like(name[: -len(GRAD_SUFFIX)])
                    acc.record_outputs(zero)
                    emitted.append(zero)
        emitted.extend(acc.sums_before(op))
        acc.record_outputs(op)
        emitted.append(op)

    def has_grad(name: str) -> bool:
        return acc.is_written(name) or name in acc.pending

    def backward_block(fwd: OpDesc, inputs: str, outputs: str):
        return control_flow.backward_block(block, forward_block, fwd, inputs, outputs, path, has_grad,
                                           emit_grad_ops, versions)

    for seed in seeds:
        append(seed)
    wants = path.wants_grad.__contains__
    on_path = set(path.op_indices)
    for idx in range(len(forward_ops) - 1, -1, -1):
        fwd = forward_ops[idx]
        written = set()
        if idx in on_path:
            opdef = registry.get(fwd.type)
            context = registry.GradContext(fwd, opdef, wants, new_tmp, backward_block)
            grad_ops = [op for op in opdef.grad(context) if any(op.output_names())]
            versions.reading(grad_ops, forward_block, idx)
            for grad_op in grad_ops:
                written.update(grad_op.output_names())   # before append renames a second writer's output
                append(grad_op)
        for name in fwd.output_names():   # earlier ops see the value this op overwrote
            if grad_name(name) not in written:
                acc.forget(grad_name(name))
    emitted.extend(acc.remaining_sums())
    for name in required:
        if not acc.is_written(name):
            zero = zeros_like(name[: -len(GRAD_SUFFIX)])
            acc.record_outputs(zero)
            emitted.append(zero)
    versions.insert_saves(forward_block)
    return emitted
