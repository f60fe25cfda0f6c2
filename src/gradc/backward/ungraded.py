"""Why a parameter got no gradient: what `gradc compile` says of the parameters its table leaves out, since a
layer frozen by mistake (a detach left in, trainable=False, a no-grad set) otherwise trains silently without them."""

from __future__ import annotations

import warnings
from collections import deque
from collections.abc import Iterable, Mapping
from functools import cache

from .. import registry
from ..errors import GradcNotice, GradcWarning
from ..ir import Block
from ..pairing import FORWARD, op_kinds
from ..rnn_flat import flat_buffers
from .frozen import recorded_frozen


def warn_ungraded(block: Block, graded: Iterable[str], losses: list[str], no_grad_set: Iterable[str] = ()) -> None:
    """The parameters without a gradient, each with why: a layer cut off from the loss is a warning (a detach left
    in is a mistake more often than not), one frozen on purpose a note."""
    buffers = flat_buffers(block)
    frozen, cut_off = ungraded_parameters(block, {*graded, *buffers}, losses, no_grad_set)
    if buffers:
        warnings.warn(f"RNN flat weight buffers, which no op reads, get no gradient: {', '.join(buffers)}; in Paddle "
                      f"they share their cells' memory and train with them: saved parameters hold them rebuilt from "
                      f"the trained cells", GradcNotice, stacklevel=3)
    if frozen:
        warnings.warn(f"parameters frozen, without a gradient: {'; '.join(frozen)}", GradcNotice, stacklevel=3)
    if cut_off:
        warnings.warn(f"parameters that get no gradient and will not train: {'; '.join(cut_off)}", GradcWarning,
                      stacklevel=3)


def without_gradient(block: Block, grads: Mapping[str, str]) -> list[str]:
    """The vars of ``grads`` (var -> the name of its gradient) whose gradient the backward did not declare: on no
    path to the loss, or cut by a stop_gradient var; compile --wrt refuses them, check says so of their zeros."""
    return [name for name, grad in grads.items() if block.find_var(grad) is None]


def warn_masks(block: Block, graded: Iterable[str]) -> None:
    """A warning naming the graded parameters that look like fixed pruning masks: a legacy ProgramDesc keeps no
    trainable=False, so a mask Paddle leaves as it is would train here, and the weights it zeroes come back."""
    masks = mask_parameters(block, graded)
    if masks:
        listed = ", ".join(f"{mask} (into {weight})" for mask, weight in masks.items())
        warnings.warn(f"parameters multiplied elementwise into another parameter of their shape, as fixed pruning "
                      f"masks are, get gradients and will train: {listed}; a legacy ProgramDesc keeps no "
                      f"trainable=False: if they are masks, freeze them with --no-grad (no_grad_set= in Python)",
                      GradcWarning, stacklevel=3)


def mask_parameters(block: Block, graded: Iterable[str]) -> dict[str, str]:
    """mask -> weight: each graded parameter that the forward reads only as the Y of an elementwise multiply whose X
    is another parameter of the same shape (weight * mask, as paddle.incubate.asp and hand-written pruning write)."""
    graded = set(graded)
    # a mask is the Y of some multiply: a program with none (most) is not walked for its forward ops' readers
    multiplied_in = {op.input("Y")[0] for op in block.ops if op.type == "elementwise_mul" and len(op.input("Y")) == 1}
    if graded.isdisjoint(multiplied_in):
        return {}
    readers = _readers([op for op, kind in zip(block.ops, op_kinds(block)) if kind == FORWARD])
    masks = {}
    for name in sorted(graded & multiplied_in):
        ops, var = readers.get(name, []), block.find_var(name)
        multiplied = [op for op in ops if op.type == "elementwise_mul" and op.input("Y") == [name]]
        weights = {op.input("X")[0] for op in multiplied}
        if var is None or not var.is_parameter or not ops or len(multiplied) != len(ops) or len(weights) != 1:
            continue
        weight = block.find_var(next(iter(weights)))
        if weight is not None and weight.is_parameter and weight.name != name and list(weight.shape) == list(var.shape):
            masks[name] = weight.name
    return masks


