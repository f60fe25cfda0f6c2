"""What each op of a program is for (feed/fetch, forward, backward, optimizer) and which forward op each
grad op differentiates: what the viewer, the DOT picture and the diff show.

Pairing reads the names: a grad op writes the grads of its forward op's inputs (``x@GRAD``, or a renamed
partial ``x@GRAD@RENAME@...``) and reads the grads of its outputs and the forward values themselves. Grad
ops come in the reverse order of the forward ops, so the pairing walks them with a cursor that only moves
back: of the forward ops the names point at, the best match at or before the cursor wins (a type named
``<forward>_grad`` breaks ties). Helper ops with no grad names (a composite maker's temporaries) take the
pairing of the grad op that reads their result; sums of partial grads and zero fills pair with nothing.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from math import prod

from . import registry
from .ir import FLOAT_DTYPES, GRAD_SUFFIX, Block, OpDesc, Program, VarType
from .ops.optimizer_checks import UPDATES

# ops without a gradient whose float inputs give only a shape: no value passes through them
SHAPE_READERS = frozenset({"fill_any_like", "fill_zeros_like", "fill_constant_batch_size_like",
                           "uniform_random_batch_size_like", "shape", "size", "is_empty", "prior_box",
                           "anchor_generator"})

FEED_FETCH, FORWARD, BACKWARD, OPTIMIZER = "feed/fetch", "forward", "backward", "optimizer"
# Paddle's op_role bits: Backward 1, Optimize 2, LRSched 16, Loss 256
_BACKWARD_BIT, _OPTIMIZE_BITS, LOSS_BIT = 1, 2 | 16, 256


def _feed_fetch_names(block: Block) -> set[str]:
    """The feed and fetch holder vars the block's ops can name."""
    names, current = set(), block
    while current is not None:
        names.update(n for n, v in current.vars.items() if v.type in (VarType.FEED_MINIBATCH, VarType.FETCH_LIST))
        current = current.parent
    return names


def op_kinds(block: Block) -> list[str]:
    """The kind of each op of the block: by Paddle's op_role where the op has one; else by what it reads and
    writes (the feed and fetch holders, grad vars, an update op's type); in a block no op of which has a role (a PIR
    program: PIR keeps none), by where it stands and whom it serves (_inferred_kinds)."""
    holders = _feed_fetch_names(block)
    if any(_role(op) is not None for op in block.ops):
        return [_kind(op, holders) for op in block.ops]
    return _inferred_kinds(block.ops, holders)


def _inferred_kinds(ops: list[OpDesc], holders: set[str]) -> list[str]:
    """Grad ops by type; before the last of them, an op writing a grad var or reading a backward op's result is
    backward (the seed, sums of partial grads, a grad PIR writes as a forward op) unless a grad op reads its output
    as a forward value (MAML's query forward, computed from the inner gradients); after the first update op,
    every op is the optimizer's (state written back); then, from the last op back, an op whose outputs are all
    read, and only by backward or optimizer ops (and, after the backward, fetch ops), is one of them: backward if a
    backward op reads it, else the optimizer's (gradient clipping, decay, a learning-rate schedule). A read for the
    shape only does not count: the loss is read so by the backward's seed (a fill_any_like of ones)."""
    typed = [_kind(op, holders, names=False) for op in ops]
    last_grad = max((index for index, kind in enumerate(typed) if kind == BACKWARD), default=-1)
    first_update = next((index for index, kind in enumerate(typed) if kind == OPTIMIZER), len(ops))
    # a seed after an update, before grad ops, starts a later backward (a second minimize()): not the optimizer's
    kinds = [BACKWARD if kind == FORWARD and index < last_grad and (any(is_grad(n) for n in op.output_names())
                                                                    or index > first_update and is_backward_seed(op))
             else OPTIMIZER if kind == FORWARD and index > first_update else kind
             for index, (op, kind) in enumerate(zip(ops, typed))]
    backward_values: set[str] = set()
    differentiated = _differentiated_values(ops, typed)
    for index, op in enumerate(ops[:last_grad]):
        if (kinds[index] == FORWARD and backward_values.intersection(op.input_names())
                and not differentiated.intersection(op.output_names())):
            kinds[index] = BACKWARD   # a grad op PIR writes as a forward one (transpose's, scale's)
        if kinds[index] == BACKWARD:
            backward_values.update(op.output_names())
    readers: dict[str, list[int]] = defaultdict(list)
    for index, op in enumerate(ops):
        for name in set(op.input_names()) if op.type not in SHAPE_READERS else ():
            readers[name].append(index)
    for index in range(len(ops) - 1, -1, -1):
        outputs = set(ops[index].output_names())
        if kinds[index] != FORWARD or not outputs or not all(readers[name] for name in outputs):
            continue
        served = {kinds[reader] for name in outputs for reader in readers[name] if reader != index}
        if index > last_grad:
            served.discard(FEED_FETCH)   # the backward's results fetched, as a PIR training program names them
        if served and served <= {BACKWARD, OPTIMIZER}:
            kinds[index] = BACKWARD if BACKWARD in served else OPTIMIZER
    return kinds


