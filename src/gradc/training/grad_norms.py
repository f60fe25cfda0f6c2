"""Per-parameter gradient norms of each training step (`gradc train --log-grad-norms`, ``Trainer(log_grad_norms=
True)``): what shows a gradient exploding or vanishing, layer by layer, before the loss turns NaN or stops moving."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..amp_loss import SCALE_SLOTS  # an AMP program's unscale rewrites the gradients: the norms after it are unscaled
from ..errors import GradcError, GradcWarning
from ..ir import Program
from ..ops.optimizer_checks import UPDATES
from ..optimizers.base import last_gradients
from ..pairing import FORWARD, OPTIMIZER, op_kinds

SHOWN = 8   # the text's line names the largest few; --json has every parameter


def parameter_gradients(program: Program) -> list[tuple[str, str]]:
    """(parameter, gradient) for each parameter of block 0 whose ``@GRAD`` var some op writes: the last backward's
    (``@GRAD@2`` where the loss holds derivatives written by an earlier one, a PDE residual's)."""
    block = program.global_block
    named = _not_read_forward(block, last_gradients(block))
    pairs = named or _updated(block)
    if not pairs:
        raise GradcError("gradient norms: no op of the program writes a parameter's gradient (PARAM@GRAD): is it a "
                         "training program (gradc compile --optimizer)?")
    grads = {grad for _, grad in pairs}
    clipping = next((op for op, kind in zip(block.ops, op_kinds(block)) if kind == OPTIMIZER
                     and op.type not in SCALE_SLOTS and grads.intersection(op.output_names())), None)
    if clipping is not None:   # only the last value of a var can be fetched
        how = "rewrite the gradients in place" if named else "write the gradients the updates read"
        warnings.warn(f"the optimizer's ops {how} (an {clipping.type}: clipping or weight decay): the norms logged "
                      f"are those after it", GradcWarning, stacklevel=3)
    return pairs


def _not_read_forward(block, pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """``pairs`` with a gradient the forward reads (MAML's inner step, w - alpha * w@GRAD, in Paddle's program, whose
    own backward then names the loss's gradients grad/grad/w@GRAD) swapped for the one the parameter's update reads."""
    kinds = op_kinds(block)
    read = {name for op, kind in zip(block.ops, kinds) if kind == FORWARD for name in op.input_names()}
    if not read.intersection(grad for _, grad in pairs):
        return pairs
    updates = dict(_updated(block))
    return [(param, updates.get(param, grad) if grad in read else grad) for param, grad in pairs]


def _updated(block) -> list[tuple[str, str]]:
    """(Param, Grad) of each update op: a PIR program's gradients have no PARAM@GRAD names."""
    pairs = [(op.input("Param")[0], op.input("Grad")[0]) for op in block.ops
             if op.type in UPDATES and op.input("Param") and op.input("Grad")]
    return sorted(dict(pairs).items())


def overflow_flag(program: Program) -> list[str]:
    """[the var update_loss_scaling reads as FoundInfinite], or [] in a program without dynamic loss scaling."""
    return next(([op.input("FoundInfinite")[0]] for op in program.global_block.ops
                 if op.type == "update_loss_scaling" and op.input("FoundInfinite")), [])


def gradient_norms(pairs: list[tuple[str, str]], gradients: list, overflowed: bool = False) -> dict[str, float]:
    """The L2 norm of each parameter's gradient, in float64 (a float16 gradient's square would overflow); NaN at a
    step whose gradients ``overflowed``, which loss scaling skips (update_loss_scaling zeroes what is left of them)."""
    if overflowed:
        return {param: math.nan for param, _ in pairs}
    return {param: float(np.linalg.norm(np.asarray(grad, dtype=np.float64).ravel()))
            for (param, _), grad in zip(pairs, gradients)}


def total_norm(norms: dict[str, float]) -> float:
    """The global norm over all parameters, as ClipGradByGlobalNorm measures it."""
    return math.sqrt(sum(norm * norm for norm in norms.values()))


def describe(norms: dict[str, float]) -> str:
    """'grad norms: total 3.2; fc.w 3.1, fc.b 0.7, ... (8 of 20, largest first)'."""
    ranked = sorted(norms.items(), key=lambda item: -item[1] if not math.isnan(item[1]) else -math.inf)
    listed = ", ".join(f"{param} {norm:.4g}" for param, norm in ranked[:SHOWN])
    more = f" ({SHOWN} of {len(ranked)}, largest first; --json has all)" if len(ranked) > SHOWN else ""
    return f"grad norms: total {total_norm(norms):.4g}; {listed}{more}"
