"""Second derivatives through control flow: conditional_block_grad's maker, and what while_grad's
(gradc.ops.loop_double) shares with it.

A control-flow grad op runs its backward block in the scopes its forward op left: it reads the forward
block's values there, not through its inputs, so no maker can see how they move with the inputs. Its maker
recomputes instead: it builds a forward op whose block replays copies of the forward block's and the
backward block's ops, writing the grads the grad op wrote, and differentiates that op with the control-flow
op's own maker. Every var the copies write is renamed (``v@REPLAY@{block}``), so the replay never touches
the values of the run it repeats; the grads it writes again get the same values. Control flow nested in the copied
blocks is copied with copies of its blocks, and a nested control-flow grad op is itself replayed in ordinary ops
(``GRAD_REPLAYS``), since its copy would read a scope the replay never made.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from ..errors import GradError
from ..ir import EMPTY_VAR, AttrType, Block, OpDesc, VarDesc, VarType
from ..registry import defgrad, get, make_op
from . import control_flow  # noqa: F401  (registers the grad ops given makers here)
from .replay_names import child_block, declare, declared_names

RENAMED = re.compile(r"@RENAME@block\d+@\d+$")   # a grad op's output renamed by the sums of the backward pass
REPLAYED = "@REPLAY@"   # in the names of the vars a replay writes


class Replay:
    """Appends ops to a block, declaring the vars they write: copies of other blocks' ops, renamed."""

    def __init__(self, block: Block, *sources: Block):
        self.block, self.sources = block, sources   # the blocks whose ops are copied (they see the originals)
        self.loops: dict[int, tuple[OpDesc, dict[str, str]]] = {}   # body -> its while, the loop vars' values before
        self.branches: dict[int, dict[str, str]] = {}   # a nested branch's block -> its inputs' values before it
        self.inlined: dict[int, dict[str, str]] = {}   # a block copied inline (a pylayer's) -> the values it left

    def unique(self, name: str) -> str:
        count, new = 0, f"{name}{REPLAYED}{self.block.idx}"
        declared = declared_names(self.block.program)
        while new in declared:   # the first has no count: no Program.unused_name pattern
            count += 1
            new = f"{name}{REPLAYED}{self.block.idx}@{count}"
        return new

    def fresh(self, name: str) -> str:
        """A new var of this block, declared like ``name``."""
        source = next(var for b in (*self.sources, self.block) if (var := b.visible_var(name)) is not None)
        var = declare(self.block, source.copy(self.unique(name)))
        var.persistable = False
        return var.name

    def var(self, name: str, dtype, shape=(1,)) -> str:
        var = declare(self.block, VarDesc(self.unique(name), None if shape is None else list(shape), dtype))
        if dtype == VarType.STEP_SCOPES:
            var.type, var.dtype = VarType.STEP_SCOPES, None
        return var.name

    def op(self, type: str, inputs: dict, outputs: dict, attrs: dict | None = None) -> OpDesc:
        op = make_op(type, inputs, outputs, attrs)
        self.block.ops.append(op)
        return op

    def zeros_like(self, like: str, out: str) -> OpDesc:
        return self.op("fill_any_like", {"X": [like]}, {"Out": [out]}, {"value": 0.0, "dtype": -1})

    def flag(self, out: str, value: bool) -> OpDesc:
        """``out``, a bool [1], set to ``value``."""
        return self.op("fill_constant", {}, {"Out": [out]}, {"shape": [1], "dtype": int(VarType.BOOL),
                                                               "value": float(value)})

    def copy_ops(self, ops: list[OpDesc], reads: dict[str, str], writes: dict[str, str] | None = None) -> dict:
        """Copies of ``ops``: a read of a name in ``reads`` reads its var here; a write of a name in ``writes``
        writes that var (in place), any other write a fresh var. Returns ``reads`` with the fresh names. A
        nested branch is copied with a copy of its block, a nested pylayer inline (INLINED); a nested branch's grad
        op is replayed (below)."""
        reads = dict(reads)
        for op in ops:
            replayer = GRAD_REPLAYS.get(op.type) or INLINED.get(op.type)
            if replayer is not None:
                replayer(self, op, reads)
                continue
            if op.type == "while":
                self._copy_loop(op, reads)
                continue
            if any(True for _ in op.block_refs()) and op.type != "conditional_block":
                raise GradError(f"gradc does not differentiate twice through nested control flow (op {op.type} "
                                f"in a block a control-flow grad op runs)")
            copy, kept = op.copy(), set()
            if op.type == "conditional_block":
                self._keep_overwritten(op, reads, writes or {}, kept)
            before = dict(reads)
            copy.inputs = {slot: [reads.get(n, n) for n in args] for slot, args in op.inputs.items()}
            for args in copy.outputs.values():
                for pos, name in enumerate(args):
                    if name != EMPTY_VAR:
                        reads[name] = args[pos] = reads[name] if name in kept else (
                            (writes or {}).get(name) or self.fresh(name))
            if op.type == "conditional_block":   # its block writes the copy's outputs, all else in it fresh
                sub = self.block.program.blocks[op.attr("sub_block")]
                inner = Replay(child_block(self.block), sub, *self.sources)
                inner.copy_ops(sub.ops, before, {name: reads[name] for name in op.output("Out")})
                copy.set_attr("sub_block", inner.block.idx, AttrType.BLOCK)
            self.block.ops.append(copy)
        return reads

    def _keep_overwritten(self, op: OpDesc, reads: dict[str, str], writes: dict[str, str], kept: set) -> None:
        """A nested branch that writes a value it had before (an input, or a var written before it) updates it in
        place and leaves it where it does not run: its copy does the same to a copy of the value, made first (its
        grad then passes through where the branch does not run, as the branch's does). The values before it are
        kept for its grad op's replay."""
        self.branches[op.attr("sub_block")] = {name: reads.get(name, name) for name in op.input("Input")}
        for name in op.output("Out"):
            if name in reads or name in op.input("Input"):
                copy = writes.get(name) or self.fresh(name)
                self.op("assign", {"X": [reads.get(name, name)]}, {"Out": [copy]})
                reads[name] = copy
                kept.add(name)

    def _copy_loop(self, op: OpDesc, reads: dict[str, str]) -> None:
        """A nested while, copied with a copy of its body: its loop vars start from fresh copies, so the values
        before the loop stay intact for its grad op's replay (gradc.ops.loop_double)."""
        body = self.block.program.blocks[op.attr("sub_block")]
        carried = dict.fromkeys([n for n in op.input("X") if n in op.output("Out")] + op.input("Condition"))
        self.loops[body.idx] = (op, {name: reads.get(name, name) for name in carried})
        state = {name: self.fresh(name) for name in carried}
        for name, var in state.items():
            self.op("assign", {"X": [reads.get(name, name)]}, {"Out": [var]})
        reads.update(state)
        outs = {name: state.get(name) or self.fresh(name) for name in op.output("Out")}
        inner = Replay(child_block(self.block), body, *self.sources)
        inner.copy_ops(body.ops, reads, outs)
        copy = op.copy()
        copy.inputs = {slot: [reads.get(n, n) for n in args] for slot, args in op.inputs.items()}
        copy.outputs = {"Out": list(outs.values()), "StepScopes": [self.var("step_scopes", VarType.STEP_SCOPES, None)]}
        copy.set_attr("sub_block", inner.block.idx, AttrType.BLOCK)
        self.block.ops.append(copy)
        reads.update(outs)

    def _branch_grad(self, op: OpDesc, reads: dict[str, str]) -> None:
        """A nested branch's grad op, replayed with ordinary ops: its forward and backward blocks copied into a
        conditional_block on its condition, the grads picked by select_input (zeros where the branch did not run;
        the grad of a value it would have overwritten passes through, the run updating it in place), so the replay
        reads no scope and the backward pass differentiates it as a branch."""
        program = self.block.program
        backward = program.blocks[op.attr("sub_block")]
        forward = program.blocks[backward.forward_block_idx]
        # the branch's inputs as it read them: a value it overwrites is read from before the write
        as_read = {**reads, **self.branches.get(forward.idx, {})}
        inner = Replay(child_block(self.block), forward, backward, *self.sources)
        renamed = inner.copy_ops(forward.ops + backward.ops, as_read)
        computed = {n for grad_op in backward.ops for n in grad_op.output_names()}
        conds, scalar = [reads.get(c, c) for c in op.input("Cond")], bool(op.attrs.get("is_scalar_condition"))
        results, picks, through = [], [], []
        outs, given = set(op.input("Out")), set(op.input("Out@GRAD"))
        for var, grad in zip(op.input("Input"), op.output("Input@GRAD")):
            if grad == EMPTY_VAR:
                continue
            source, value = reads.get(var, var), RENAMED.sub("", grad)
            ran = self.fresh(grad)
            if value in computed:
                inner.op("assign", {"X": [renamed[value]]}, {"Out": [ran]})
            else:
                inner.zeros_like(source, ran)
            results.append(ran)
            # a value it would overwrite: where it does not run, the grad given for it (named as its own, which
            # Out@GRAD lists only where the loss reaches it) passes through, as in its kernel
            if var in outs and value in given:
                self.op("assign", {"X": [reads.get(value, value)]}, {"Out": [ran]})
                through.append(ran)
                reads[grad] = ran
            else:
                zero = self.fresh(grad)
                self.zeros_like(source, zero)
                picks.append((grad, zero, ran))
        run = self.op("conditional_block", {"Cond": conds, "Input": outer_reads(inner.block) + through},
                      {"Out": results, "Scope": [self.var("scope", VarType.STEP_SCOPES, None)]},
                      {"is_scalar_condition": scalar})
        run.set_attr("sub_block", inner.block.idx, AttrType.BLOCK)
        if picks:
            mask = self.var("mask", VarType.INT32)
            self.op("cast", {"X": [conds[0] if scalar else self._ran(conds)]}, {"Out": [mask]},
                    {"in_dtype": int(VarType.BOOL), "out_dtype": int(VarType.INT32)})
        for grad, zero, ran in picks:
            reads[grad] = self.fresh(grad)
            self.op("select_input", {"X": [zero, ran], "Mask": [mask]}, {"Out": [reads[grad]]})

    def _ran(self, conds: list[str]) -> str:
        """Whether a branch on the non-scalar condition ``conds`` runs (each of them holds an element), as a bool
        [1]: false, set true by a conditional_block on that condition."""
        ran = self.var("ran", VarType.BOOL)
        self.flag(ran, False)
        sets = Replay(child_block(self.block), *self.sources)
        sets.flag(ran, True)
        run = self.op("conditional_block", {"Cond": conds, "Input": []},
                      {"Out": [ran], "Scope": [self.var("scope", VarType.STEP_SCOPES, None)]},
                      {"is_scalar_condition": False})
        run.set_attr("sub_block", sets.block.idx, AttrType.BLOCK)
        return ran