def ungraded_parameters(block: Block, graded: Iterable[str], losses: list[str],
                        no_grad_set: Iterable[str] = ()) -> tuple[list[str], list[str]]:
    """The parameters of ``block`` that got no gradient of ``losses``, as 'names: reason' lines: those frozen on
    purpose (the no-grad set, trainable=False), and those cut off from the loss (a detach on the way, no path)."""
    graded, no_grad = set(graded), set(no_grad_set)
    ungraded = sorted(name for name, var in block.vars.items() if var.is_parameter and name not in graded)
    if not ungraded:   # most compiles: no walk of the program for reasons
        return [], []
    forward = [op for op, kind in zip(block.ops, op_kinds(block)) if kind == FORWARD]
    # state the forward updates (batch norm's running statistics, which Paddle makes untrainable parameters)
    graded |= {name for op in forward for name in op.output_names()}
    readers = _readers(forward)   # one map for every parameter's search
    recorded = cache(lambda: set(recorded_frozen(block)))   # its sweep only for a parameter it may explain
    frozen: dict[str, list[str]] = {}
    cut_off: dict[str, list[str]] = {}
    for name in ungraded:
        var = block.vars[name]
        if name in graded:
            continue
        if name in no_grad:
            frozen.setdefault("in the no-grad set (--no-grad)", []).append(name)
        elif var.stop_gradient:
            frozen.setdefault("not trainable (stop_gradient, Paddle's ParamAttr(trainable=False))", []).append(name)
        elif name in recorded():
            frozen.setdefault("not trainable in Paddle (ParamAttr(trainable=False): the ops reading them beside "
                              "stop_gradient inputs write stop_gradient outputs); --param names them to train them",
                              []).append(name)
        else:
            cut_off.setdefault(_path_reason(block, readers, name, set(losses), no_grad), []).append(name)
    return _lines(frozen), _lines(cut_off)


def _lines(reasons: dict[str, list[str]]) -> list[str]:
    return [f"{len(names)} {_listed(names)}: {reason}" for reason, names in reasons.items()]


def _listed(names: list[str]) -> str:
    return "(" + ", ".join(names[:12]) + (f", ... {len(names) - 12} more" if len(names) > 12 else "") + ")"


def _path_reason(block: Block, readers: dict[str, list], param: str, losses: set[str], no_grad: set[str]) -> str:
    """The first var that stops the gradient on a forward path from ``param`` to a loss, found breadth first."""
    path = _path_to(readers, param, losses)
    return _blocker(block, readers, path, no_grad) if path else "the loss does not depend on it"


def _path_to(readers: dict[str, list], start: str, ends: set[str]) -> list[str]:
    """The vars of a shortest path of ops from ``start`` to one of ``ends`` (none: [])."""
    came_from: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        name = queue.popleft()
        if name in ends:
            return _path(came_from, name)
        for op in readers.get(name, ()):
            for out in op.output_names():
                if out not in came_from:
                    came_from[out] = name
                    queue.append(out)
    return []


def stopped_inputs(block: Block, inputs: Iterable[str], targets: set[str]) -> list[str]:
    """'input (through VAR)' for each of ``inputs`` that the targets depend on through a stop_gradient var: a program
    saved with its inputs stop_gradient marks what they compute so too, and clearing the input's flag alone leaves
    its gradient None."""
    readers: dict[str, list] = {}
    for op in block.ops:
        for name in set(op.input_names()):
            readers.setdefault(name, []).append(op)
    found = []
    for name in inputs:
        stopped = next((v for v in _path_to(readers, name, targets)[1:] if block.var(v).stop_gradient), None)
        if stopped is not None:
            found.append(f"{name} (through '{stopped}')")
    return found


def _path(came_from: dict[str, str | None], end: str) -> list[str]:
    path = [end]
    while came_from[path[-1]] is not None:
        path.append(came_from[path[-1]])
    return path[::-1]


def _blocker(block: Block, readers: dict[str, list], path: list[str], no_grad: set[str]) -> str:
    for before, name in zip(path, path[1:]):
        var = block.find_var(name)
        if name in no_grad or (var is not None and var.stop_gradient):
            return (f"its path to the loss goes through '{name}', which is stop_gradient (a detach, or "
                    f"stop_gradient = True left on a layer's output)")
        op = next(op for op in readers[before] if name in op.output_names())
        opdef = registry.get(op.type)
        slots = [slot for slot, args in op.inputs.items() if before in args]
        if opdef is not None and (opdef.grad in (None, registry.NO_GRAD) or set(slots) <= opdef.no_grad_inputs):
            # one reason for every parameter blocked there (a CER's argmax blocks the whole network)
            return (f"its path to the loss goes through {op.type} (writing {name}), which passes no gradient to "
                    f"{'its input ' + slots[0] if opdef.differentiable else 'its inputs'}")
    return f"no op on its path to the loss ({' -> '.join(path)}) has a gradient"


def _readers(ops: list) -> dict[str, list]:
    """var -> the ops of ``ops`` reading it, in order."""
    readers: dict[str, list] = {}
    for op in ops:
        for name in set(op.input_names()):
            readers.setdefault(name, []).append(op)
    return readers
