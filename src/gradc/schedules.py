"""Learning-rate schedules. In Paddle no op writes the learning rate: an LRScheduler's value is written into the
learning-rate var before each run (``float32(scheduler())``, run k reading the value at epoch k). gradc does the
same: a Schedule maps the 0-based run index to a learning rate, ``write_learning_rate`` stores it in the scope,
and ``run_step`` runs one scheduled training step. Paddle's schedulers are here under their names and arguments
(``make("StepDecay", learning_rate=0.1, step_size=2)``, or ``parse("StepDecay(learning_rate=0.1, step_size=2)")``),
closed forms of the values Paddle computes; a list of per-step values is a schedule too (``parse("0.1,0.05")``)."""

from __future__ import annotations

import ast
import inspect
import math
from collections.abc import Mapping, Sequence

from .errors import GradcError, closest
from .ir import Program
from .ir.types import NUMPY_DTYPE_NAMES
from .ops.optimizer_checks import UPDATES
from .schedule_base import Schedule, rate_at
from .schedules_cyclic import CosineAnnealingWarmRestarts, CyclicLR, LinearLR, OneCycleLR
from .schedules_lambda import EpochFunction, LambdaDecay, MultiplicativeDecay, too_deep
from .schedules_plateau import ReduceOnPlateau


class Values(Schedule):
    """Given per-step values; past the end the last one stays."""

    def __init__(self, values: Sequence[float]):
        if not values:
            raise GradcError("a learning-rate schedule of values needs at least one value")
        self.values = [float(v) for v in values]

    def __call__(self, step):
        return self.values[min(step, len(self.values) - 1)]


class _Decay(Schedule):
    def __init__(self, learning_rate: float, **settings):
        self.base = float(learning_rate)
        self.__dict__.update(settings)


