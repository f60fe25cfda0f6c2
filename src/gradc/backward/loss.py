"""Which var is the loss: named, or picked by gradc (the float scalar the last op writes, else the one no op reads),
and checked to be one a backward can start from."""

from __future__ import annotations

import warnings

from .. import registry
from ..errors import GradcNotice, GradcWarning, GradError
from ..ir import FLOAT_DTYPES, GRAD_SUFFIX, Block, Program
from ..shapes import numel
from .stale_shapes import corrected_to_one_value

# ops that only watch a value (Paddle's OutScaleForTrainingPass appends one on every output, the loss included; the
# metrics `paddle.static.accuracy` and `auc` append after a classifier's loss): their statistics are no loss, and
# their reading a value leaves it unread
OBSERVERS = frozenset({"moving_average_abs_max_scale", "accuracy", "auc"})
LR_SCHEDULE_ROLE = 0x10   # Paddle's OpRole.LRSched: a learning-rate schedule's ops (exponential_decay's), no loss


def _observes(op) -> bool:
    return op.type in OBSERVERS or bool(int(op.attrs.get("op_role", 0)) & LR_SCHEDULE_ROLE)


# the ops paddle.static.accuracy appends before its accuracy op: part of the metric where only observers read them
METRIC_INPUTS = frozenset({"top_k", "top_k_v2"})


def _last_op(block: Block):
    """The last op of block 0 that is no metric's: observers, the top_k ops only they read (accuracy's own) and,
    among them, constants no op reads (auc's unused ins_tag_weight) are passed over; None if there is none."""
    readers: dict[str, list[int]] | None = None   # made only for a metric's ops: most programs' last op is none
    metric: set[int] = set()
    for idx in reversed(range(len(block.ops))):
        op = block.ops[idx]
        if _observes(op):
            metric.add(idx)
            continue
        if op.type not in METRIC_INPUTS and not metric:
            return op
        if readers is None:
            readers = {}
            for reader, other in enumerate(block.ops):
                for name in other.input_names():
                    readers.setdefault(name, []).append(reader)
        read_by = [reader for name in op.output_names() for reader in readers.get(name, ())]
        if ((op.type in METRIC_INPUTS and read_by and all(r in metric for r in read_by))
                or (metric and not op.input_names() and not read_by)):
            metric.add(idx)
            continue
        return op
    return None


def _last_op_phrase(block: Block, last) -> str:
    """'the last op, T' or, where metrics follow it, 'the last op before the metrics (accuracy), T'."""
    after = block.ops[next(idx for idx, op in enumerate(block.ops) if op is last) + 1:]
    metrics = sorted({op.type for op in after if op.type in OBSERVERS})
    before = f" before the metrics ({', '.join(metrics)})" if metrics else ""
    return f"the last op{before}, {last.type}"


def _carrying_outputs(op) -> list[str]:
    """The op's outputs a gradient can start from: a slot no grad op reads (einsum's InnerCache, declared a scalar)
    is no loss."""
    opdef = registry.OPS.get(op.type)
    skipped = opdef.no_grad_outputs if opdef is not None else frozenset()
    return [name for slot, names in op.outputs.items() if slot not in skipped for name in names]


def loss_candidates(program: Program) -> list[str]:
    """Float vars with a single element written by the last op of block 0 (observers left out), or, in a saved
    program ending with fetch ops (Paddle 3's PIR models end so), fetched by them (metrics left out)."""
    block = program.global_block
    last = _last_op(block)
    if last is None:
        return []
    if last.type == "fetch":   # a saved model fetches its metrics too (an accuracy): no loss
        observed = {name for op in block.ops if op.type in OBSERVERS for name in op.output_names()}
        written = [name for op in block.ops if op.type == "fetch" for name in op.input("X") if name not in observed]
    else:
        written = _carrying_outputs(last)
    names = []
    for name in written:
        var = block.find_var(name)
        if var is not None and var.dtype in FLOAT_DTYPES and _one_value(block, var):
            names.append(name)
    return names


def _one_value(block: Block, var) -> bool:
    """Declared with one value, or with several by a declaration Paddle leaves stale (stale_shapes) but one."""
    if var.shape is None or numel(var.shape) == 1:
        return var.shape is not None
    return corrected_to_one_value(block, var.name, len(block.ops) - 1) is not None


