"""Options that name vars (compile's --param and --no-grad, check's --wrt, run's --fetch) take globs: '*lora*'
names every LoRA adapter of a model, where listing them one by one is what a fine-tuner would otherwise do."""

from __future__ import annotations

import fnmatch
import warnings

from ..errors import GradcError, GradcWarning
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
    if names:
        program.mark_changed()
    return names


def input_gradients(program: Program, grads: dict[str, str]) -> list[tuple[str, str]]:
    """(var, its gradient) of each --wrt var, ``grads`` naming the gradients (``x@GRAD``, or ``x@GRAD@2`` where the
    program holds a gradient of x already: an Eikonal loss's); one on no path to the loss is an error, as nothing
    could be fetched."""
    from ..backward.ungraded import without_gradient  # here: run's --fetch globs need no backward
    missing = without_gradient(program.global_block, grads)
    if missing:
        raise GradcError(f"--wrt: no gradient of {', '.join(missing)}: on no path to the loss, or cut by a var the "
                         f"program marks stop_gradient (--no-grad too)")
    return list(grads.items())


def fetched_globs(program: Program, fetches: tuple[str, ...]) -> list[str]:
    """run's --fetch options, each glob ('linear_*@GRAD': a layer's gradients, to square for an EWC Fisher) replaced
    by the vars of block 0 it matches that an op writes or that are persistable, in the block's order; a name with
    '=' (NAME=KEY) or a var named as written is kept as it is."""
    block = program.global_block
    written = {name for op in block.ops for name in op.output_names()}
    names = [name for name, var in block.vars.items() if name in written or var.persistable]
    return [name for fetch in fetches
            for name in ([fetch] if "=" in fetch or block.find_var(fetch) is not None
                         else matching((fetch,), names, "--fetch", "var of block 0 an op writes or persistable"))]


def warn_frozen_named(block, params: list[str]) -> None:
    """compile --param naming parameters the program freezes: they get no gradient, whatever --param says (the
    program marks what they compute stop_gradient too, as Paddle does, so clearing their flag would not free them)."""
    frozen = [name for name in params if block.find_var(name) is not None and block.var(name).stop_gradient]
    if frozen:
        warnings.warn(f"--param names {len(frozen)} parameter(s) the program freezes, which get no gradient: "
                      f"{', '.join(frozen)} (stop_gradient: Paddle's ParamAttr(trainable=False) or .stop_gradient = "
                      f"True); to train them, save the model with them trainable", GradcWarning, stacklevel=2)
