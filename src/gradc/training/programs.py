"""The programs a training program implies: its forward part (what evaluation runs and export starts from:
backward, optimizer and learning-rate ops removed, dropout and batch norm in test mode, as Paddle's
``clone(for_test=True)``), the model's parameters, and the ops some fetches need."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .. import registry
from ..errors import GradcError, closest
from ..executor.feeding import program_inputs
from ..executor.liveness import referenced_names
from ..io.pdiparams import persistable_names
from ..ir import GRAD_SUFFIX, AttrType, Block, OpDesc, Program, roles
from ..opdef import sub_block
from ..ops.optimizer_checks import UPDATES
from ..optimizers.emit import LR_SCHEDULE
from ..pairing import BACKWARD, FEED_FETCH, OPTIMIZER, SHAPE_READERS, op_kinds
from .history import default_fetch

TRAINING_ROLES = roles.BACKWARD | roles.OPTIMIZE | LR_SCHEDULE


def is_training_op(op) -> bool:
    """Backward, optimizer or learning-rate op: by Paddle's op_role, else by what it is and writes."""
    role = op.attrs.get("op_role")
    if isinstance(role, int) and role & TRAINING_ROLES:
        return True
    return op.type in UPDATES or any(GRAD_SUFFIX in name for name in op.output_names())


def _update_ops(program: Program) -> Iterator[tuple[Block, OpDesc]]:
    """Each optimizer or update op of any block (gradient merge's sit in a conditional sub-block), with its block."""
    for block in program.blocks:
        for op in block.ops:
            if op.type in UPDATES or roles.has_role(op, roles.OPTIMIZE):
                yield block, op


def updates_parameters(program: Program) -> bool:
    """Whether an op of any block is an optimizer or update op."""
    return next(_update_ops(program), None) is not None


def updated_parameters(program: Program) -> list[str]:
    """The parameters an update op of any block writes (its ParamOut: a parameter ParamAttr(learning_rate=0) keeps at
    its value too), by name: a fine-tuned model's own part, without the frozen base."""
    return sorted({name for block, op in _update_ops(program) for name in op.output_names()
                   if (var := block.find_var(name)) is not None and var.is_parameter})


def updates_nothing(program: Program) -> str | None:
    """Why a step of ``program`` would change none of its parameters (no optimizer or update op in any block), or
    None: a forward program, or a compiled backward without --optimizer, given to training by mistake."""
    if updates_parameters(program):
        return None
    has_backward = any(is_training_op(op) for op in program.global_block.ops)
    what = "it has a backward but no optimizer op" if has_backward else "a forward program: no backward, no optimizer"
    return (f"no op of the program updates its parameters ({what}), so training would change nothing; gradc "
            f"compile FORWARD.pb -o TRAIN.pb --optimizer adam (or sgd, momentum, ...) writes a training program")


def forward_part(program: Program, derivatives_of: Iterable[str] = (), test_mode: bool = True) -> Program:
    """A copy without the training ops, in test mode (unless ``test_mode`` is False), without the vars no op uses any
    more. ``derivatives_of``: vars (an export's fetches) whose backward ops stay, as Paddle's save_inference_model
    keeps them (a PINN's du/dx, written by the backward of u, is part of the model)."""
    test = program.clone()
    block = test.global_block
    kinds = op_kinds(block)   # a PIR program's ops have no op_role: inferred
    kept = _derivative_ops(block.ops, kinds, set(derivatives_of))
    training = [kind in (BACKWARD, OPTIMIZER) or is_training_op(op) for op, kind in zip(block.ops, kinds)]
    dropped = {name for op, dropping in zip(block.ops, training) if dropping and id(op) not in kept
               for name in op.output_names()}
    block.ops = [op for op, kind, dropping in zip(block.ops, kinds, training) if id(op) in kept or (
                 not dropping and not (kind == FEED_FETCH and dropped.intersection(op.input_names())))]
    if not block.ops:
        raise GradcError("the program has no forward ops (only backward, optimizer or learning-rate ops)")
    _empty_unreachable_blocks(test)
    if test_mode:
        set_test_mode(test)
    drop_unused_vars(test)
    return test