class StepDecay(_Decay):
    def __init__(self, learning_rate, step_size, gamma=0.1):
        super().__init__(learning_rate, step_size=step_size, gamma=gamma)

    def __call__(self, step):
        return self.base * self.gamma ** (step // self.step_size)


class MultiStepDecay(_Decay):
    def __init__(self, learning_rate, milestones, gamma=0.1):
        super().__init__(learning_rate, milestones=list(milestones), gamma=gamma)

    def __call__(self, step):
        return self.base * self.gamma ** sum(1 for m in self.milestones if step >= m)


class ExponentialDecay(_Decay):
    def __init__(self, learning_rate, gamma):
        super().__init__(learning_rate, gamma=gamma)

    def __call__(self, step):
        return self.base * self.gamma ** step


class NaturalExpDecay(ExponentialDecay):
    def __call__(self, step):
        return self.base * math.exp(-self.gamma * step)


class InverseTimeDecay(ExponentialDecay):
    def __call__(self, step):
        return self.base / (1 + self.gamma * step)


class PolynomialDecay(_Decay):
    def __init__(self, learning_rate, decay_steps, end_lr=0.0001, power=1.0, cycle=False):
        super().__init__(learning_rate, decay_steps=decay_steps, end_lr=end_lr, power=power, cycle=cycle)

    def __call__(self, step):
        steps = self.decay_steps
        if self.cycle:
            steps *= max(1, math.ceil(step / self.decay_steps))
        else:
            step = min(step, self.decay_steps)
        return (self.base - self.end_lr) * (1 - step / steps) ** self.power + self.end_lr


class CosineAnnealingDecay(_Decay):
    """eta_min + (lr - eta_min)(1 + cos(pi step / T_max)) / 2, also past T_max (Paddle's recursion, in closed
    form: the two agree to float64 rounding)."""

    def __init__(self, learning_rate, T_max, eta_min=0.0):  # noqa: N803 - Paddle's argument name
        super().__init__(learning_rate, T_max=T_max, eta_min=float(eta_min))

    def __call__(self, step):
        return self.eta_min + (self.base - self.eta_min) * (1 + math.cos(math.pi * step / self.T_max)) / 2


class LinearWarmup(Schedule):
    """From start_lr to end_lr over warmup_steps, then ``learning_rate`` (a float or a schedule that starts
    counting after the warm-up)."""

    def __init__(self, learning_rate, warmup_steps, start_lr, end_lr):
        self.after, self.warmup_steps, self.start_lr, self.end_lr = learning_rate, warmup_steps, start_lr, end_lr

    def __call__(self, step):
        if step < self.warmup_steps:
            return (self.end_lr - self.start_lr) * step / self.warmup_steps + self.start_lr
        after = self.after
        return after(step - self.warmup_steps) if isinstance(after, Schedule) else float(after)


class PiecewiseDecay(Schedule):
    def __init__(self, boundaries, values):
        if len(values) != len(boundaries) + 1:
            raise GradcError(f"PiecewiseDecay needs one value more than boundaries, got {len(boundaries)} "
                             f"boundaries and {len(values)} values")
        self.boundaries, self.values = list(boundaries), [float(v) for v in values]

    def __call__(self, step):
        return next((v for b, v in zip(self.boundaries, self.values) if step < b), self.values[-1])


class NoamDecay(Schedule):
    """learning_rate * d_model^-0.5 * min(step^-0.5, step * warmup_steps^-1.5): 0 at step 0, as in Paddle."""

    def __init__(self, d_model, warmup_steps, learning_rate=1.0):
        self.d_model, self.warmup_steps, self.base = d_model, warmup_steps, float(learning_rate)

    def __call__(self, step):
        first = 1.0 if step == 0 else step ** -0.5
        return self.base * self.d_model ** -0.5 * min(first, self.warmup_steps ** -1.5 * step)


SCHEDULES: dict[str, type[Schedule]] = {cls.__name__: cls for cls in (
    StepDecay, MultiStepDecay, ExponentialDecay, NaturalExpDecay, InverseTimeDecay, PolynomialDecay,
    CosineAnnealingDecay, LinearWarmup, PiecewiseDecay, NoamDecay, OneCycleLR, CyclicLR, LinearLR,
    CosineAnnealingWarmRestarts, ReduceOnPlateau, LambdaDecay, MultiplicativeDecay)}


def _schedule_class(name: str) -> type[Schedule]:
    cls = SCHEDULES.get(name) or SCHEDULES.get(name + "Decay")
    if cls is None:
        raise GradcError(f"unknown learning-rate schedule '{name}'{_did_you_mean(name, SCHEDULES)} (known: "
                         f"{', '.join(sorted(SCHEDULES))})")
    return cls


def make(name: str, **arguments) -> Schedule:
    """Paddle's scheduler ``name`` (CosineAnnealing may drop its Decay) with Paddle's argument names."""
    cls = _schedule_class(name)
    accepted = inspect.signature(cls).parameters
    listed = f"its arguments: {', '.join(accepted)}"
    for given in arguments:
        if given not in accepted:
            raise GradcError(f"schedule {name} has no argument '{given}'{_did_you_mean(given, accepted)}; {listed}")
    missing = [key for key, parameter in accepted.items() if parameter.default is inspect.Parameter.empty
               and key not in arguments]
    if missing:
        raise GradcError(f"schedule {name} needs {', '.join(missing)}; {listed}")
    try:
        return cls(**arguments)
    except (TypeError, ValueError) as exc:   # a value of the wrong kind
        raise GradcError(f"schedule {name}: {exc}") from None


def _did_you_mean(name: str, known) -> str:
    close = closest(name, known)
    return f" (did you mean {close}?)" if close else ""


def _class_name(func: ast.expr) -> str | None:
    """The scheduler a call names: ``Name``, or as Paddle code spells it, ``paddle.optimizer.lr.Name`` (``lr.Name``,
    ``optimizer.lr.Name``)."""
    if isinstance(func, ast.Name):
        return func.id
    path = []
    while isinstance(func, ast.Attribute):
        path.insert(0, func.attr)
        func = func.value
    path.insert(0, func.id if isinstance(func, ast.Name) else "")
    return path[-1] if ".".join(path[:-1]) in ("paddle.optimizer.lr", "optimizer.lr", "lr") else None


def _call(tree: ast.expr, spec: str = ""):
    """A schedule of a Name(value, ..., arg=value, ...) node, positional values in the order of Paddle's class, whose
    values may be schedules themselves (LinearWarmup's learning_rate=CosineAnnealingDecay(...), as PaddleOCR's and
    PaddleDetection's configs nest them)."""
    name = _class_name(tree.func) if isinstance(tree, ast.Call) else None
    if name is not None and None not in [kw.arg for kw in tree.keywords]:
        names = list(inspect.signature(_schedule_class(name)).parameters)
        if len(tree.args) > len(names) or any(isinstance(arg, ast.Starred) for arg in tree.args):
            raise GradcError(f"schedule {name} takes at most {len(names)} values: {', '.join(names)}")
        given = [kw.arg for kw in tree.keywords if kw.arg in names[:len(tree.args)]]
        if given:
            raise GradcError(f"schedule {name}: {given[0]} given twice, by position and by name")
        return make(name, **{key: _call(arg, spec) for key, arg in zip(names, tree.args)},
                    **{kw.arg: _call(kw.value, spec) for kw in tree.keywords})
    if isinstance(tree, ast.Lambda):   # LambdaDecay's lr_lambda, read by gradc, not run
        return EpochFunction(tree, ast.get_source_segment(spec, tree) or ast.unparse(tree))
    return _finite_literal(tree, spec)


def _finite_literal(tree: ast.expr, spec: str):
    """The literal's value, refused where it is or holds a number that is not finite (1e999 reads as inf): such a
    rate makes every weight NaN at its update."""
    value = ast.literal_eval(tree)
    if any(isinstance(number, float) and not math.isfinite(number)
           for number in (value if isinstance(value, (list, tuple)) else [value])):
        raise GradcError(f"the learning-rate schedule '{spec}': {ast.get_source_segment(spec, tree) or value} is not "
                         f"a finite number")
    return value


def parse(spec: str) -> Schedule:
    """"0.1,0.05,0.01" (per-step values) or "Name(arg=value, ...)" (Paddle's scheduler and arguments, a nested
    scheduler among them)."""
    try:
        tree = ast.parse(spec.strip(), mode="eval").body
        if too_deep(tree):   # Python 3.10's and 3.13's parsers take what 3.11's refuse: one answer on each
            raise RecursionError
        if isinstance(tree, ast.Call):
            return _call(tree, spec.strip())
        bare = _class_name(tree) if isinstance(tree, (ast.Name, ast.Attribute)) else None
        if bare in SCHEDULES:
            raise GradcError(f"the learning-rate schedule {spec} needs its arguments: {bare}("
                             f"{', '.join(inspect.signature(SCHEDULES[bare]).parameters)}), as Paddle's class")
        if isinstance(tree, ast.Name):   # misspelt
            meant = _did_you_mean(tree.id, [*SCHEDULES, "cosine", "linear", "step"])
            raise GradcError(f"cannot read the learning-rate schedule '{spec}'{meant}: give values (0.1,0.05) or "
                             f"Name(arg=value, ...), e.g. StepDecay(learning_rate=0.1, step_size=2)")
        values = _finite_literal(tree, spec.strip())
        return Values(list(values) if isinstance(values, (tuple, list)) else [values])
    except (RecursionError, MemoryError):   # Python's parser refuses an expression nested this deep
        raise GradcError(f"cannot read the learning-rate schedule of {len(spec)} characters: its expression is "
                         f"nested too deeply") from None
    except (SyntaxError, ValueError, TypeError):
        raise GradcError(f"cannot read the learning-rate schedule '{spec}': give values (0.1,0.05) or "
                         f"Name(arg=value, ...), e.g. StepDecay(learning_rate=0.1, step_size=2)") from None


def learning_rate_vars(program: Program) -> list[str]:
    """The vars that hold the learning rate: those the optimizer ops read as it, traced back through the ops
    that derive per-parameter rates (ParamAttr(learning_rate=r) scales it) to the vars no op writes; in every block
    (GradientMergeOptimizer's updates run inside a conditional_block, once every k_steps runs)."""
    ops = [op for block in program.blocks for op in block.ops]
    writers = {name: op for op in ops for name in op.output_names()}
    pending = [name for op in ops if op.type in UPDATES and not UPDATES[op.type].lr_like_param
               for name in op.input(UPDATES[op.type].lr)]
    roots, seen = set(), set()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        writer = writers.get(name)
        if writer is None or writer.type in UPDATES:
            roots.add(name)
        else:
            pending.extend(writer.input_names())
    return sorted(roots)


def learning_rate_var(program: Program, name: str | None = None) -> str:
    """``name``, or the one learning-rate var of the program."""
    if name is not None:
        if program.global_block.find_var(name) is None:
            raise GradcError(f"the learning-rate var '{name}' is not declared in block 0")
        return name
    found = learning_rate_vars(program)
    if not found and any(op.type in UPDATES and not UPDATES[op.type].lr_like_param for op in program.global_block.ops):
        raise GradcError("the program computes its learning rate with ops of its own (a schedule given to gradc "
                         "compile --lr-schedule): a schedule written by the host would fight it; give none")
    if len(found) != 1:
        what = "no optimizer op reads a learning rate" if not found else f"several vars: {', '.join(found)}"
        raise GradcError(f"cannot tell which var a schedule writes ({what}); name it (--lr-var, lr_var= in Python)")
    return found[0]


GRADIENT_MERGE_K = "gradient_merge_k"   # GradientMergeOptimizer's k_steps: a persistable var its startup fills


def runs_per_update(program: Program, scope) -> int:
    """The runs of one optimizer step: GradientMergeOptimizer's k_steps (its updates run every k-th run, and its user
    steps Paddle's scheduler after each of them), else 1."""
    if program.global_block.find_var(GRADIENT_MERGE_K) is None or GRADIENT_MERGE_K not in scope:
        return 1
    return int(scope[GRADIENT_MERGE_K].reshape(-1)[0])


def write_learning_rate(program: Program, scope, value: float, name: str | None = None) -> None:
    """Store ``value`` in the learning-rate var, in its declared shape and dtype (Paddle: float32)."""
    import numpy as np  # here, not above: the optimizer pass builds schedules and does not import numpy

    var = program.global_block.find_var(learning_rate_var(program, name))
    dtype = NUMPY_DTYPE_NAMES.get(var.dtype, "float32")
    scope[var.name] = np.full([max(d, 1) for d in var.shape or []], value, dtype)


def run_step(executor, program: Program, scope, schedule: Schedule, step: int, feed: Mapping | None = None,
             fetch_list=None, lr_var: str | None = None) -> list:
    """One training run at ``step`` (0-based): the schedule's value goes into the learning-rate var first."""
    write_learning_rate(program, scope, rate_at(schedule, step), lr_var)
    return executor.run(program, feed=feed, fetch_list=fetch_list, scope=scope)
