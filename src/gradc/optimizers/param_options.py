"""The per-parameter settings of `gradc compile` (Paddle's ParamAttr, which a saved program does not keep): a
learning-rate multiplier (--param-lr), a regularizer of its own (--param-l1, --param-l2) and leaving a parameter
out of gradient clipping (--no-clip)."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import GradcError
from .base import ParamAttr
from .cli_options import finite, glob_matches, glob_specs
from .regularizer import L1Decay, L2Decay


def _decays(param_l1s, param_l2s, parameters: list[str]) -> dict:
    """--param-l1/--param-l2 GLOB=C: each matching parameter's regularizer; a parameter two of them give different
    decays is an error."""
    decays: dict = {}
    for flag, specs, kind in (("--param-l1", param_l1s, L1Decay), ("--param-l2", param_l2s, L2Decay)):
        for matched, coeff in glob_specs(flag, specs, parameters, finite, "GLOB=C (a finite number)",
                                         "parameter's name"):
            for name in matched:
                decay = kind(coeff)
                if name in decays and repr(decays[name]) != repr(decay):
                    raise GradcError(f"{flag}: {name} matches two decays, {decays[name]} and {decay}")
                decays[name] = decay
    return decays


def _unclipped(no_clip: Sequence[str], parameters: list[str]) -> set[str]:
    """The parameters --no-clip's globs match; a glob matching none is an error naming the closest name."""
    return {name for pattern in no_clip for name in glob_matches(f"--no-clip {pattern}", pattern, parameters,
                                                                "parameter's name")}


def param_attrs(parameters: list[str], param_lrs=(), param_l1s=(), param_l2s=(), no_clip=()) -> dict[str, ParamAttr]:
    """Each parameter some option names, its ParamAttr: --param-lr GLOB=RATE's multiplier, --param-l1/--param-l2
    GLOB=C's regularizer (winning over the optimizer's weight decay, as Paddle's), --no-clip GLOB's need_clip=False.
    A glob matching nothing, or a parameter two globs of one option set differently, is an error."""
    rates: dict[str, float] = {}
    for matched, multiplier in glob_specs("--param-lr", param_lrs, parameters, finite, "GLOB=RATE (a finite number)",
                                          "parameter's name"):
        for name in matched:
            if name in rates and rates[name] != multiplier:
                raise GradcError(f"--param-lr: {name} matches two rates, {rates[name]:g} and {multiplier:g}")
            rates[name] = multiplier
    decays, unclipped = _decays(param_l1s, param_l2s, parameters), _unclipped(no_clip, parameters)
    return {name: ParamAttr(learning_rate=rates.get(name, 1.0), regularizer=decays.get(name),
                            need_clip=name not in unclipped)
            for name in parameters if name in rates or name in decays or name in unclipped}