# a nested control-flow grad op, replayed in ordinary ops by a copy of the block it is in (type -> replayer)
GRAD_REPLAYS: dict[str, Callable[[Replay, OpDesc, dict[str, str]], None]] = {
    "conditional_block_grad": Replay._branch_grad}
# a nested op with a block that runs once, unconditionally, copied inline (type -> copier; gradc.ops.pylayer_double)
INLINED: dict[str, Callable[[Replay, OpDesc, dict[str, str]], None]] = {}


def outer_reads(block: Block) -> list[str]:
    """The vars the block's ops read before any of them writes them: what it takes from outside."""
    written, reads = set(), {}   # once each: a var listed twice would get its grad twice (x * x reads x twice)
    for op in block.ops:
        reads.update((n, None) for n in op.input_names() if n not in written and n != EMPTY_VAR)
        written.update(op.output_names())
    return list(reads)


def differentiated_run(g, replay: Block, outputs: list[str]) -> list[OpDesc]:
    """A conditional_block that always runs ``replay``, writing ``outputs``, then its grad ops from conditional_block's
    own maker."""
    always = declare(g.block, VarDesc(Replay(replay).unique("always"), [1], VarType.BOOL)).name
    scope = Replay(g.block).var("scope", VarType.STEP_SCOPES, None)
    run = OpDesc("conditional_block", {"Cond": [always], "Input": outer_reads(replay)},
                 {"Out": outputs, "Scope": [scope]}, {"is_scalar_condition": True})
    run.set_attr("sub_block", replay.idx, AttrType.BLOCK)
    return [OpDesc("fill_constant", {}, {"Out": [always]}, {"shape": [1], "dtype": int(VarType.BOOL), "value": 1.0}),
            run, *get("conditional_block").grad(g.for_op(run))]


