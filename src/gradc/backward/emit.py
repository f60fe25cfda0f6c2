"""Asks each forward op's grad maker for its grad ops, in reverse, and wires them together:
zero-filled grads where a grad op reads a grad nobody writes, summed grads where several write."""

from __future__ import annotations

from collections.abc import Callable

from .. import registry
from ..ir import GRAD_SUFFIX, Block, OpDesc
from .accumulate import GradAccumulator
from .path import OpPath


def zeros_like(var: str) -> OpDesc:
    """``var@GRAD`` = zeros shaped like ``var`` (Paddle: fill_any_like, value 0, dtype -1 = same as X)."""
    return OpDesc("fill_any_like", {"X": [var]}, {"Out": [var + GRAD_SUFFIX]}, {"value": 0.0, "dtype": -1})


def emit_grad_ops(block: Block, forward_ops: list[OpDesc], path: OpPath, seeds: list[OpDesc],
                  new_tmp: Callable[[str], str], given: list[str] = ()) -> list[OpDesc]:
    """The backward ops of ``forward_ops[path.op_indices]``, after the ``seeds`` that start them;
    ``given`` grads are written by the caller."""
    acc = GradAccumulator(block.idx)
    for name in given:
        acc.record_outputs(OpDesc("feed", outputs={"Out": [name]}))
    emitted: list[OpDesc] = []

    def append(op: OpDesc) -> None:
        for name in op.input_names():
            if name.endswith(GRAD_SUFFIX) and not acc.is_written(name) and name not in acc.pending:
                forward_var = name[: -len(GRAD_SUFFIX)]
                if block.find_var(forward_var) is not None:
                    zero = zeros_like(forward_var)
                    acc.record_outputs(zero)
                    emitted.append(zero)
        emitted.extend(acc.sums_before(op))
        acc.record_outputs(op)
        emitted.append(op)

    for seed in seeds:
        append(seed)
    wants = path.wants_grad.__contains__
    for idx in reversed(path.op_indices):
        fwd = forward_ops[idx]
        opdef = registry.get(fwd.type)
        context = registry.GradContext(fwd, opdef, wants, new_tmp)
        for grad_op in opdef.grad(context):
            if any(grad_op.output_names()):
                append(grad_op)
    emitted.extend(acc.remaining_sums())
    return emitted
