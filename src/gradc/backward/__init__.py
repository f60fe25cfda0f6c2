"""The backward pass: a short pipeline of small steps (DESIGN section 1).

    loss -> path (which ops) -> makers (which grad ops) -> zeros + sums -> grad vars -> roles
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

from ..errors import GradcWarning, GradError
from ..gcpause import gc_paused
from ..ir import Block, OpDesc, Program, roles
from ..verify_shapes import check_definitions
from .emit import emit_grad_ops
from .frozen import recorded_frozen
from .job import BlockBackward
from .loss import default_loss, loss_candidates, no_loss_hint, other_sinks, resolve_loss, unread_scalars
from .names import GradNames
from .path import OpPath, check_complex, check_makers, find_path
from .targets import check_float, given_seed, ones_seed, paired_targets
from .ungraded import stopped_inputs
from .vars import declare_grad_vars
from .versions import Versions

__all__ = ["append_backward", "append_grad_ops", "default_loss", "gradients", "loss_candidates", "no_loss_hint",
           "other_sinks", "unread_scalars"]


def append_backward(program: Program, loss: str | Sequence[str] | None = None,
                    parameter_list: Iterable[str] | None = None,
                    no_grad_set: Iterable[str] | None = None, any_shape: bool = False,
                    loss_grad: str | None = None) -> list[tuple[str, str]]:
    """Append the backward ops of ``loss`` to block 0; return [(param, param@GRAD), ...].

    ``loss`` is one name or several (a multi-task model's heads): several give, in one backward, the
    gradients of their sum. ``parameter_list`` restricts which parameters get gradients (default: every
    var with is_parameter but those Paddle froze, backward.frozen); ``no_grad_set`` names further vars that
    get none. In a program that already has a backward, grads whose name is taken are named
    ``param@GRAD@2`` (see gradc.backward.names).
    ``any_shape``: losses of any shape, their elements' gradients summed; ``loss_grad``: the var holding
    d(result)/d(loss) instead of ones (a vector-Jacobian product; one loss only).
    """
    losses = [loss] if loss is None or isinstance(loss, str) else list(loss)
    if not losses:
        raise GradError("append_backward needs a loss: an empty list given")
    repeated = sorted({name for name in losses if losses.count(name) > 1}, key=str)
    if repeated:   # summed twice would double its gradients, which a multi-task weighting says better in the program
        raise GradError(f"loss(es) given twice: {', '.join(map(str, repeated))}: give each loss once")
    if loss_grad is not None and len(losses) != 1:
        raise GradError(f"loss_grad seeds one loss; {len(losses)} given ({', '.join(losses)})")
    return _append_backward(program, [(name, loss_grad) for name in losses], parameter_list, no_grad_set, any_shape,
                            "loss")


@gc_paused()
def _append_backward(program: Program, targets: list[tuple[str | None, str | None]],
                     parameter_list: Iterable[str] | None, no_grad_set: Iterable[str] | None, any_shape: bool,
                     what: str, inputs: Iterable[str] = ()) -> list[tuple[str, str]]:
    """append_backward of several ``targets``, each (name, the var seeding its grad or None for ones): the
    backward of sum_i <target_i, seed_i>, so a target another one depends on gets its seed plus what flows back.
    ``what`` names a target in errors ("loss", "target")."""
    block = program.global_block
    check_definitions(program)
    resolved = [(*resolve_loss(block, target, any_shape, what), given) for target, given in targets]
    # a comprehension's attribute read is specialised to the slot; attrgetter's is not
    all_params = [name for name, var in block.vars.items() if var.is_parameter]
    params = all_params if parameter_list is None else list(parameter_list)
    if parameter_list is not None:
        unknown = [p for p in params if block.find_var(p) is None]
        if unknown:
            raise GradError(f"parameter(s) not declared in block 0: {', '.join(unknown)}")
        check_float(block, params, "parameter")
    unknown = sorted(name for name in set(no_grad_set or ()) if not any(b.find_var(name) for b in program.blocks))
    if unknown:
        raise GradError(f"no-grad var(s) not declared in the program: {', '.join(unknown)}")
    no_grad = set(no_grad_set or ())
    if parameter_list is not None:   # the parameters left out get none
        no_grad |= set(all_params) - set(params)

    names = GradNames(program)
    seeds = [ones_seed(block, target, names(target)) if given is None
             else given_seed(block, target, given, names(target)) for target, _, given in resolved]
    loss_ops = [block.ops[idx] for _, idx, _ in resolved]   # copies of overwritten values may be inserted before them
    n_forward = max(idx for _, idx, _ in resolved) + 1
    path, last_writer = _differentiate(block, n_forward, {target for target, _, _ in resolved}, no_grad, names,
                                       seeds=seeds, inputs=frozenset(inputs), infer_frozen=parameter_list is None)
    if what == "loss":   # as Paddle's: gradients() of a task's loss (PCGrad, GradNorm) leaves its op a forward op
        roles.set_roles(loss_ops, roles.LOSS)
    roles.set_roles(seeds, roles.LOSS | roles.BACKWARD)
    pairs = [(p, names[p]) for p in params if p in path.wants_grad]
    roles.tag_param_grads(last_writer, pairs)
    return pairs


def _differentiate(block: Block, n_forward: int, targets: set[str], no_grad: set[str], names: GradNames,
                   seeds: list[OpDesc], inputs: frozenset[str] = frozenset(),
                   infer_frozen: bool = False) -> tuple[OpPath, dict[str, OpDesc]]:
    """Append to ``block`` the backward of its first ``n_forward`` ops with respect to ``targets``,
    whose grads the ``seeds`` write (or, with no seeds, the caller feeds); returns the path and the last backward op
    writing each name. ``inputs``: vars differentiated towards wherever they are written (gradients()' inputs);
    ``infer_frozen``: parameters Paddle froze (backward.frozen) get none, as its append_backward leaves them out."""
    forward_ops = block.ops[:n_forward]
    path = find_path(block, forward_ops, targets, no_grad, inputs=inputs)
    # only a path that stops somewhere can hold a frozen parameter: the inference's sweep is skipped otherwise
    if infer_frozen and path.stops and (frozen := path.wants_grad.intersection(recorded_frozen(block))):
        path = find_path(block, forward_ops, targets, no_grad | frozen, inputs=inputs)
    check_makers(block, path)
    check_complex(block, path)
    given = [] if seeds else [names(t) for t in targets]
    backward_ops = emit_grad_ops(BlockBackward(block=block, forward_block=block, forward_ops=forward_ops, path=path,
                                               versions=Versions(block.program), names=names, seeds=seeds,
                                               given=given))
    roles.set_roles(backward_ops, roles.BACKWARD)
    block.ops.extend(backward_ops)
    last_writer = declare_grad_vars(block, backward_ops, names.sources)
    block.program.mark_changed()
    return path, last_writer


@gc_paused()
def append_grad_ops(program: Program, targets: Iterable[str], no_grad_set: Iterable[str] = ()) -> set[str]:
    """Append the backward of block 0 for ``targets`` whose grads (``t@GRAD``, or ``t@GRAD@2`` in a program
    that already has them) the caller feeds. Returns the vars that get gradients."""
    block = program.global_block
    check_definitions(program)
    targets = set(targets)
    last_write = {name: idx for idx, op in enumerate(block.ops) for name in op.output_names()}
    unwritten = sorted(targets - last_write.keys())
    if unwritten or not targets:
        raise GradError(f"no op of block 0 writes the target(s): {', '.join(unwritten) or 'none given'}")
    last = max(last_write[target] for target in targets)
    names = GradNames(program)
    for target in targets:
        block.add_var(block.var(target).copy(names(target)))
    return _differentiate(block, last + 1, targets, set(no_grad_set), names, seeds=[])[0].wants_grad


def gradients(program: Program, loss: str | Sequence[str], inputs: str | Iterable[str],
              no_grad_set: Iterable[str] | None = None,
              target_gradients: str | Sequence[str | None] | None = None) -> list[str | None]:
    """Append the backward of ``loss`` and return the grad var of each input (None: no gradient). In a
    program that already has a backward, a grad whose usual name is taken is ``input@GRAD@2``. As
    paddle.static.gradients: ``loss`` is one target of any shape (the gradients of its sum, or, with
    ``target_gradients``, a var of its shape, of the sum of its product with that) or a list of targets (the
    gradients of the sum of theirs; ``target_gradients`` then a list as long, None where a target's is ones), and
    ``inputs`` one name or a list."""
    targets = paired_targets(loss, target_gradients)
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)   # not a name's characters
    block = program.global_block
    undeclared = [name for name in inputs if block.find_var(name) is None]
    if undeclared:
        raise GradError(f"input(s) not declared in block 0: {', '.join(undeclared)}")
    check_float(block, inputs, "input")
    names = GradNames(program)
    _append_backward(program, targets, None, no_grad_set, True, "target", inputs)
    grads = [names(name) if block.find_var(names(name)) is not None else None for name in inputs]
    stopped = [name for name, grad in zip(inputs, grads) if grad is None and block.var(name).stop_gradient]
    if stopped:   # Paddle's answer too, but a None met later says nothing of why
        warnings.warn(f"no gradient of {', '.join(stopped)}: stop_gradient is set (a saved program's inputs have it); "
                      f"clear it first, block.var(name).stop_gradient = False, as x.stop_gradient = False in Paddle",
                      GradcWarning, stacklevel=2)
    cut = stopped_inputs(block, [n for n, g in zip(inputs, grads) if g is None and n not in stopped],
                         {target for target, _ in targets})
    if cut:
        warnings.warn(f"no gradient of {', '.join(cut)}: a var on the way has stop_gradient set (a program saved "
                      f"with stop_gradient inputs marks what they compute so too); clear it as well, "
                      f"block.var(name).stop_gradient = False", GradcWarning, stacklevel=2)
    return grads
