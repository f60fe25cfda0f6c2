"""The optimizer options of `gradc compile`: the optimizer by name with Paddle's defaults, its Python
arguments as --opt KEY=VALUE, a learning rate or schedule, gradient clipping and L1/L2 weight decay."""

from __future__ import annotations

import ast
import fnmatch
import inspect
import math
import warnings

import click

from ..errors import GradcError, GradcWarning, closest
from ..schedules import parse
from . import OPTIMIZERS, ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue, L1Decay, L2Decay, make_optimizer
from .base import Optimizer
from .schedule_ops import KINDS, ProgramRate, ProgramSchedule

# optimizers whose weight decay is their own (decoupled) setting, not a regularizer: --opt sets it
DECOUPLED = {"adamw": "weight_decay", "lamb": "lamb_weight_decay", "rprop": None}
REGULARIZER_ARGUMENT = {"lars_momentum": "regularization"}

DEFAULT_LR, DEFAULT_GAMMA = 0.01, 0.1


class OptimizerChoice(click.Choice):
    """Paddle's static optimizers; L-BFGS, a loop with line searches and no ops, is sent to where gradc runs it."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value.lower().replace("-", "") == "lbfgs":
            self.fail("L-BFGS is no op of a program: compile without --optimizer, then train the compiled program "
                      "with gradc train --lbfgs (paddle.optimizer.LBFGS's steps)", param, ctx)
        return super().convert(value, param, ctx)


def finite(text) -> float:
    """``text`` as a number, refused (ValueError) when NaN or infinite: such a rate, decay or clip makes every
    weight NaN at the first update."""
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


class FiniteFloat(click.ParamType):
    """A number option that refuses NaN and infinities, as --param-lr/-l1/-l2's values do."""
    name = "float"

    def convert(self, value, param, ctx):
        try:
            return finite(value)
        except ValueError:
            self.fail(f"{value!r} is not a finite number", param, ctx)


FINITE = FiniteFloat()

