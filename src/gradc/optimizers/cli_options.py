"""The optimizer options of `gradc compile`: the optimizer by name with Paddle's defaults, its Python
arguments as --opt KEY=VALUE, a learning rate or schedule, gradient clipping and L1/L2 weight decay."""

from __future__ import annotations

import ast

import click

from ..errors import GradcError
from ..schedules import parse
from . import OPTIMIZERS, ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue, L1Decay, L2Decay, make_optimizer
from .base import Optimizer

# optimizers whose weight decay is their own (decoupled) setting, not a regularizer: --opt sets it
DECOUPLED = {"adamw": "weight_decay", "lamb": "lamb_weight_decay", "rprop": None}
REGULARIZER_ARGUMENT = {"lars_momentum": "regularization"}

OPTIONS = [
    click.option("--optimizer", type=click.Choice(sorted(OPTIMIZERS)),
                 help="Also append parameter updates (a training step), as Paddle's minimize() does."),
    click.option("--lr", "learning_rate", type=float, default=0.01, show_default=True, help="Learning rate."),
    click.option("--lr-schedule", metavar="SPEC",
                 help="A learning-rate schedule (see gradc train): the startup program holds its step-0 value; "
                      "give the same schedule to gradc train."),
    click.option("--opt", "arguments", multiple=True, metavar="KEY=VALUE",
                 help="An argument of Paddle's optimizer class (beta1=0.85, momentum=0.8, use_nesterov=True). "
                      "Repeatable."),
    click.option("--clip-global-norm", type=float, help="ClipGradByGlobalNorm(clip_norm) on all gradients."),
    click.option("--clip-norm", type=float, help="ClipGradByNorm(clip_norm) on each gradient."),
    click.option("--clip-value", type=float, help="ClipGradByValue(max=V, min=-V) on each gradient."),
    click.option("--l1", type=float, help="L1Decay(coeff) weight decay on every parameter."),
    click.option("--l2", type=float, help="L2Decay(coeff) weight decay on every parameter."),
]


def optimizer_options(command):
    """Add the options to a click command (they reach it as keyword arguments; see build_optimizer)."""
    for option in reversed(OPTIONS):
        command = option(command)
    return command


def _argument(text: str) -> tuple[str, object]:
    key, equals, value = text.partition("=")
    if not equals or not key.strip():
        raise GradcError(f"--opt takes KEY=VALUE, not '{text}'")
    try:
        return key.strip(), ast.literal_eval(value.strip())
    except (SyntaxError, ValueError):
        return key.strip(), value.strip()   # a bare word is a string


def build_optimizer(optimizer: str | None, learning_rate: float, lr_schedule: str | None, arguments, clip_global_norm,
                    clip_norm, clip_value, l1, l2) -> Optimizer | None:
    """The Optimizer the options describe, or None without --optimizer (then no other option may be given)."""
    extras = {"--lr-schedule": lr_schedule, "--opt": arguments or None, "--clip-global-norm": clip_global_norm,
              "--clip-norm": clip_norm, "--clip-value": clip_value, "--l1": l1, "--l2": l2}
    if optimizer is None:
        given = [name for name, value in extras.items() if value is not None]
        if given:
            raise GradcError(f"{', '.join(given)}: only with --optimizer")
        return None
    settings = dict(_argument(text) for text in arguments)
    settings.setdefault("learning_rate", parse(lr_schedule) if lr_schedule else learning_rate)
    clips = [clip for clip in (clip_global_norm is not None and ClipGradByGlobalNorm(clip_global_norm),
                               clip_norm is not None and ClipGradByNorm(clip_norm),
                               clip_value is not None and ClipGradByValue(clip_value)) if clip]
    if len(clips) > 1:
        raise GradcError("give one of --clip-global-norm, --clip-norm, --clip-value")
    if clips:
        settings["grad_clip"] = clips[0]
    if l1 is not None and l2 is not None:
        raise GradcError("give one of --l1, --l2")
    if l1 is not None or l2 is not None:
        if optimizer in DECOUPLED:
            own = DECOUPLED[optimizer]
            raise GradcError(f"{optimizer} has no --l1/--l2 weight decay" +
                             (f"; its own decay is --opt {own}=C" if own else ""))
        settings[REGULARIZER_ARGUMENT.get(optimizer, "weight_decay")] = L1Decay(l1) if l1 is not None else L2Decay(l2)
    return make_optimizer(optimizer, **settings)