def unread_scalars(program: Program) -> list[str]:
    """Float vars with a single element that an op of block 0 writes and none reads: where a loss usually is
    when the program goes on after it (a softmax for inference written last). Gradients are left out: a forward
    program holding paddle.static.gradients (GradNorm's norms) leaves the gradients of a [1] bias unread."""
    block = program.global_block
    # op.input_names() of each op, without a list made per op: its slots, then the vars its attributes name
    read = {name for op in block.ops if op.type not in OBSERVERS for args in op.inputs.values() for name in args}
    read.update(name for op in block.ops if op.var_attrs and op.type not in OBSERVERS for name in op.attr_var_names())
    names = []
    for op in block.ops:
        if all(map(read.issuperset, op.outputs.values())):   # most ops: every output read, one C-level test
            continue
        if _observes(op) or not op.input_names():   # reading nothing, it writes a constant, no loss (auc's unused
            continue                                # ins_tag_weight)
        for name in _carrying_outputs(op):
            if name in read or name in names:
                continue
            var = block.find_var(name)
            if (var is not None and var.dtype in FLOAT_DTYPES and var.shape is not None and numel(var.shape) == 1
                    and GRAD_SUFFIX not in name):
                names.append(name)
    return names


def default_loss(program: Program, notice: bool = True, notice_sole: bool = True) -> str | None:
    """The loss gradc picks by itself: the one float scalar the last op writes (a saved program's fetch targets),
    else, when the last op writes none, the one float scalar no op reads (Paddle's classifiers compute the loss and
    then a softmax for inference), with a notice naming it (that last one only with ``notice_sole``); None when
    neither gives exactly one."""
    candidates = loss_candidates(program)
    last = _last_op(program.global_block)
    if candidates or last is None or last.type == "fetch":
        if len(candidates) != 1:
            total = _total_of_the_others(program, candidates) if candidates else None
            if total is not None and notice:
                others = ", ".join(name for name in candidates if name != total)
                written = "fetched float scalar" if last.type == "fetch" else f"float scalar {last.type} (last) writes"
                warnings.warn(f"the loss is {total}, the {written} that sums the others ({others}); name another "
                              f"with --loss (loss= in Python)", GradcNotice, stacklevel=3)
            return total
        others = [] if last.type == "fetch" else other_sinks(program, candidates[0])
        trained = [name for name in others if reaches_parameters(program, name)]
        if len(trained) == 1 and not reaches_parameters(program, candidates[0]):
            if notice:   # a metric written last (a CER through argmax and edit_distance) trains nothing
                warnings.warn(f"the loss is {trained[0]}, the one float scalar no op reads that parameters reach "
                              f"through ops with a gradient; {candidates[0]}, which the last op ({last.type}) writes, "
                              f"is reached by none (a metric); name another with --loss (loss= in Python)",
                              GradcNotice, stacklevel=3)
            return trained[0]
        if others and notice:   # a metric written last (a PSNR after the loss) is picked as the loss would be
            warnings.warn(f"the loss is {candidates[0]}, the float scalar the last op ({last.type}) writes; float "
                          f"scalars no op reads besides it: {', '.join(others)}; if one of them is the loss, name it "
                          f"with --loss (loss= in Python)", GradcNotice, stacklevel=3)
        return candidates[0]
    sinks = unread_scalars(program)
    if len(sinks) != 1:
        return None
    if notice and notice_sole:
        phrase = _last_op_phrase(program.global_block, last)
        warnings.warn(f"the loss is {sinks[0]}, the one float scalar no op reads ({phrase}, writes none); name "
                      f"another with --loss (loss= in Python)", GradcNotice, stacklevel=3)
    return sinks[0]


# ops that add up their inputs, scaled: a total loss is its weighted terms summed with these
SUMMING = frozenset({"elementwise_add", "elementwise_sub", "scale", "sum"})


def _total_of_the_others(program: Program, candidates: list[str]) -> str | None:
    """The one candidate that is a weighted sum of terms among which every other candidate is (a distillation's
    loss fetched with its KL and feature terms); None when none is or several are (a PSNR beside its loss)."""
    writers = {name: op for op in program.global_block.ops for name in op.output_names()}

    def terms(name: str) -> set[str]:
        found, pending = set(), [name]
        while pending:
            op = writers.get(pending.pop())
            if op is not None and op.type in SUMMING:
                new = set(op.input_names()) - found
                found |= new
                pending += new
        return found
    totals = [name for name in candidates if set(candidates) - {name} <= terms(name)]
    return totals[0] if len(totals) == 1 else None