OPTIONS = [
    click.option("--optimizer", type=OptimizerChoice(sorted(OPTIMIZERS)),
                 help="Also append parameter updates (a training step), as Paddle's minimize() does."),
    click.option("--lr", "learning_rate", type=FINITE, help=f"Learning rate (default {DEFAULT_LR})."),
    click.option("--lr-schedule", metavar="SPEC",
                 help="cosine, linear or step: the schedule as ops of the program (with --decay-steps, --gamma, "
                      "--warmup-steps; Paddle runs it as it is). Or a Paddle scheduler, e.g. "
                      "'StepDecay(learning_rate=0.1, step_size=2)': the startup holds its step-0 value; give the "
                      "same to gradc train --lr-schedule."),
    click.option("--lr-var", metavar="NAME",
                 help="The updates read their learning rate from this var, a schedule ops of the program compute "
                      "(paddle.optimizer.lr.exponential_decay, noam_decay, ...; fluid.layers' *_decay in Paddle "
                      "1.x/2.x programs), as Paddle 2's optimizer(learning_rate=<that Variable>)."),
    click.option("--decay-steps", type=click.IntRange(min=1), metavar="N",
                 help="cosine: the steps from the full rate to 0 (T_max); linear: the same (decay_steps); step: the "
                      "steps between decays."),
    click.option("--gamma", type=FINITE, help=f"step: the factor of each decay (default {DEFAULT_GAMMA})."),
    click.option("--warmup-steps", type=click.IntRange(min=0), default=0, show_default=True, metavar="N",
                 help="Rise linearly from 0 to --lr over the first N steps (ops in the program), then the schedule."),
    click.option("--beta1", type=FINITE, help="Adam family: the first moment's decay (Paddle's beta1)."),
    click.option("--beta2", type=FINITE, help="Adam family: the second moment's decay (beta2)."),
    click.option("--epsilon", type=FINITE, help="The optimizer's epsilon (Adam family, RMSProp, Adagrad, ...)."),
    click.option("--weight-decay", type=FINITE, metavar="C",
                 help="As Paddle's weight_decay=C: L2 decay, or the decoupled decay of adamw and lamb."),
    click.option("--momentum", type=FINITE, help="Momentum, LARS and RMSProp: the momentum factor."),
    click.option("--nesterov", is_flag=True, default=None, help="Momentum: Nesterov's update (use_nesterov)."),
    click.option("--opt", "arguments", multiple=True, metavar="KEY=VALUE",
                 help="An argument of Paddle's optimizer class (beta1=0.85, use_nesterov=True, multi_precision=True). "
                      "Repeatable."),
    click.option("--clip-global-norm", type=FINITE, help="ClipGradByGlobalNorm(clip_norm) on all gradients."),
    click.option("--clip-norm", type=FINITE, help="ClipGradByNorm(clip_norm) on each gradient."),
    click.option("--clip-value", type=FINITE, help="ClipGradByValue(max=V, min=-V) on each gradient."),
    click.option("--clip-param", "param_bounds", multiple=True, metavar="NAME=MIN,MAX",
                 help="After every update, clip the parameters whose names match into [MIN, MAX], with ops of the "
                      "program (an optimised image kept in [0, 1]: 'image=0,1', as paddle.clip after each step). "
                      "Repeatable."),
    click.option("--gradient-merge", "k_steps", type=click.IntRange(min=2), metavar="K",
                 help="Gradient accumulation over micro-batches, as Paddle's GradientMergeOptimizer(k_steps=K, "
                      "avg=True): each run adds its gradients up, every K-th run updates with their mean (a batch "
                      "of K times --batch-size). Not --accumulate, which sums a gradient's parts within a run."),
    click.option("--lookahead", metavar="K[,ALPHA]",
                 help="Wrap the optimizer in Paddle's LookAhead(k=K, alpha=ALPHA, 0.5 by default): slow weights "
                      "that move ALPHA of the way to the parameters every K steps, the parameters reset to them."),
    click.option("--l1", type=FINITE, help="L1Decay(coeff) weight decay on every parameter."),
    click.option("--l2", type=FINITE, help="L2Decay(coeff) weight decay on every parameter."),
    click.option("--no-decay", multiple=True, metavar="GLOB",
                 help="adamw, lamb: no weight decay on the parameters whose names match, e.g. '*.b_*' 'layer_norm*' "
                      "(Paddle's apply_decay_param_fun / exclude_from_weight_decay_fn). Repeatable."),
    click.option("--param-lr", "param_lrs", multiple=True, metavar="GLOB=RATE",
                 help="The learning rate of the parameters whose names match, times RATE (Paddle's "
                      "ParamAttr(learning_rate=RATE): layer-wise decay, 'linear_[0-5].*=0.5'). Repeatable."),
    click.option("--param-l1", "param_l1s", multiple=True, metavar="GLOB=C",
                 help="L1Decay(C) on the parameters whose names match, instead of the optimizer's weight decay "
                      "(Paddle's ParamAttr(regularizer=L1Decay(C))). Repeatable."),
    click.option("--param-l2", "param_l2s", multiple=True, metavar="GLOB=C",
                 help="L2Decay(C) on the parameters whose names match, instead of the optimizer's weight decay "
                      "(ParamAttr(regularizer=L2Decay(C))). Repeatable."),
    click.option("--no-clip", multiple=True, metavar="GLOB",
                 help="Leave the parameters whose names match out of gradient clipping (Paddle's "
                      "ParamAttr(need_clip=False)): neither clipped nor counted in the global norm. Repeatable."),
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
        parsed = ast.literal_eval(value.strip())
    except (SyntaxError, ValueError):
        return key.strip(), value.strip()   # a bare word is a string
    numbers = parsed if isinstance(parsed, (list, tuple)) else [parsed]
    if any(isinstance(number, float) and not math.isfinite(number) for number in numbers):   # 1e999 reads as inf
        raise GradcError(f"--opt {text}: {value.strip()} is not a finite number")
    return key.strip(), parsed


def glob_specs(flag: str, specs, names: list[str], parse, form: str, subject: str, unknown: str = ""):
    """(the names GLOB matches, parse(VALUE)) of each GLOB=VALUE spec of ``flag``: a spec not of that form, or whose
    VALUE parse refuses (ValueError), is an error naming ``form``; a glob matching no name one naming ``subject``, with
    the closest name or else ``unknown``."""
    for spec in specs:
        pattern, equals, text = spec.rpartition("=")
        try:
            value = parse(text) if equals and pattern else None
        except ValueError:
            value = None
        if value is None:
            raise GradcError(f"{flag} takes {form}, not '{spec}'")
        yield glob_matches(f"{flag} {spec}", pattern, names, subject, unknown), value


def glob_matches(given: str, pattern: str, names: list[str], subject: str, unknown: str = "") -> list[str]:
    """The names ``pattern`` matches; none is an error starting with ``given`` (the option and its value) naming
    ``subject``, with the closest name or else ``unknown``."""
    matched = [name for name in names if fnmatch.fnmatchcase(name, pattern)]
    if not matched:
        close = closest(pattern, names)
        raise GradcError(f"{given}: no {subject} matches {pattern}"
                         + (f" (did you mean {close}?)" if close else unknown))
    return matched


# the argument of Paddle's class that leaves a parameter out of the decay, and whether it is true for the excluded
EXCLUSION_ARGUMENT = {"adamw": ("apply_decay_param_fun", False), "lamb": ("exclude_from_weight_decay_fn", True),
                      "lars_momentum": ("exclude_from_weight_decay", True)}


class DecayExclusion:
    """The function Paddle's exclusion argument takes, from --no-decay globs; remembers what each glob matched."""

    def __init__(self, patterns, excluded_is_true: bool):
        self.patterns, self.excluded_is_true = list(patterns), excluded_is_true
        self.matched: dict[str, list[str]] = {pattern: [] for pattern in self.patterns}

    def __call__(self, name: str) -> bool:
        hits = [pattern for pattern in self.patterns if fnmatch.fnmatchcase(name, pattern)]
        for pattern in hits:
            self.matched[pattern].append(name)
        return bool(hits) == self.excluded_is_true

    def excluded(self) -> list[str]:
        return sorted({name for names in self.matched.values() for name in names})

    def check_matched(self, parameters: list[str]) -> None:
        """A glob that matched no parameter is likely a typo: a warning naming the closest parameter."""
        for pattern, names in self.matched.items():
            if not names:
                close = closest(pattern, parameters)
                warnings.warn(f"--no-decay {pattern}: no parameter's name matches it, so it leaves nothing out"
                              + (f" (did you mean {close}?)" if close else ""), GradcWarning, stacklevel=2)


def decay_exclusion(optimizer) -> DecayExclusion | None:
    """The --no-decay exclusion an optimizer built by build_optimizer holds (AdamW's and Lamb's attribute), if any."""
    for attribute in ("apply_decay_param_fun", "exclude"):
        found = getattr(optimizer, attribute, None)
        if isinstance(found, DecayExclusion):
            return found
    return None


# shortcuts for Paddle's optimizer arguments: option -> argument name
SHORTCUTS = {"beta1": "beta1", "beta2": "beta2", "epsilon": "epsilon", "momentum": "momentum",
             "nesterov": "use_nesterov"}


def build_optimizer(optimizer: str | None, learning_rate: float | None, lr_schedule: str | None, arguments,
                    clip_global_norm, clip_norm, clip_value, l1, l2, decay_steps=None, gamma=None, warmup_steps=0,
                    weight_decay=None, no_decay=(), lr_var=None, **shortcuts) -> Optimizer | None:
    """The Optimizer the options describe, or None without --optimizer (then no other option may be given)."""
    extras = {"--lr": learning_rate, "--gamma": gamma, "--lr-schedule": lr_schedule, "--opt": arguments or None,
              "--lr-var": lr_var,
              "--clip-global-norm": clip_global_norm,
              "--clip-norm": clip_norm, "--clip-value": clip_value, "--l1": l1, "--l2": l2,
              "--decay-steps": decay_steps, "--warmup-steps": warmup_steps or None, "--weight-decay": weight_decay,
              "--no-decay": no_decay or None,
              **{f"--{name}": value for name, value in shortcuts.items()}}
    if optimizer is None:
        given = [name for name, value in extras.items() if value is not None]
        if given:
            raise GradcError(f"{', '.join(given)}: only with --optimizer")
        return None
    settings = dict(_argument(text) for text in arguments)
    _known_arguments(optimizer, settings)
    _shortcuts(optimizer, settings, shortcuts)
    if lr_var is not None and (learning_rate is not None or lr_schedule or warmup_steps):
        raise GradcError("--lr-var: the program's var is the learning rate; give no --lr, --lr-schedule or "
                         "--warmup-steps with it")
    rate = ProgramRate(lr_var) if lr_var is not None else schedule(
        lr_schedule, DEFAULT_LR if learning_rate is None else learning_rate, decay_steps,
        DEFAULT_GAMMA if gamma is None else gamma, warmup_steps)
    settings.setdefault("learning_rate", rate)
    if weight_decay is not None:
        if l1 is not None or l2 is not None:
            raise GradcError("give one of --weight-decay, --l1, --l2")
        own = DECOUPLED.get(optimizer, "weight_decay") or "weight_decay"
        settings[REGULARIZER_ARGUMENT.get(optimizer, own)] = (L2Decay(weight_decay)
                                                               if optimizer in REGULARIZER_ARGUMENT else weight_decay)
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
    if no_decay:
        if optimizer not in EXCLUSION_ARGUMENT:
            raise GradcError(f"--no-decay: {optimizer} has no per-parameter decay to leave out (adamw, lamb and "
                             f"lars_momentum have, as Paddle's apply_decay_param_fun, exclude_from_weight_decay_fn "
                             f"and exclude_from_weight_decay)")
        argument, excluded_is_true = EXCLUSION_ARGUMENT[optimizer]
        if argument in settings:
            raise GradcError(f"--no-decay and --opt {argument}=...: give one")
        settings[argument] = DecayExclusion(no_decay, excluded_is_true)
    return make_optimizer(optimizer, **settings)


def _known_arguments(optimizer: str, settings: dict) -> None:
    """An --opt KEY Paddle's class does not take: named with the argument it is a slip for, or with all of them."""
    accepted = [name for name in inspect.signature(OPTIMIZERS[optimizer].__init__).parameters if name != "self"]
    for key in settings:
        if key not in accepted:
            close = closest(key, accepted)
            hint = f"did you mean {close}?" if close else f"it takes {', '.join(accepted)}"
            raise GradcError(f"--opt {key}: {optimizer} has no argument '{key}' ({hint})")


def _shortcuts(optimizer: str, settings: dict, shortcuts: dict) -> None:
    """--beta1 and the like as the arguments of Paddle's class; an option the class does not take is an error."""
    accepted = inspect.signature(OPTIMIZERS[optimizer].__init__).parameters
    for option, value in shortcuts.items():
        if value is None:
            continue
        argument = SHORTCUTS[option]
        if argument not in accepted:
            raise GradcError(f"--{option}: {optimizer} has no {argument} argument")
        if argument in settings:
            raise GradcError(f"--{option} and --opt {argument}=...: give one")
        settings[argument] = value


def schedule(spec: str | None, learning_rate: float, decay_steps, gamma: float, warmup_steps: int):
    """The learning rate: a number, a schedule of ops in the program (cosine, step, or a warm-up alone), or
    a Paddle scheduler written by the host."""
    if spec in KINDS or (spec is None and warmup_steps):
        return ProgramSchedule(spec or "constant", learning_rate, decay_steps, gamma, warmup_steps)
    if decay_steps is not None or warmup_steps:
        raise GradcError("--decay-steps and --warmup-steps go with --lr-schedule cosine, linear or step")
    return parse(spec) if spec else learning_rate
