"""Asks each forward op's grad maker for its grad ops, in reverse, and wires them together:
zero-filled grads where a grad op reads a grad nobody writes, summed grads where several write."""

from __future__ import annotations

from collections.abc import Collection

from .. import registry
from ..errors import GradError, op_location
from ..ir import GRAD_SUFFIX, OpDesc
from ..makers import GradOp
from . import control_flow
from .accumulate import GradAccumulator
from .job import BlockBackward
from .legacy import may_need_preparing, prepare_forward
from .vars import TmpVars, lookup


def zeros_like(var: str, grad: str) -> OpDesc:
    """``grad`` = zeros shaped like ``var`` (Paddle: fill_any_like, value 0, dtype -1 = same as X)."""
    return OpDesc("fill_any_like", {"X": [var]}, {"Out": [grad]}, {"value": 0.0, "dtype": -1})


class Earlier:
    """For makers whose grad op reads a value an earlier forward op overwrote (GradContext.value_before): a copy of
    it made before that op, and the grads of those copies, added to the value's grad once the reverse pass has
    gone past that op (its grad ops, and its outputs' grads forgotten)."""

    def __init__(self, job: BlockBackward):
        self.job = job
        self.later: dict[int, list[tuple[str, str]]] = {}   # forward op index -> (var, grad of its value before)

    def _index(self, op: OpDesc) -> int:
        return next(idx for idx, fwd in enumerate(self.job.forward_ops) if fwd is op)

    def value_before(self, name: str, op: OpDesc) -> str:
        copy = self.job.versions.save(self.job.forward_block, self._index(op) - 1, name)
        if name in self.job.path.wants_grad:   # the copy's grad is the value's: wanted alike
            self.job.path.wants_grad.add(copy)
        return copy

    def overwritten(self, name: str, op: OpDesc) -> bool:
        return self.job.versions.stale(self.job.forward_block, self._index(op) - 1, name)

    def add_grad_before(self, name: str, op: OpDesc, grad: str) -> None:
        """The grad of a copy value_before made; given back once, however many makers read that one copy."""
        pending = self.later.setdefault(self._index(op), [])
        if (name, grad) not in pending:
            pending.append((name, grad))


def emit_grad_ops(job: BlockBackward) -> list[OpDesc]:
    """The backward ops of ``job``, wired together. Copies of forward values that are overwritten
    later go into the forward block."""
    block, forward_ops, path, versions, names = job.block, job.forward_ops, job.path, job.versions, job.names
    new_tmp = TmpVars(block)
    acc = GradAccumulator(block.idx, names.taken)
    for name in job.given:
        acc.give(name)
    emitted: list[OpDesc] = []

    def zero_fill(grad: str) -> None:
        zero = zeros_like(names.source(grad), grad)
        acc.record_outputs(zero)
        emitted.append(zero)

    written_grads, pending_grads = acc.first_write, acc.pending

    def append(op: OpDesc, reads: list[str] | None = None, written: Collection[str] | None = None) -> None:
        if reads is None:   # else the names the default maker made the op with (and ``written``, its output names)
            reads = op.input_names()
        for name in reads:   # only a grad (its name holds @GRAD) has a source: forward values skip the call
            if GRAD_SUFFIX in name and name not in written_grads and name not in pending_grads:
                var = names.source(name)
                if var is not None and lookup(block, var) is not None:
                    zero_fill(name)
        if pending_grads:   # no grad awaits a sum: most ops, no call
            emitted.extend(acc.sums_before(reads))
        acc.record_outputs(op, reads, written)
        emitted.append(op)

    def has_grad(name: str) -> bool:
        return name in written_grads or name in pending_grads

    def backward_block(fwd: OpDesc, inputs: str, outputs: str):
        return control_flow.backward_block(job, fwd, inputs=inputs, outputs=outputs, has_grad=has_grad,
                                           emit=emit_grad_ops)

    def shape(name: str) -> list[int] | None:
        var = lookup(block, name)
        return None if var is None or var.shape is None else list(var.shape)

    for seed in job.seeds:
        append(seed)
    wanted = path.wants_grad
    wants = wanted.__contains__   # for GradContext
    # in the order emit reads them: a large program's grad names and their table entries are then read in memory order,
    # not scattered in the set's (the rest of wants_grad, a sub-block's given leaves and copies, named when asked)
    names.name_all(path.met)
    on_path = set(path.op_indices)
    # the path's sweep saw every op of the block when it differentiates them all (the rest may write names again)
    stale_reads = versions.may_be_stale(job.forward_block,
                                        path.rewrites if len(forward_ops) == len(job.forward_block.ops) else None)
    earlier = Earlier(job)
    get_opdef = registry.get
    # op type -> (its definition, whether its ops may need prepare_forward, whether its maker is a plugin's, the default
    # maker's straight-line path or None)
    of_type: dict[str, tuple] = {}
    grad_of = names.__getitem__   # the same lookup as names(var), without the call through the class's __call__
    for idx in range(len(forward_ops) - 1, -1, -1):
        fwd = forward_ops[idx]
        known = of_type.get(fwd.type)
        if known is None:
            opdef = get_opdef(fwd.type)
            known = of_type[fwd.type] = (opdef, opdef is not None and may_need_preparing(fwd.type, opdef),
                                         opdef is not None and _from_plugin(opdef.grad),
                                         opdef.grad.one_var_maker(opdef)
                                         if opdef is not None and type(opdef.grad) is GradOp else None)
        opdef, prepare, plugin, one_var_maker = known
        written = ()
        if idx in on_path:
            if prepare:
                prepare_forward(job.forward_block, idx, fwd, opdef)
            maker = opdef.grad
            try:
                if one_var_maker is not None:   # the default maker (most ops): one grad op, reading no more than
                    # these input names, writing these output names before append renames a second writer's
                    made = one_var_maker(fwd, names, wanted)
                    grad_op, reads, written = made if made is not None else maker.grad_op_of(fwd, opdef, names, wanted)
                    # a grad op that writes no wanted grad is dropped (its names: none empty)
                    grad_ops = (grad_op,) if written else ()
                else:
                    context = registry.GradContext(fwd, opdef, wants, new_tmp, backward_block, grad_of, shape,
                                                   block, earlier, has_grad)
                    context.checks_slots = plugin
                    grad_ops, reads = [], None
                    for grad_op in maker(context):
                        outputs = grad_op.output_names()
                        if any(outputs):   # as above
                            grad_ops.append(grad_op)
                            written = outputs if not written and len(outputs) <= 8 else {*written, *outputs}
            except GradError as exc:
                raise _located(job, idx, exc) from None
            except Exception as exc:
                if isinstance(exc, IndexError):
                    _check_outputs_present(job, idx, opdef)
                if not plugin:
                    raise
                raise _plugin_maker_failed(job, idx, maker, exc) from exc
            if opdef.no_grad_outputs:
                _check_nothing_dropped(job, idx, opdef, grad_ops, has_grad)
            if stale_reads:   # it may point the op at copies: its input names read again
                versions.reading(grad_ops, job.forward_block, idx)
                reads = None
            for grad_op in grad_ops:   # the default maker's one op with its input and output names, others' read anew
                append(grad_op, reads, None if reads is None else written)
            if len(written) > 8:   # a short list tested as it is, else a set (an op with many outputs tests each)
                written = set(written)
        if opdef is None or not opdef.partial_write:   # earlier ops see the value this op overwrote
            for args in fwd.outputs.values():
                for name in args:
                    grad = names[name]
                    if grad not in written:   # GradAccumulator.forget, inlined on the pass's hot loop
                        written_grads.pop(grad, None)
                        if pending_grads:   # no grad awaits a sum: most ops, no call
                            pending_grads.pop(grad, None)
        if earlier.later:   # almost always empty: one test per op on the pass's hot loop
            for name, grad in earlier.later.pop(idx, ()):   # the grad of a value before this op, from a later one
                if name in wanted:
                    append(OpDesc("assign", {"X": [grad]}, {"Out": [names(name)]}))
    emitted.extend(acc.remaining_sums())
    for name in job.required:
        if not acc.is_written(name):
            zero_fill(name)
    versions.insert_saves(job.forward_block)
    return emitted


