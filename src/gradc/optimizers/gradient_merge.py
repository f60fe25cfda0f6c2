"""`gradc compile --gradient-merge K`: gradient accumulation over micro-batches as Paddle's GradientMergeOptimizer
(k_steps=K, avg=True) writes it. Each run adds every parameter's gradient into a persistable `<grad>@GradientMerge`
and counts the run (`gradient_merge_step` = (step + 1) mod K); the update ops (clipping, the schedule's ops, the
optimizer's) run in a conditional block on the K-th run only, on the merged gradients divided by K, which then start
again from 0; a schedule written as ops steps with the updates. A step of K micro-batches of B examples is so one of
K B examples where the loss is a mean over examples (a token-mean loss over padded sequences weighs each micro-
batch's tokens by the micro-batch, as in Paddle). In Python: ``GradientMergeOptimizer(Adam(...), k_steps=K)``, Paddle's
paddle.incubate.optimizer class, whose minimize and apply write the same program. With --amp (AmpPass) the merged
gradients are the scaled ones, and the unscaling, its check for Inf, the scale's update and the skipped or applied
update run in the conditional block, as Paddle's GradientMergeOptimizer over a decorated optimizer writes them."""

from __future__ import annotations

from collections.abc import Mapping

from ..backward import append_backward
from ..errors import GradcError
from ..ir import AttrType, Program, VarType, roles
from ..ops.control_flow_double import outer_reads
from ..schedules import GRADIENT_MERGE_K as K
from .base import Optimizer, ParamAttr, last_gradients
from .emit import LR_SCHEDULE, Emitter

STEP, ZERO, COND = "gradient_merge_step", "gradient_merge_zero", "gradient_merge_cond"


class GradientMergeOptimizer:
    """``inner_optimizer``'s updates once every ``k_steps`` runs, on the mean of those runs' gradients (Paddle's
    avg=True, the only one gradc writes): what ``gradc compile --optimizer ... --gradient-merge K`` writes."""

    def __init__(self, inner_optimizer: Optimizer, k_steps: int = 1, avg: bool = True):
        if not isinstance(inner_optimizer, Optimizer):
            raise GradcError(f"GradientMergeOptimizer: inner_optimizer must be a gradc.optimizers optimizer, not "
                             f"{type(inner_optimizer).__name__} (with mixed precision: AmpPass(options, backward, "
                             f"GradientMergeOptimizer(optimizer, k_steps)))")
        if not isinstance(k_steps, int) or isinstance(k_steps, bool) or k_steps < 1:
            raise GradcError(f"GradientMergeOptimizer: k_steps must be an int >= 1, not {k_steps!r}")
        if avg is not True:
            raise GradcError("GradientMergeOptimizer: avg=False (the summed gradients) is not written by gradc; "
                             "avg=True updates with their mean")
        self.inner_optimizer, self.k_steps = inner_optimizer, k_steps

    def minimize(self, program: Program, loss: str | None = None, parameter_list=None, no_grad_set=None,
                 param_attrs: Mapping[str, ParamAttr] | None = None) -> Program:
        """Append the backward of ``loss`` and the merged updates; return the startup program."""
        return self.apply(program, param_attrs, append_backward(program, loss, parameter_list, no_grad_set))

    def apply(self, program: Program, param_attrs: Mapping[str, ParamAttr] | None = None,
              pairs: list[tuple[str, str]] | None = None) -> Program:
        """The inner optimizer's apply, its updates then moved into the conditional block (merge_gradients)."""
        pairs = pairs if pairs is not None else last_gradients(program.global_block)
        startup = self.inner_optimizer.apply(program, param_attrs, pairs)
        merge_gradients(program, startup, pairs, self.k_steps)
        return startup


def merge_gradients(program: Program, startup: Program, pairs: list[tuple[str, str]], k_steps: int) -> None:
    """Move the update ops of ``program`` (op_role Optimize) into a conditional block run every ``k_steps`` runs, on
    the sums of the ``pairs``' gradients over those runs, divided by ``k_steps``; ``startup`` initialises the sums
    and the counters."""
    block = program.global_block
    # a schedule's ops (LRSched) too: its counter counts updates, as gradc train steps a schedule once per K runs
    # an op that makes a merged gradient rather than rewriting it (AMP's cast of a float16 gradient) makes it each run
    grads = {grad for _, grad in pairs}
    moved = [any(roles.has_role(op, role) for role in (roles.OPTIMIZE, LR_SCHEDULE))
             and not (grads.intersection(op.output_names()) and not grads.intersection(op.input_names()))
             for op in block.ops]
    updates = [op for op, move in zip(block.ops, moved) if move]
    block.ops[:] = [op for op, move in zip(block.ops, moved) if not move]
    emit = Emitter(program)
    emit.init = startup.global_block
    for name, value in ((STEP, 0), (K, k_steps), (ZERO, 0)):
        emit.persistable(name, [1], VarType.INT32, value, stop_gradient=True)
    block.create_var(COND, [1], VarType.BOOL, stop_gradient=True)
    emit.op("increment", {"X": [STEP]}, {"Out": [STEP]}, {"step": 1.0}, roles.FORWARD)
    emit.op("elementwise_mod", {"X": [STEP], "Y": [K]}, {"Out": [STEP]}, {"axis": -1}, roles.FORWARD)
    emit.op("equal", {"X": [STEP], "Y": [ZERO]}, {"Out": [COND]}, {"axis": -1}, roles.FORWARD)
    merged = {}
    for param, grad in pairs:
        var = block.var(grad)
        merged[grad] = emit.persistable(f"{grad}@GradientMerge", var.shape, var.dtype, 0.0, stop_gradient=True)
        emit.op("elementwise_add", {"X": [grad], "Y": [merged[grad]]}, {"Out": [merged[grad]]}, {"axis": -1},
                roles.BACKWARD, [param, merged[grad]])
    sub = program.append_block(block.idx)
    in_sub = Emitter(program)
    in_sub.block = sub
    for total in merged.values():
        in_sub.op("scale", {"X": [total]}, {"Out": [total]},
                  {"scale": 1.0 / k_steps, "bias": 0.0, "bias_after_scale": False}, roles.BACKWARD)
    for op in updates:   # the updates read (and a clip rewrites) the merged gradients, not this run's
        for slots in (op.inputs, op.outputs):
            for slot, names in slots.items():
                slots[slot] = [merged.get(name, name) for name in names]
        sub.ops.append(op)
    for total in merged.values():
        var = block.var(total)
        in_sub.append(Emitter.fill_constant(total, var.shape, var.dtype, 0.0), roles.OPTIMIZE)
    # its outputs: the state it updates (a clip's norm is the block's own temporary)
    written = list(dict.fromkeys(name for op in sub.ops for name in op.output_names() if block.var(name).persistable))
    scope = block.unused_name("_generated_var_{}")
    block.create_var(scope, None, None).type = VarType.STEP_SCOPES
    run = emit.op("conditional_block", {"Cond": [COND], "Input": outer_reads(sub)},
                  {"Out": written, "Scope": [scope]}, {"is_scalar_condition": True}, roles.FORWARD, [])
    run.set_attr("sub_block", sub.idx, AttrType.BLOCK)
    program.mark_changed()