def checkable_forward_part(program: Program) -> Program | None:
    """The forward part (in training mode) of a whole training program, Paddle's minimize program saved as it trains,
    with the backward ops its loss is computed from and without the forward ops computed from the other backward
    ops' results; or None: no backward op, or the loss is computed from what a backward op it does not need writes."""
    kinds = op_kinds(program.global_block)
    if BACKWARD not in kinds:
        return None
    # the backward ops the loss is computed from stay (MAML's inner step, written by static.gradients)
    loss = default_fetch(program)
    forward = forward_part(_before_the_update(program, kinds), derivatives_of=loss, test_mode=False)
    written = {name for op in forward.global_block.ops for name in op.output_names()}
    state = set(persistable_names(program))   # parameters and optimizer state: the values --params and startups give
    # what the backward and optimizer ops write, then the forward ops computed from it (a Grad-CAM map from
    # feat@GRAD, after paddle.static.gradients): no part of the loss
    tainted = {name for op, kind in zip(program.global_block.ops, kinds) if kind in (BACKWARD, OPTIMIZER)
               for name in op.output_names()} - written - state
    kept = []
    for op in forward.global_block.ops:
        if tainted.intersection(op.input_names()):
            tainted.update(op.output_names())
        else:
            kept.append(op)
    if tainted.intersection(loss):
        return None
    forward.global_block.ops = kept
    drop_unused_vars(forward)
    return forward


def _before_the_update(program: Program, kinds: list[str]) -> Program:
    """A copy ending before the first optimizer op after the backward: forward ops appended after minimize (MoCo's
    key encoder moved towards the query's, its queue of keys) update state from the stepped weights, and are no part
    of the loss the backward differentiated."""
    first_backward = kinds.index(BACKWARD)
    end = next((idx for idx in range(first_backward, len(kinds)) if kinds[idx] == OPTIMIZER), len(kinds))
    if all(kind in (BACKWARD, OPTIMIZER) for kind in kinds[end:]):
        return program
    before = program.clone()
    before.global_block.ops = before.global_block.ops[:end]
    return before


def _derivative_ops(ops: list, kinds: list[str], wanted: set[str]) -> set[int]:
    """The ids of the backward ops ``wanted`` is computed with (optimizer and learning-rate ops never)."""
    kept, needed = set(), set(wanted)
    for op, kind in zip(reversed(ops), reversed(kinds)):
        outputs = set(op.output_names())
        if kind != OPTIMIZER and op.type not in UPDATES and outputs & needed:
            needed |= set(op.input_names())
            if kind == BACKWARD or is_training_op(op):
                kept.add(id(op))
    return kept


def _empty_unreachable_blocks(program: Program) -> None:
    """The sub-blocks of control-flow ops removed (gradient merge's conditional update) lose their ops, so their
    optimizer state is no var of the forward part; block indices stay as the kept ops name them."""
    reachable, pending = {0}, [program.global_block]
    while pending:
        for op in pending.pop().ops:
            index = sub_block(op)
            if isinstance(index, int) and index not in reachable and index < len(program.blocks):
                reachable.add(index)
                pending.append(program.blocks[index])
    for index, block in enumerate(program.blocks):
        if index not in reachable:
            block.ops = []


def set_test_mode(program: Program) -> None:
    """is_test on every op that has the attribute (dropout keeps every unit, batch norm uses its running
    statistics), as Paddle's inference optimisation does."""
    for block in program.blocks:
        for op in block.ops:
            opdef = registry.get(op.type)
            if "is_test" in op.attrs or (opdef is not None and "is_test" in opdef.attrs):
                op.set_attr("is_test", True, AttrType.BOOLEAN)
    program.mark_changed()


def drop_unused_vars(program: Program, keep: Iterable[str] = ()) -> None:
    used = set(keep)
    for block in program.blocks:
        for op in block.ops:
            used |= set(op.input_names()) | set(op.output_names())
    for block in program.blocks:
        block.vars = {name: var for name, var in block.vars.items() if name in used}
    program.mark_changed()


def model_parameters(program: Program) -> list[str]:
    """The persistable vars the forward part reads or writes (parameters, batch-norm statistics), by name:
    what a trained model is, without the optimizer's state."""
    return persistable_names(forward_part(program))