def _located(job: BlockBackward, idx: int, exc: GradError) -> GradError:
    """A grad maker's error, led by where its op is (a nested block's error says where already)."""
    text = str(exc)
    if text.startswith("block "):
        return exc
    return GradError(f"{op_location(job.forward_block.idx, idx, job.forward_ops[idx].type)}: {text}")


def _from_plugin(maker) -> bool:
    """A grad maker defined outside gradc (a plugin's, a user's register_op)."""
    return getattr(maker, "__module__", "gradc").partition(".")[0] != "gradc"


def _plugin_maker_failed(job: BlockBackward, idx: int, maker, exc: Exception) -> GradError:
    """A grad maker from outside gradc raised: its author's bug, named with the op (not 'please report this')."""
    where = op_location(job.forward_block.idx, idx, job.forward_ops[idx].type)
    name = f"{maker.__module__}.{getattr(maker, '__qualname__', type(maker).__name__)}"
    return GradError(f"{where}: its grad maker {name} raised {type(exc).__name__}: {exc} "
                     f"(fix the maker; --debug shows the traceback)")


def _check_nothing_dropped(job: BlockBackward, idx: int, opdef, grad_ops: list[OpDesc], has_grad) -> None:
    """A gradient that reaches an output whose grad the op's maker never reads (a saved statistic, say,
    which a second derivative can reach through the grad op reading it) would be dropped without a word."""
    fwd = job.forward_ops[idx]
    reads = {name for op in grad_ops for name in op.input_names()}
    for slot in opdef.no_grad_outputs:
        for name in fwd.output(slot):
            if has_grad(job.names(name)) and job.names(name) not in reads:
                raise GradError(f"{op_location(job.forward_block.idx, idx, fwd.type)}: a gradient reaches its output "
                                f"'{name}' (slot {slot}), through which gradc does not differentiate the op")


def _check_outputs_present(job: BlockBackward, idx: int, opdef) -> None:
    """After a grad maker failed to read a var: a one-var output (a softmax it saved, say) emptied by a broken
    file is named rather than met as an IndexError."""
    fwd = job.forward_ops[idx]
    for slot in opdef.outputs:
        declared = opdef.slots[slot]
        if not declared.dispensable and not declared.duplicable and not fwd.output(slot):
            raise GradError(f"{op_location(job.forward_block.idx, idx, fwd.type)}: the required output slot "
                            f"'{slot}' is empty")