def _differentiated_values(ops: list[OpDesc], typed: list[str]) -> set[str]:
    """The vars grad ops read as their forward op's inputs or outputs: forward values a later backward differentiates,
    though computed from gradients (MAML's fast weights and query loss after `paddle.static.gradients`)."""
    values = set()
    for op, kind in zip(ops, typed):
        opdef = registry.get(op.type) if kind == BACKWARD else None
        forward = registry.get(opdef.grad_op_of) if opdef is not None and opdef.grad_op_of else None
        if forward is not None:
            slots = {*forward.inputs, *forward.outputs}
            values.update(name for slot, names in op.inputs.items() if slot in slots for name in names)
    return values


def op_kind(block: Block, op: OpDesc) -> str:
    return _kind(op, _feed_fetch_names(block))


def _kind(op: OpDesc, holders: set[str], names: bool = True) -> str:
    """By role, else by type, and with ``names`` by the grad vars it writes."""
    if holders and any(n in holders for n in (*op.input_names(), *op.output_names())):
        return FEED_FETCH
    role = _role(op)
    if role is not None:
        if role & _OPTIMIZE_BITS:
            return OPTIMIZER
        return BACKWARD if role & _BACKWARD_BIT else FORWARD
    opdef = registry.get(op.type)
    if (opdef is not None and opdef.grad_op_of) or (names and any(is_grad(n) for n in op.output_names())):
        return BACKWARD
    return OPTIMIZER if op.type in UPDATES else FORWARD


def _role(op: OpDesc) -> int | None:
    role = op.attrs.get("op_role")
    return role if isinstance(role, int) and not isinstance(role, bool) else None


def is_loss(op: OpDesc) -> bool:
    role = op.attrs.get("op_role")
    return isinstance(role, int) and bool(role & LOSS_BIT)


def marked_losses(block: Block) -> dict[int, list[str]]:
    """The forward ops op_role marks as writing a loss (index: their losses). With a backward, only the losses it
    seeds (LOSS@GRAD): Paddle's OutScaleForTrainingPass gives the observer it appends on the loss the loss op's role,
    though nothing differentiates its scale and state."""
    marked = {idx: op.output_names() for idx, op in enumerate(block.ops)
              if is_loss(op) and not (_role(op) or 0) & _BACKWARD_BIT}
    seeded = {loss_of_seed(name) for op in block.ops if is_loss(op) and (_role(op) or 0) & _BACKWARD_BIT
              for name in op.output_names()} - {None}
    if not seeded:
        return marked
    kept = {idx: [name for name in names if name in seeded] for idx, names in marked.items()}
    return {idx: names for idx, names in kept.items() if names}


def is_backward_seed(op: OpDesc) -> bool:
    """A fill_any_like of ones reading a value: the gradient a backward starts from (Paddle's PIR seed,
    pd_op.full_like; `paddle.static.gradients` of an inner loss)."""
    return op.type == "fill_any_like" and op.attrs.get("value") == 1.0 and bool(op.input("X"))


def seed_ops(ops: list[OpDesc], losses) -> list[int]:
    """The indices of the backward ops that write the gradient of one of ``losses`` from no other gradient: the
    seeds a backward starts from (a fill_constant of ones, a fill_any_like of ones reading a batch-sized loss, an
    assign of a given seed)."""
    losses = set(losses)
    return [idx for idx, op in enumerate(ops) if (_role(op) or 0) & _BACKWARD_BIT
            and losses & {loss_of_seed(name) for name in op.output_names()}
            and not any(GRAD_SUFFIX in arg for arg in op.input_names())]


def loss_of_seed(name: str) -> str | None:
    """x of x@GRAD, and of x@GRAD@2 (the name a second backward of x gives its gradient: backward/names.py)."""
    base, _, rest = name.rpartition(GRAD_SUFFIX)
    return base if base and (not rest or rest[0] == "@" and rest[1:].isdigit()) else None


def seeded_losses(block: Block) -> list[str]:
    """The float scalars the backward starts from, where no op_role marks the loss (a PIR program): the X of each
    backward seed."""
    names = []
    for op, kind in zip(block.ops, op_kinds(block)):
        if kind != BACKWARD or not is_backward_seed(op):
            continue
        var = block.find_var(op.input("X")[0])
        if (var is not None and var.dtype in FLOAT_DTYPES and var.shape is not None and prod(var.shape) == 1
                and var.name not in names):
            names.append(var.name)
    return names


def _strip_rename(name: str) -> str:
    return name.split("@RENAME@", 1)[0]


def is_grad(name: str) -> bool:
    return _strip_rename(name).endswith("@GRAD")


def grad_base(name: str) -> str:
    """x@GRAD -> x, x@GRAD@RENAME@block0@1 -> x, x@GRAD@GRAD -> x@GRAD."""
    return _strip_rename(name).removesuffix("@GRAD")


@dataclass(frozen=True)
class OpRef:
    block: int
    index: int


