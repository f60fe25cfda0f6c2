"""Ops without a gradient between a var and the loss: where a numeric gradient (which counts every path) and the
compiled one (which stops there, as Paddle's does) part, such as a detector's loss on `box_coder`-decoded boxes."""

from __future__ import annotations

from . import registry
from .ir import DIFFERENTIABLE_DTYPES, Block, Program
from .pairing import FORWARD, SHAPE_READERS, op_kinds

DETACH = "share_data"   # the op Paddle's x.detach() appends (pd_op.share_data_ in PIR)


def _loss_ancestors(block: Block, losses: list[str]) -> set[str]:
    """The losses and every var a forward op computes them from."""
    feeds_loss = set(losses)
    for op, kind in reversed(list(zip(block.ops, op_kinds(block)))):
        if kind == FORWARD and feeds_loss & set(op.output_names()):
            feeds_loss |= set(op.input_names())
    return feeds_loss


def gradientless_ops(block: Block, names: list[str], losses: list[str]) -> list[str]:
    """'TYPE (block 0, op I)' for each forward op with no gradient that reads a float value computed from one of
    ``names`` and writes one the losses are computed from; 'TYPE (block 0, op I) input SLOT' where such an op has a
    gradient but reads that value through a slot that gets none (a loss's Label, as in Paddle)."""
    forward = [(index, op) for (index, op), kind in zip(enumerate(block.ops), op_kinds(block)) if kind == FORWARD]
    feeds_loss = _loss_ancestors(block, losses)
    depends, found = set(names), []
    for index, op in forward:
        read = {name for name in op.input_names() if name in depends and _is_float(block, name)}
        if not read:
            continue
        depends |= set(op.output_names())
        opdef = registry.get(op.type)
        if opdef is None or op.type in SHAPE_READERS or not feeds_loss & set(op.output_names()):
            continue
        if opdef.grad is registry.NO_GRAD:
            found.append(f"{op.type} (block 0, op {index})")
        elif opdef.differentiable:
            found += [f"{op.type} (block 0, op {index}) input {slot}" for slot, args in op.inputs.items()
                      if slot in opdef.no_grad_inputs and read & set(args)]
    return found


def sparse_padding_lookups(block: Block, names: list[str]) -> dict[str, str]:
    """Each of ``names`` a sparse lookup with a padding id reads, with 'TYPE (block 0, op I) padding_idx P': Paddle's
    sparse table gradient keeps the padding rows (the output gradient of their positions), where the loss does not
    depend on them, so central differences give 0 there."""
    found = {}
    for index, op in enumerate(block.ops):
        if op.type in ("lookup_table", "lookup_table_v2") and op.attrs.get("is_sparse") \
                and op.attrs.get("padding_idx", -1) != -1 and op.inputs["W"][0] in names:
            found[op.inputs["W"][0]] = f"{op.type} (block 0, op {index}) padding_idx {op.attrs['padding_idx']}"
    return found


def gradient_scaling_ops(block: Block, names: list[str]) -> list[str]:
    """'TYPE (block 0, op I)' for each op whose gradient is deliberately not its output's derivative and which reads
    a value computed from one of ``names``: warpctc with norm_by_times divides each sequence's gradient, and not
    its loss, by the sequence's length, as Paddle's does."""
    depends, found = set(names), []
    for index, op in enumerate(block.ops):
        if depends & set(op.input_names()):
            depends |= set(op.output_names())
            if op.type == "warpctc" and op.attrs.get("norm_by_times"):
                found.append(f"{op.type} (block 0, op {index})")
    return found