def other_sinks(program: Program, picked: str) -> list[str]:
    """Float scalars no op reads, besides ``picked``, written by ops with a gradient (an accuracy's are no loss)."""
    sinks = [name for name in unread_scalars(program) if name != picked]
    if not sinks:   # most programs: the loss alone, no writers to find
        return []
    writers = {name: op.type for op in program.global_block.ops for name in op.output_names()}
    return [name for name in sinks
            if (opdef := registry.OPS.get(writers[name])) is not None and opdef.grad not in (None, registry.NO_GRAD)]


def reaches_parameters(program: Program, name: str) -> bool:
    """Whether a parameter of block 0 reaches ``name`` through ops with a gradient and the inputs they
    differentiate (an op gradc does not know, or one running a sub-block, counts as reaching)."""
    block = program.global_block
    writers = {out: op for op in block.ops for out in op.output_names()}
    seen, pending = set(), [name]
    while pending:
        var_name = pending.pop()
        var = block.find_var(var_name)
        if var is not None and var.is_parameter:
            return True
        op = writers.get(var_name)
        if op is None or var_name in seen:
            continue
        seen.add(var_name)
        opdef = registry.OPS.get(op.type)
        if opdef is None or "sub_block" in op.attrs:
            return True
        if opdef.grad not in (None, registry.NO_GRAD):
            pending += [arg for slot, args in op.inputs.items() if slot not in opdef.no_grad_inputs for arg in args]
    return False


def no_loss_hint(program: Program) -> str:
    """Why no loss was picked, and the vars that could be it, for an error that asks for the loss's name."""
    candidates = loss_candidates(program)
    if candidates:
        return f"the last op writes several float scalars ({', '.join(candidates)})"
    ops, last = program.global_block.ops, _last_op(program.global_block)
    if last is not None and last.type == "fetch":
        fetched = ", ".join(name for op in ops if op.type == "fetch" for name in op.input("X"))
        return (f"no fetch target ({fetched}) is a float scalar: a saved inference model has no loss (gradc compile "
                f"--add-loss adds one, gradc.add_loss in Python)")
    where = f"the last op of block 0 ({last.type})" if last is not None else "block 0 has no ops and"
    sinks = unread_scalars(program)
    return f"{where} writes no float scalar" + (f"; float scalars no op reads: {', '.join(sinks)}" if sinks else "")


def resolve_loss(block: Block, loss: str | None, any_shape: bool = False, what: str = "loss") -> tuple[str, int]:
    """The loss's name and the index of its last writer; ``any_shape``: a target of gradients() (``what``), whose
    elements' gradients are summed (seeded with ones), as paddle.static.gradients does."""
    if loss is None:
        loss = default_loss(block.program)
        if loss is None:
            raise GradError(f"cannot pick the loss by itself: {no_loss_hint(block.program)}; name it "
                            f"(--loss on the command line, loss= in Python)")
    for idx in range(len(block.ops) - 1, -1, -1):
        if loss in block.ops[idx].output_names():
            var = block.find_var(loss)
            if var is None:   # an op appended by hand without its var: 'must be a float var' would mislead
                where = f"block 0, written by op {idx}, {block.ops[idx].type}"
                raise GradError(f"{what} '{loss}' ({where}) is not declared: declare it with block.create_var(name, "
                                f"shape, dtype) (gradc.verify(program) lists every undeclared var)")
            if var.dtype not in FLOAT_DTYPES:
                raise GradError(f"{what} '{loss}' must be a float var (block 0, written by op {idx})")
            known = var.shape is not None
            if known and not any_shape and numel(var.shape) > 1:
                _correct_stale(block, loss, idx)
                if numel(var.shape) > 1:   # a batch dim (-1) is summed, a known size not
                    raise GradError(f"loss '{loss}' has shape {var.shape}: a loss is one value (reduce it with a "
                                    f"mean or a sum first)")
            if known and numel(var.shape) < 0:   # Paddle seeds such a loss with ones
                warnings.warn(f"{what} '{loss}' has shape {var.shape}, one value per example: its gradients are those "
                              f"of its sum over the batch, as in Paddle (a mean of it averages them)", GradcWarning,
                              stacklevel=2)
            return loss, idx
    candidates = ", ".join(loss_candidates(block.program)) or "none"
    raise GradError(f"{what} '{loss}' is not written by any op of block 0 (candidates: {candidates})")


def _correct_stale(block: Block, loss: str, idx: int) -> None:
    """A loss declared with several values because of a declaration Paddle leaves stale (stale_shapes): the vars
    from that one to the loss declared with their true shapes, when the loss's is one value."""
    if (corrected := corrected_to_one_value(block, loss, idx)) is not None:
        for name, shape in corrected.items():
            block.var(name).shape = shape
        block.program.mark_changed()
