"""`gradc compile --clip-param NAME=MIN,MAX`: after the optimizer's update, clip a parameter into [MIN, MAX] with
ops of the program, as a Paddle user writes `paddle.assign(paddle.clip(image, 0.0, 1.0), image)` after minimize to
keep an optimised image a picture (style transfer, DeepDream): every later step starts from the clipped values."""

from __future__ import annotations

from ..ir import Program
from .cli_options import glob_specs
from .emit import Emitter


def _ordered(limits: str) -> tuple[float, float]:
    low, high = (float(limit) for limit in limits.split(","))
    if not low <= high:
        raise ValueError(limits)
    return low, high


def parse_bounds(specs, updated: list[str]) -> dict[str, tuple[float, float]]:
    """{parameter: (min, max)} of the specs (GLOB=MIN,MAX), each matching parameters the optimizer updates."""
    bounds: dict[str, tuple[float, float]] = {}
    for matched, limits in glob_specs("--clip-param", specs, updated, _ordered, "NAME=MIN,MAX (numbers, MIN <= MAX)",
                                      "parameter the optimizer updates", f"; it updates: {', '.join(updated)}"):
        bounds.update(dict.fromkeys(matched, limits))
    return bounds


def append_param_clips(program: Program, bounds: dict[str, tuple[float, float]]) -> None:
    """A clip of each parameter into its bounds, then its assign back, after the updates (Paddle's op_role Optimize,
    as the ops a user appends after minimize run with the step)."""
    emit = Emitter(program)
    for name, (low, high) in bounds.items():
        var = program.global_block.var(name)
        clipped = emit.temporary(f"{name}.clipped", var.shape, var.dtype)
        emit.op("clip", {"X": [name]}, {"Out": [clipped]}, {"min": low, "max": high})
        emit.op("assign", {"X": [clipped]}, {"Out": [name]})
