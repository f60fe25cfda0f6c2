"""The options of `gradc compile` that trade memory: --recompute (gradc.passes.recompute) and --accumulate
(gradc.passes.accumulate). They reach the command as keyword arguments; ``memory_passes`` turns them into
the passes to run after the backward pass."""

from __future__ import annotations

import click

from . import passes as named_passes  # the passes imported when named: a compile without these options needs neither
from .errors import GradcError
from .passes.base import Pass

OPTIONS = [
    click.option("--recompute", metavar="auto|VAR,...",
                 help="Drop forward activations after the forward and recompute them in the backward: 'auto' "
                      "picks the checkpoints (about sqrt(N) segments, within --recompute-budget), or name the "
                      "forward vars to keep, comma-separated."),
    click.option("--recompute-budget", type=float, metavar="X",
                 help="With --recompute auto: the recomputation may cost up to X times the forward's arithmetic "
                      "(default 1: every segment but the last)."),
    click.option("--accumulate", type=click.Choice(["sum", "eager"]), default="sum", show_default=True,
                 help="How a gradient with several parts adds up: one sum of all the parts before its first "
                      "reader (as Paddle), or eager: each part added to a running sum as soon as it is written "
                      "(same numbers, less memory)."),
]


def memory_options(command):
    for option in reversed(OPTIONS):
        command = option(command)
    return command


def memory_passes(recompute: str | None, recompute_budget: float | None, accumulate: str) -> list[Pass]:
    if recompute_budget is not None and recompute != "auto":
        raise GradcError("--recompute-budget: only with --recompute auto")
    passes: list[Pass] = [named_passes.EagerAccumulationPass()] if accumulate == "eager" else []
    if recompute == "auto":
        passes.append(named_passes.RecomputePass("auto", 1.0 if recompute_budget is None else recompute_budget))
    elif recompute is not None:
        names = [name.strip() for name in recompute.split(",")]
        if not all(names):
            raise GradcError(f"--recompute takes 'auto' or var names separated by commas, not {recompute!r}")
        passes.append(named_passes.RecomputePass(names))
    return passes
