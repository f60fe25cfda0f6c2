"""The backward pass: a short pipeline of small steps (DESIGN section 1).

    loss -> path (which ops) -> makers (which grad ops) -> zeros + sums -> grad vars -> roles
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence

from ..errors import GradcNotice, GradcWarning, GradError
from ..gcpause import gc_paused
from ..ir import DIFFERENTIABLE_DTYPES, FLOAT_DTYPES, AttrType, Block, OpDesc, Program, dtype_name, roles
from ..shapes import numel
from ..verify_shapes import check_definitions
from .emit import emit_grad_ops
from .job import BlockBackward
from .names import GradNames
from .path import OpPath, check_complex, check_makers, find_path
from .vars import declare_grad_vars
from .versions import Versions

__all__ = ["append_backward", "append_grad_ops", "default_loss", "gradients", "loss_candidates", "no_loss_hint",
           "unread_scalars"]


def loss_candidates(program: Program) -> list[str]:
    """Float vars with a single element written by the last op of block 0, or, in a saved program ending with
    fetch ops (Paddle 3's PIR models end so), fetched by them."""
    block = program.global_block
    if not block.ops:
        return []
    fetched = [name for op in block.ops if op.type == "fetch" for name in op.input("X")]
    names = []
    for name in fetched if block.ops[-1].type == "fetch" else block.ops[-1].output_names():
        var = block.find_var(name)
        if var is not None and var.dtype in FLOAT_DTYPES and var.shape is not None and numel(var.shape) == 1:
            names.append(name)
    return names


def unread_scalars(program: Program) -> list[str]:
    """Float vars with a single element that an op of block 0 writes and none reads: where a loss usually is
    when the program goes on after it (a softmax for inference written last)."""
    block = program.global_block
    read = {name for op in block.ops for name in op.input_names()}
    names = []
    for op in block.ops:
        for name in op.output_names():
            var = block.find_var(name)
            if (name not in read and name not in names and var is not None and var.dtype in FLOAT_DTYPES
                    and var.shape is not None and numel(var.shape) == 1):
                names.append(name)
    return names


def default_loss(program: Program, notice: bool = True) -> str | None:
    """The loss gradc picks by itself: the one float scalar the last op writes (a saved program's fetch targets),
    else, when the last op writes none, the one float scalar no op reads (Paddle's classifiers compute the loss and
    then a softmax for inference), with a notice naming it; None when neither gives exactly one."""
    candidates = loss_candidates(program)
    ops = program.global_block.ops
    if candidates or not ops or ops[-1].type == "fetch":
        return candidates[0] if len(candidates) == 1 else None
    sinks = unread_scalars(program)
    if len(sinks) != 1:
        return None
    if notice:
        warnings.warn(f"the loss is {sinks[0]}, the one float scalar no op reads (the last op, {ops[-1].type}, writes "
                      f"none); name another with --loss (loss= in Python)", GradcNotice, stacklevel=3)
    return sinks[0]


def no_loss_hint(program: Program) -> str:
    """Why no loss was picked, and the vars that could be it, for an error that asks for the loss's name."""
    candidates = loss_candidates(program)
    if candidates:
        return f"the last op writes several float scalars ({', '.join(candidates)})"
    ops = program.global_block.ops
    if ops and ops[-1].type == "fetch":
        fetched = ", ".join(name for op in ops if op.type == "fetch" for name in op.input("X"))
        return (f"no fetch target ({fetched}) is a float scalar: a saved inference model has no loss (gradc compile "
                f"--add-loss adds one, gradc.add_loss in Python)")
    last = f"the last op of block 0 ({ops[-1].type})" if ops else "block 0 has no ops and"
    sinks = unread_scalars(program)
    return f"{last} writes no float scalar" + (f"; float scalars no op reads: {', '.join(sinks)}" if sinks else "")


def _resolve_loss(block: Block, loss: str | None, any_shape: bool = False) -> tuple[str, int]:
    """The loss's name and the index of its last writer; ``any_shape``: a target of gradients(), whose elements'
    gradients are summed (seeded with ones), as paddle.static.gradients does."""
    if loss is None:
        loss = default_loss(block.program)
        if loss is None:
            raise GradError(f"cannot pick the loss by itself: {no_loss_hint(block.program)}; name it "
                            f"(--loss on the command line, loss= in Python)")
    for idx in range(len(block.ops) - 1, -1, -1):
        if loss in block.ops[idx].output_names():
            var = block.find_var(loss)
            if var is None:   # an op appended by hand without its var: 'must be a float var' would mislead
                raise GradError(f"loss '{loss}' (block 0, written by op {idx}, {block.ops[idx].type}) is not declared: "
                                f"declare it with block.create_var(name, shape, dtype) (gradc.verify(program) lists "
                                f"every undeclared var)")
            if var.dtype not in FLOAT_DTYPES:
                raise GradError(f"loss '{loss}' must be a float var (block 0, written by op {idx})")
            known = var.shape is not None
            if known and not any_shape and numel(var.shape) > 1:   # a batch dim (-1) is summed, a known size not
                raise GradError(f"loss '{loss}' has shape {var.shape}: a loss is one value (reduce it with a mean "
                                f"or a sum first)")
            if known and numel(var.shape) < 0:   # Paddle seeds such a loss with ones
                warnings.warn(f"loss '{loss}' has shape {var.shape}, one value per example: its gradients are those "
                              f"of its sum over the batch, as in Paddle (a mean of it averages them)", GradcWarning,
                              stacklevel=2)
            return loss, idx
    candidates = ", ".join(loss_candidates(block.program)) or "none"
    raise GradError(f"loss '{loss}' is not written by any op of block 0 (candidates: {candidates})")


def _check_float(block: Block, names: list[str], what: str) -> None:
    """A gradient is asked for only of float vars: integer and bool values are piecewise constant, so gradc
    (unlike Paddle, which runs integer grad kernels) differentiates through none of them."""
    for name in names:
        var = block.find_var(name)
        if var.dtype not in DIFFERENTIABLE_DTYPES:
            raise GradError(f"{what} '{name}' is {dtype_name(var.dtype)}: gradc computes gradients of float and "
                            f"complex vars only (an integer value's derivative is zero wherever it exists)")


def _seed(block: Block, loss: str, grad: str) -> OpDesc:
    """d(loss)/d(loss) = 1: Paddle's fill_constant of the loss's shape, or, when the shape has an
    unknown (batch) dim, ones shaped like the loss at run time."""
    var = block.var(loss)
    if var.shape is None or numel(var.shape) < 0:
        return OpDesc("fill_any_like", {"X": [loss]}, {"Out": [grad]}, {"value": 1.0, "dtype": -1})
    return OpDesc("fill_constant", {}, {"Out": [grad]},
                  {"shape": list(var.shape or []), "dtype": int(var.dtype), "value": 1.0},
                  {"shape": AttrType.LONGS, "dtype": AttrType.INT, "value": AttrType.FLOAT})


def _given_seed(block: Block, loss: str, given: str, grad: str) -> OpDesc:
    """The loss's grad copied from ``given``, which must be declared with the loss's shape and dtype."""
    var, seed = block.var(loss), block.find_var(given)
    if seed is None or seed.shape != var.shape or seed.dtype != var.dtype:
        have = "not declared in block 0" if seed is None else f"{dtype_name(seed.dtype)}{seed.shape}"
        raise GradError(f"target gradient '{given}' must be declared with the shape and dtype of '{loss}', "
                        f"{dtype_name(var.dtype)}{var.shape}: it is {have}")
    return OpDesc("assign", {"X": [given]}, {"Out": [grad]}, {})


@gc_paused()
def append_backward(program: Program, loss: str | None = None,
                    parameter_list: Iterable[str] | None = None,
                    no_grad_set: Iterable[str] | None = None, any_shape: bool = False,
                    loss_grad: str | None = None) -> list[tuple[str, str]]:
    """Append the backward ops of ``loss`` to block 0; return [(param, param@GRAD), ...].

    ``parameter_list`` restricts which parameters get gradients (default: every var with
    is_parameter); ``no_grad_set`` names further vars that get none. In a program that already has
    a backward, grads whose name is taken are named ``param@GRAD@2`` (see gradc.backward.names).
    ``any_shape``: a loss of any shape, its elements' gradients summed (gradients() passes it); ``loss_grad``: the
    var holding d(result)/d(loss) instead of ones (a vector-Jacobian product).
    """
    block = program.global_block
    check_definitions(program)
    loss, loss_idx = _resolve_loss(block, loss, any_shape)
    all_params = [name for name, var in block.vars.items() if var.is_parameter]
    params = all_params if parameter_list is None else list(parameter_list)
    unknown = [p for p in params if block.find_var(p) is None]
    if unknown:
        raise GradError(f"parameter(s) not declared in block 0: {', '.join(unknown)}")
    if parameter_list is not None:
        _check_float(block, params, "parameter")
    unknown = sorted(name for name in set(no_grad_set or ()) if not any(b.find_var(name) for b in program.blocks))
    if unknown:
        raise GradError(f"no-grad var(s) not declared in the program: {', '.join(unknown)}")
    no_grad = set(no_grad_set or ()) | (set(all_params) - set(params))

    names = GradNames(program)
    seed = _seed(block, loss, names(loss)) if loss_grad is None else _given_seed(block, loss, loss_grad, names(loss))
    loss_op = block.ops[loss_idx]   # copies of overwritten forward values may be inserted before it
    first_backward = len(block.ops)
    path = _differentiate(block, loss_idx + 1, {loss}, no_grad, names, seeds=[seed])
    roles.set_role(loss_op, roles.LOSS)
    roles.set_role(seed, roles.LOSS | roles.BACKWARD)
    pairs = [(p, names(p)) for p in params if p in path.wants_grad]
    roles.tag_param_grads(block.ops[first_backward:], pairs)
    return pairs


def _differentiate(block: Block, n_forward: int, targets: set[str], no_grad: set[str], names: GradNames,
                   seeds: list[OpDesc]) -> OpPath:
    """Append to ``block`` the backward of its first ``n_forward`` ops with respect to ``targets``,
    whose grads the ``seeds`` write (or, with no seeds, the caller feeds)."""
    forward_ops = block.ops[:n_forward]
    path = find_path(block, forward_ops, targets, no_grad)
    check_makers(block, path)
    check_complex(block, path)
    given = [] if seeds else [names(t) for t in targets]
    backward_ops = emit_grad_ops(BlockBackward(block=block, forward_block=block, forward_ops=forward_ops, path=path,
                                               versions=Versions(block.program), names=names, seeds=seeds,
                                               given=given))
    roles.set_roles(backward_ops, roles.BACKWARD)
    block.ops.extend(backward_ops)
    declare_grad_vars(block, backward_ops)
    block.program.mark_changed()
    return path


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
    return _differentiate(block, last + 1, targets, set(no_grad_set), names, seeds=[]).wants_grad


def gradients(program: Program, loss: str | Sequence[str], inputs: str | Iterable[str],
              no_grad_set: Iterable[str] | None = None,
              target_gradients: str | Sequence[str] | None = None) -> list[str | None]:
    """Append the backward of ``loss`` and return the grad var of each input (None: no gradient). In a
    program that already has a backward, a grad whose usual name is taken is ``input@GRAD@2``. As
    paddle.static.gradients: ``loss`` may have any shape (the gradients of its sum, or, with ``target_gradients``,
    a var of its shape, of the sum of its product with that), or be a list of one var, and ``inputs`` one name or a
    list."""
    loss, target_gradients = _one_target(loss), None if target_gradients is None else _one_target(target_gradients)
    inputs = [inputs] if isinstance(inputs, str) else list(inputs)   # not a name's characters
    block = program.global_block
    undeclared = [name for name in inputs if block.find_var(name) is None]
    if undeclared:
        raise GradError(f"input(s) not declared in block 0: {', '.join(undeclared)}")
    _check_float(block, inputs, "input")
    names = GradNames(program)
    append_backward(program, loss, parameter_list=None, no_grad_set=no_grad_set, any_shape=True,
                    loss_grad=target_gradients)
    grads = [names(name) if block.find_var(names(name)) is not None else None for name in inputs]
    stopped = [name for name, grad in zip(inputs, grads) if grad is None and block.var(name).stop_gradient]
    if stopped:   # Paddle's answer too, but a None met later says nothing of why
        warnings.warn(f"no gradient of {', '.join(stopped)}: stop_gradient is set (a saved program's inputs have it); "
                      f"clear it first, block.var(name).stop_gradient = False, as x.stop_gradient = False in Paddle",
                      GradcWarning, stacklevel=2)
    return grads


def _one_target(names: str | Sequence[str]) -> str:
    if isinstance(names, str) or not isinstance(names, Sequence):
        return names
    if len(names) != 1:
        raise GradError(f"gradients() differentiates one target, not {len(names)} ({', '.join(map(str, names))}): "
                        f"add them with a sum op first")
    return names[0]