def _conditional_block_grad(g) -> list[OpDesc]:
    """d(conditional_block_grad): the grad op replayed as a nested one is (Replay._branch_grad), in a conditional_block
    that always runs, differentiated as a branch. A branch writing a value it had before updates it in place, so the
    replay reads a copy made before the branch; and a value the grad op read that it or a later op overwrites (a grad
    updated in place, passing through where the branch does not run; a grad a copy's was added to), a copy made before
    the grad op. The copies' grads are given back there."""
    program = g.block.program
    backward = program.blocks[g.attr("sub_block")]
    forward = program.blocks[backward.forward_block_idx]
    first = len(program.blocks)
    top, reads, kept = Replay(child_block(g.block), forward, backward), {}, []

    def keep(name: str, op: OpDesc) -> str:
        kept.append((name, op, g.value_before(name, op)))
        return kept[-1][2]

    rewritten = set(outer_reads(forward)) & set(g.I("Out"))   # the branch reads and overwrites it
    if rewritten:
        branch = next((op for op in g.block.ops if op.type == "conditional_block"
                       and op.attrs.get("sub_block") == forward.idx), None)
        if branch is None:
            raise GradError("conditional_block_grad: its conditional_block is not in its block (the replay reads "
                            f"the value {sorted(rewritten)[0]} had before the branch overwrote it)")
        top.branches[forward.idx] = {name: keep(name, branch) for name in sorted(rewritten)}
    top._branch_grad(g.fwd, reads)
    outputs = [grad for grad in g.O("Input@GRAD") if grad != EMPTY_VAR]
    _read_before(g, program.blocks[first:], keep)
    for grad in outputs:
        top.op("assign", {"X": [reads[grad]]}, {"Out": [grad]})
    for name, op, copy in kept:
        g.add_grad_before(name, op, g.grad_of(copy))
    return differentiated_run(g, top.block, outputs)


def _read_before(g, blocks: list[Block], keep: Callable[[str, OpDesc], str]) -> None:
    """The replay in ``blocks`` reads each value from outside as the grad op did: one that the grad op (a grad it
    updates in place) or a later op (a sum adding a grad given back by add_grad_before) overwrites, from a copy."""
    local = {name for block in blocks for name in block.vars}
    outside = sorted({n for block in blocks for op in block.ops for n in op.input_names()} - local - {EMPTY_VAR})
    copies = {name: keep(name, g.fwd) for name in outside if g.overwritten(name, g.fwd)}
    if not copies:
        return
    for op in (op for block in blocks for op in block.ops):
        op.inputs = {slot: [copies.get(n, n) for n in args] for slot, args in op.inputs.items()}


# a grad op: the backward pass sees it through its inputs and outputs, not the names its block uses; the
# replay recomputes the branch's outputs (Out), so their values need no gradient
defgrad("conditional_block_grad", grad=_conditional_block_grad, no_grad_inputs=["Cond", "Out", "Scope"],
        of="conditional_block")