def prune(program: Program, fetches: list[str], feeds: Iterable[str] = (), from_data: bool = False) -> Program:
    """A copy of ``program`` with only the block-0 ops the fetches need; fed vars cut the graph above them.
    ``from_data``: the feeds are a data set's arrays (evaluation), not names the user gave (export)."""
    pruned = program.clone()
    block, feeds = pruned.global_block, set(feeds)
    for name in [*fetches, *feeds]:
        if block.find_var(name) is None:
            close = closest(name, block.vars, ignore_case=True)
            role = "fetch" if name in fetches else "input"
            raise GradcError(f"{role} '{name}' is not a var of block 0 of the program"
                             + (f" (did you mean '{close}'?)" if close else ""))
    block.ops, needed = _needed_ops(pruned, fetches, feeds)
    if unfed := _unfed(block, block.ops, needed, feeds):   # all of them at once: a text model's ids and lengths
        quoted = _in_words(unfed)
        one = len(unfed) == 1
        # a batch axis: a first dim of -1, or the fed inputs' (a program saved for batches of 32)
        batch_dims = {-1, *(shape[0] for name in feeds if (shape := getattr(block.find_var(name), "shape", None)))}
        unbatched = all((shape := getattr(block.find_var(name), "shape", None)) and shape[0] not in batch_dims
                        for name in unfed)
        it = "it" if one else "them"
        feed_it = (f"{'it has' if one else 'they have'} no batch axis to take from the data: give {it} in --feed "
                   f"FIXED.npz, the same for every batch (fixed= of gradc.Dataset in Python)"
                   if from_data and unbatched else
                   f"the data has no array{'' if one else 's'} {quoted}: add {'one' if one else 'them'}" if from_data
                   else f"feed {it}: {' '.join(f'--input {name}' for name in unfed)} on the "
                        f"command line, feeds= in Python")
        raise GradcError(f"the fetches need {quoted}, which {'is' if one else 'are'} neither fed nor computed from "
                         f"the feeds ({feed_it}; or fetch something that does not depend on {'it' if one else 'them'})")
    drop_unused_vars(pruned, keep=[*fetches, *feeds])
    return pruned


def reads_data_values(block, name: str) -> bool:
    """Whether ``name``'s values come from a fed var's values (a caption's tokens shifted), not only from its shape
    (an InfoNCE's arange over the batch) or from constants."""
    writers = {out: op for op in block.ops for out in op.output_names()}
    pending, seen = [name], set()
    while pending:
        var = pending.pop()
        if var in seen:
            continue
        seen.add(var)
        op = writers.get(var)
        if op is None:
            found = block.find_var(var)
            if found is not None and not found.persistable:
                return True
        elif op.type not in SHAPE_READERS and op.type != "shape64":   # a zeros_like's values are no data's
            pending.extend(op.input_names())
    return False


def _in_words(names: list[str]) -> str:
    """'a', 'b' and 'c': the names quoted as a sentence lists them."""
    quoted = [f"'{name}'" for name in names]
    return " and ".join(filter(None, [", ".join(quoted[:-1]), quoted[-1]]))


def computed_from_data(block) -> set[str]:
    """The vars of ``block`` its ops compute from the fed data alone, reading no parameter or other persistable on
    the way (a caption's shifted tokens, the count of the labels not ignore_index)."""
    from_data, written = set(), set()   # in op order: an op writing a var it reads (in place) reads the earlier value
    for op in block.ops:
        fed = all(name in from_data if name in written else not getattr(block.find_var(name), "persistable", True)
                  for name in op.input_names())
        for name in op.output_names():
            (from_data.add if fed else from_data.discard)(name)
            written.add(name)
    return from_data


def missing_inputs(program: Program, fetches: list[str], feeds: Iterable[str]) -> list[str]:
    """The vars ``fetches`` need from outside block 0 that ``feeds`` leave out (not persistable: inputs)."""
    feeds = set(feeds)
    return _unfed(program.global_block, *_needed_ops(program, fetches, feeds), feeds)


def _needed_ops(program: Program, fetches: list[str], feeds: set[str]) -> tuple[list, set[str]]:
    """The block-0 ops the fetches need, fed vars cutting the graph above them, and every var they read."""
    needed, kept = set(fetches), []
    for op in reversed(program.global_block.ops):
        outputs = set(op.output_names())
        if outputs & needed and not outputs <= feeds:
            kept.append(op)
            needed |= referenced_names(program, op) - outputs | (set(op.input_names()) & outputs)
    return kept[::-1], needed


def _unfed(block, kept: list, needed: set[str], feeds: set[str]) -> list[str]:
    """The inputs ``needed`` that neither the ``kept`` ops write nor ``feeds`` give (an op left out writes later)."""
    written = {name for op in kept for name in op.output_names()}
    return [name for name in sorted(needed - written - feeds)
            if block.find_var(name) is not None and not block.find_var(name).persistable]


def fetched_part(program: Program, fetches: list[str], fed: Iterable[str]) -> Program:
    """The ops ``fetches`` need when the feed leaves out an input they do not need (a two-tower model's image
    embeddings from images alone), as Paddle's ``exe.run(use_prune=True)``; else ``program`` whole (an input they
    need is then named by the op that reads it)."""
    fed = set(fed)
    if not fetches or set(program_inputs(program.global_block)) <= fed:
        return program
    try:
        return prune(program, fetches, fed)
    except GradcError:
        return program
