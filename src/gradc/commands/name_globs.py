"""Options that name vars (compile's --param and --no-grad, check's --wrt) take globs: '*lora*' names every LoRA
adapter of a model, where listing them one by one is what a fine-tuner would otherwise do."""

from __future__ import annotations

import fnmatch

from ..errors import GradcError
from ..ir import DIFFERENTIABLE_DTYPES, Program


def matching(patterns: tuple[str, ...], names: list[str], option: str, what: str) -> list[str]:
    """The names each glob of ``patterns`` matches, in the order of ``names``; a plain name is kept as given (the
    command names an undeclared one)."""
    chosen = []
    for pattern in patterns:
        if not any(char in pattern for char in "*?["):
            chosen.append(pattern)
            continue
        matched = fnmatch.filter(names, pattern)
        if not matched:
            raise GradcError(f"{option} '{pattern}' matches no {what} (of its {len(names)}: {', '.join(names[:8])}"
                             f"{', ...' if len(names) > 8 else ''})")
        chosen += matched
    return list(dict.fromkeys(chosen))


def with_gradients(program: Program, patterns: tuple[str, ...]) -> list[str]:
    """compile --wrt: the vars named, stop_gradient cleared so the backward gives them a gradient (a fed input is
    stop_gradient in Paddle's file, as paddle.static.gradients needs x.stop_gradient = False)."""
    block = program.global_block
    # a glob matches the float vars: an integer one (labels, a pooling mask) has no gradient
    names = matching(patterns, [name for name, var in block.vars.items()
                                if not var.is_parameter and var.dtype in DIFFERENTIABLE_DTYPES], "--wrt",
                     "float var of block 0")
    undeclared = [name for name in names if block.find_var(name) is None]
    if undeclared:
        raise GradcError(f"--wrt: not declared in block 0: {', '.join(undeclared)}")
    for name in names:
        block.var(name).stop_gradient = False
    return names


def input_gradients(program: Program, grads: dict[str, str]) -> list[tuple[str, str]]:
    """(var, its gradient) of each --wrt var, ``grads`` naming the gradients (``x@GRAD``, or ``x@GRAD@2`` where the
    program holds a gradient of x already: an Eikonal loss's); one on no path to the loss is an error, as nothing
    could be fetched."""
    block = program.global_block
    missing = [name for name, grad in grads.items() if block.find_var(grad) is None]
    if missing:
        raise GradcError(f"--wrt: no gradient of {', '.join(missing)}: on no path to the loss, or cut by a var the "
                         f"program marks stop_gradient (--no-grad too)")
    return list(grads.items())