def mismatch_reasons(block: Block, bad: list[str], losses: list[str]) -> str:
    """Why the compiled gradients of ``bad`` may differ from central differences and rightly so, as '; ...'
    clauses (empty when nothing explains it)."""
    padded = sparse_padding_lookups(block, bad)
    cut = gradientless_ops(block, [name for name in bad if name not in padded], losses)
    why = (f"; the loss depends on them through ops without a gradient (Paddle defines none) or inputs that get "
           f"none (a loss's label, as in Paddle), a part central differences count and the compiled gradient "
           f"does not: {', '.join(cut)}" if cut else "")
    why += "".join(f"; {name} is read by {lookup}: its padding row gets the output gradient of the padding "
                   f"positions, as Paddle's sparse kernel gives it, where central differences give 0 (the loss "
                   f"does not depend on it)" for name, lookup in padded.items())
    scaled = gradient_scaling_ops(block, bad)
    return why + (f"; {', '.join(scaled)} has norm_by_times: its gradient is each sequence's divided by the "
                  f"sequence's input length, and its loss is not (Paddle's semantics), so the compiled gradient is "
                  f"not the loss's; check with norm_by_times off" if scaled else "")


def _is_float(block: Block, name: str) -> bool:
    var = block.find_var(name)
    return var is not None and var.dtype in DIFFERENTIABLE_DTYPES


def reattached(program: Program, names) -> Program:
    """A copy of ``program`` where each of ``names`` and every float var Paddle marked stop_gradient only by its
    propagation from them (every input of the op writing it was stop_gradient: a fed window's mean, its scaled copy)
    has a gradient: a var checked by name gets its gradient along every path. A var written by an op that reads a var
    with a gradient is stop_gradient by the user's wish (a detach), and stays so; so does what x.detach() writes
    (share_data), of a frozen MoCo key encoder's output too."""
    copy = program.clone()
    block = copy.global_block
    stopped = {name for name, var in block.vars.items() if var.stop_gradient}
    live = {name for name in names if block.find_var(name) is not None}
    for op, kind in zip(block.ops, op_kinds(block)):
        inputs = set(op.input_names())
        if kind == FORWARD and inputs & live and inputs <= stopped and op.type != DETACH:
            live |= {name for name in op.output_names() if _is_float(block, name)}
    for name in live:
        block.find_var(name).stop_gradient = False
    return copy


def detached(program: Program, losses: list[str]) -> tuple[Program, list[str]]:
    """A copy of ``program`` without the forward ops whose outputs are all stop_gradient float vars (a detach,
    `target.stop_gradient = True`: where the compiled backward stops by the user's wish), and those ops' outputs,
    which a run of the copy is to be fed. Central differences of the copy, fed the detached values of the
    unperturbed program, count what the compiled gradient counts."""
    copy = program.clone()
    block = copy.global_block
    feeds_loss = _loss_ancestors(block, losses)
    kept, held = [], []
    for op, kind in zip(block.ops, op_kinds(block)):
        outputs = op.output_names()
        # a detached value off the losses' path (an OCR metric's zeros_like) is left to its op: fed, it would be
        # checked against a declaration Paddle may give wrong (edit_distance's [-1, 5] for [B, 1])
        if (kind == FORWARD and outputs and not set(outputs) & set(losses) and feeds_loss & set(outputs)
                and all((var := block.find_var(n)) is not None and var.stop_gradient and _is_float(block, n)
                        for n in outputs)
                and any(_is_float(block, name) for name in op.input_names())):
            held += [name for name in outputs if name not in held]
        else:
            kept.append(op)
    block.ops = kept
    return copy, held


def cut_at(program: Program, names: list[str]) -> tuple[Program, list[str]]:
    """A copy of ``program`` without the ops that write ``names`` (intermediate vars, such as a tagger's emissions),
    which a run of the copy is to be fed: the loss as a function of those values. Also the other outputs of those
    ops that a kept op reads (top_k's indices beside its values), which the run is to be fed too."""
    copy = program.clone()
    block, wanted = copy.global_block, set(names)
    removed = [op for op in block.ops if wanted & set(op.output_names())]
    block.ops = [op for op in block.ops if not wanted & set(op.output_names())]
    read = {name for op in block.ops for name in op.input_names()}
    return copy, [name for op in removed for name in op.output_names() if name not in wanted and name in read]