def _is_plumbing(op: OpDesc) -> bool:
    """A sum of one var's partial grads (Paddle's may add into the grad itself), or a zero fill of its grad: it
    differentiates no single op. Any other op that overwrites the grad it reads is the grad op of an in-place op
    (exponential_'s zero fill of x@GRAD), not plumbing."""
    names = [*op.input_names(), *op.output_names()]
    in_place = op.type != "sum" and set(op.input_names()) & set(op.output_names())
    return bool(names) and not in_place and any(is_grad(n) for n in op.output_names()) and len(
        {grad_base(n) if is_grad(n) else n for n in names}) == 1


class _ForwardIndex:
    """Which forward ops read and write each name."""

    def __init__(self, ops: list[tuple[int, OpDesc]]):
        self.ops = dict(ops)
        self.readers: dict[str, list[int]] = defaultdict(list)
        self.writers: dict[str, list[int]] = defaultdict(list)
        for idx, op in ops:
            for name in set(op.input_names()):
                self.readers[name].append(idx)
            for name in set(op.output_names()):
                self.writers[name].append(idx)

    def best(self, op: OpDesc, cursor: int) -> int | None:
        grads_of_inputs = {grad_base(n) for n in op.output_names() if is_grad(n)}
        grads_of_outputs = {grad_base(n) for n in op.input_names() if is_grad(n)}
        values = {n for n in op.input_names() if not is_grad(n)}
        scores: dict[int, int] = defaultdict(int)
        for name in grads_of_inputs:
            for idx in self.readers.get(name, ()):
                scores[idx] += 4
            for idx in self.writers.get(name, ()):   # a seed: the grad of the value the op computes
                scores[idx] += 1
        for name in grads_of_outputs:
            for idx in self.writers.get(name, ()):
                scores[idx] += 4
        if not scores:
            return None
        opdef = registry.get(op.type)
        for idx in scores:
            fwd = self.ops[idx]
            if op.type == f"{fwd.type}_grad" or (opdef is not None and opdef.grad_op_of == fwd.type):
                scores[idx] += 8
            scores[idx] += len(values & (set(fwd.input_names()) | set(fwd.output_names())))
        before = [idx for idx in scores if idx <= cursor] or list(scores)
        return max(before, key=lambda idx: (scores[idx], idx))


def pair_grad_ops(program: Program) -> dict[OpRef, OpRef]:
    """Each grad op -> the forward op it differentiates, in every block: a block's own backward ops pair with
    its forward ops, the ops of a backward block (forward_block_idx set) with those of its forward block."""
    pairs: dict[OpRef, OpRef] = {}
    for block in program.blocks:
        forward = block.forward_block_idx
        if forward is not None and 0 <= forward < len(program.blocks) and forward != block.idx:
            source = program.blocks[forward]
            fwd_ops = list(enumerate(source.ops))
            grad_ops = list(enumerate(block.ops))
        else:
            source = block
            kinds = op_kinds(block)
            grad_ops = [(i, op) for i, op in enumerate(block.ops) if kinds[i] == BACKWARD]
            differentiated = _differentiated_grad_ops(grad_ops)
            fwd_ops = [(i, op) for i, op in enumerate(block.ops) if kinds[i] == FORWARD or i in differentiated]
        pairs.update(_pair_block(block.idx, source.idx, fwd_ops, grad_ops))
    return pairs


def _differentiated_grad_ops(grad_ops) -> set[int]:
    """Grad ops a higher-order backward differentiates: those writing a grad whose own grad (x@GRAD@GRAD) the
    block names (a first-order program names none, so this costs nothing there)."""
    names = {name for _, op in grad_ops for name in (*op.input_names(), *op.output_names())}
    return {idx for idx, op in grad_ops if any(is_grad(n) and f"{_strip_rename(n)}@GRAD" in names
                                               for n in op.output_names())}


def _pair_block(block_idx: int, source_idx: int, fwd_ops, grad_ops) -> dict[OpRef, OpRef]:
    index = _ForwardIndex(fwd_ops)
    found: dict[int, int] = {}
    cursor = max((idx for idx, _ in fwd_ops), default=-1)
    helpers = []
    for idx, op in grad_ops:
        if _is_plumbing(op):
            continue
        match = index.best(op, cursor)
        if match is None:
            helpers.append((idx, op))
        else:
            found[idx] = cursor = match
    readers: dict[str, list[int]] = defaultdict(list)   # which grad ops read each name, in order
    for idx, op in grad_ops:
        for name in op.input_names():
            readers[name].append(idx)
    for idx, op in reversed(helpers):   # a temporary's pairing is its reader's
        for name in op.output_names():
            reader = next((r for r in readers.get(name, ()) if r > idx and r in found), None)
            if reader is not None:
                found[idx] = found[reader]
                break
    return {OpRef(block_idx, idx): OpRef(source_idx, fwd) for idx, fwd in found.items()}


def initialiser_program(block) -> bool:
    """Every op of the block writes persistable vars alone: Paddle's startup program (initialisers), which has no
    loss."""
    return bool(block.ops) and all(block.find_var(name) is not None and block.find_var(name).persistable
                                   for op in block.ops for name in op.output_names())
