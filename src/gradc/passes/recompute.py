"""Recomputation (gradient checkpointing): trade forward arithmetic for memory.

A training program keeps every forward activation its backward reads until the backward reaches it, so
its peak holds all of them. This pass cuts the forward ops into segments (gradc.passes.checkpoints): the
vars that cross a cut are kept (the checkpoints); the other activations of a segment are recomputed, by
copies of its forward ops writing ``v@RECOMPUTE``, just before the first backward op that reads them, and
the backward reads the copies. The originals die right after the forward, the copies within the
segment's backward.

The copies run the same kernels on the same inputs, so the gradients are the same bit for bit. Ops that
cannot run twice to the same values keep their outputs: control flow, random ops, ops overwriting their
inputs. Dropout is recomputed from the Mask it saved (``dropout_grad`` of X is X * Mask * the dropout
factor, the forward's own arithmetic), so a recomputed segment drops the same units.

    gradc compile net.pb -o train.pb --recompute auto         # or --recompute fc_3.tmp_2,fc_6.tmp_2
    RecomputePass(checkpoints="auto", budget=1.0)(program)     # after append_backward
"""

from __future__ import annotations

from collections.abc import Iterable

from ..backward.vars import derived_var
from ..errors import GradcError
from ..ir import EMPTY_VAR, OpDesc, Program, roles
from .base import Pass, register_pass
from .checkpoints import Forward, analyse, auto_plan, crossing, segments

SUFFIX = "@RECOMPUTE"


@register_pass
class RecomputePass(Pass):
    name = "recompute"

    def __init__(self, checkpoints: str | Iterable[str] = "auto", budget: float = 1.0):
        """``checkpoints``: "auto", or the vars to keep (forward outputs; each ends a segment). ``budget``
        (auto only): the recomputation may cost up to this many times the forward's arithmetic."""
        self.checkpoints = checkpoints if isinstance(checkpoints, str) else list(checkpoints)
        self.budget = budget
        if self.checkpoints != "auto" and isinstance(self.checkpoints, str):
            raise GradcError(f"recompute: checkpoints are 'auto' or a list of var names, not {self.checkpoints!r}")
        if budget < 0:
            raise GradcError(f"recompute: the budget must be >= 0, got {budget}")

    def requires(self, program: Program) -> None:
        fwd = analyse(program.global_block)
        if fwd.first_backward == len(program.global_block.ops):
            raise self.fail("the program has no backward ops (op_role 1): recompute rewrites a training program")

    def apply(self, program: Program) -> str:
        fwd = analyse(program.global_block)
        if self.checkpoints == "auto":
            cuts, chosen = auto_plan(fwd, self.budget)
        else:
            cuts = [self._producer(fwd, name) for name in self.checkpoints]
            chosen = set(range(len(segments(fwd, cuts)) - 1))
        parts = segments(fwd, cuts)
        checkpoints = crossing(fwd, cuts)
        recomputed = [_recompute(fwd, parts[k], fwd.always_kept | checkpoints) for k in sorted(chosen)]
        _splice(fwd, [segment for segment in recomputed if segment[0]])
        copies = sum(len(ops) for ops, _, _ in recomputed)
        return (f"{len(parts)} segments, {len(checkpoints)} checkpoint vars, {copies} ops recomputed "
                f"({fwd.first_backward} forward ops)")

    def _producer(self, fwd: Forward, name: str) -> int:
        if name not in fwd.producer:
            raise self.fail(f"checkpoint '{name}' is not written by a forward op of block 0")
        return fwd.producer[name]


def _recompute(fwd: Forward, part: range, kept: set[str]) -> tuple[list[OpDesc], dict[str, str], set[str]]:
    """Copies of the ops of ``part`` that make the activations the backward reads (and what those need), the
    copy of each var they write, and the activations (``wanted``) whose backward readers read the copies."""
    block = fwd.block
    need = {name for i in part for name in fwd.produced_needed(i) if name not in kept}
    wanted = set(need)
    if not need:
        return [], {}, wanted
    marked = []
    for i in reversed(part):
        op = fwd.ops[i]
        if any(fwd.producer.get(n) == i for n in op.output_names() if n in need):
            marked.append(i)
            need.update(n for n in op.input_names() if fwd.producer.get(n, -1) in part and n not in kept)
    names: dict[str, str] = {}   # var -> its copy, for the ops copied so far
    copies = [copy for i in sorted(marked) for copy in _copy(block, fwd.ops[i], names)]
    return copies, names, wanted


def _splice(fwd: Forward, recomputed: list[tuple[list[OpDesc], dict[str, str], set[str]]]) -> None:
    """Each segment's copies go just before the first backward op that reads one of its activations (in
    segment order where several share it), and the backward ops read the copies. Copies read no other
    segment's activations (a segment reads only earlier ones, and those it reads are kept), so one sweep over
    the backward does it for all segments."""
    block = fwd.block
    backward = block.ops[fwd.first_backward:]
    first_reader: dict[str, int] = {}
    for at, op in enumerate(backward):
        for name in op.input_names():
            first_reader.setdefault(name, at)
    before: dict[int, list[OpDesc]] = {}
    renamed: dict[str, str] = {}
    for copies, names, wanted in recomputed:
        before.setdefault(min(first_reader[name] for name in wanted if name in first_reader), []).extend(copies)
        renamed.update((name, names[name]) for name in wanted)
    spliced = []
    for at, op in enumerate(backward):
        spliced += before.get(at, ())
        op.rename_reads(renamed)
        spliced.append(op)
    block.ops[fwd.first_backward:] = spliced


def _fresh(block, name: str) -> str:
    fresh, count = name + SUFFIX, 1
    while fresh in block.vars:
        fresh, count = f"{name}{SUFFIX}@{count}", count + 1
    block.add_var(derived_var(block.var(name), fresh))
    return fresh


def _copy(block, op: OpDesc, names: dict[str, str]) -> list[OpDesc]:
    """The op again, reading the copies made before it and writing copies of its outputs (added to ``names``).
    Dropout becomes dropout_grad of its input with the saved Mask. A var the op updates in place (batch_norm's
    running statistics) is copied first, and the copy is updated: the statistics are updated once per step,
    and the op keeps reading and writing one var, as Paddle's batch_norm requires."""
    inputs = {slot: [names.get(n, n) for n in args] for slot, args in op.inputs.items()}
    updated = set(op.input_names()) & set(op.output_names())
    ops = []
    for name in sorted(updated):
        names[name] = _fresh(block, name)
        ops.append(OpDesc("assign", {"X": [name]}, {"Out": [names[name]]}))
    inputs = {slot: [names[n] if n in updated else n for n in args] for slot, args in inputs.items()}
    names.update((n, _fresh(block, n)) for n in op.output_names() if n != EMPTY_VAR and n not in updated)
    outputs = {slot: [names.get(n, n) for n in args] for slot, args in op.outputs.items()}
    if op.type == "dropout":
        ops.append(OpDesc("dropout_grad", {"Mask": op.output("Mask"), "Out@GRAD": inputs["X"]},
                          {"X@GRAD": outputs["Out"]}, dict(op.attrs), dict(op.attr_types)))
    else:
        ops.append(OpDesc(op.type, inputs, outputs, dict(op.attrs), dict(op.attr_types)))
    for copy in ops:
        roles.set_role(copy, roles.BACKWARD)
    return ops


def recompute(program: Program, checkpoints: str | Iterable[str] = "auto", budget: float = 1.0) -> str:
    """Recompute a training program's activations in its backward (see RecomputePass); returns a summary."""
    return RecomputePass(checkpoints, budget)(program)
