"""What a training run reports: the fetched scalars of every step, the means of every epoch (training and
evaluation), time and examples; and the Reporter the trainer tells as it goes (silent here; the CLI's prints)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..amp_loss import unscaled_loss
from ..backward import default_loss
from ..errors import GradcError
from ..ir import FLOAT_DTYPES, Program, roles
from ..pairing import BACKWARD, OPTIMIZER, is_backward_seed, op_kinds, seeded_losses


def scalar(name: str, value) -> float:
    array = np.asarray(value)
    if array.size != 1 or array.dtype.kind not in "biuf":
        raise GradcError(f"fetched var '{name}' is {array.dtype}{list(array.shape)}: training reports scalars "
                         f"(a loss, an accuracy); fetch other values with gradc run")
    return float(array.reshape(()))


def default_fetch(program: Program, notice: bool = False) -> list[str]:
    """The loss: the float scalar output of the op Paddle's role marks as the loss (of each, in a program compiled
    with several --loss), else the scalars a backward starts from (a PIR training program marks no op), else the usual
    guess; never an inner objective whose gradients the forward goes on from (inner_objectives); in an AMP program
    the loss before its loss scaling (amp_loss). ``notice``: say so when the guess passed over other scalars a loss
    could be (a PSNR computed after it), not when it is the one there is."""
    block = program.global_block
    marked, per_example = [], False
    inner = inner_objectives(block)
    for op in block.ops:
        role = op.attrs.get("op_role")
        if isinstance(role, int) and role & roles.LOSS and not role & roles.BACKWARD:
            if any(name in inner for name in op.output_names()):
                continue
            names = [n for n in op.output_names() if (v := block.find_var(n)) is not None and v.shape in ([], [1])]
            marked += names if len(names) == 1 and names[0] not in marked else []
            per_example = per_example or not names
    if marked or per_example:   # a loss of one value per example: no scalar of it to report
        return [unscaled_loss(block, name) for name in marked]
    seeded = [name for name in seeded_losses(block) if name not in inner]
    if seeded:
        return [unscaled_loss(block, name) for name in seeded]
    loss = default_loss(program, notice=notice, notice_sole=False)
    return [unscaled_loss(block, loss)] if loss else []   # a PIR program's loss scaling: no op_role marks it


def inner_objectives(block) -> set[str]:
    """The losses (marked by op_role, or seeded by a backward's ones) from whose gradients the forward computes another
    float scalar: `paddle.static.gradients` seeds the loss it differentiates (MAML's support loss, a critic's output
    under a gradient penalty), and the scalar computed from those gradients is the program's loss, not it. A scalar
    the updates read is a gradient, not an objective (paddle.static.amp's master_grad casts with the forward's role)."""
    inner, started, since = set(), [], {}   # since: var -> the losses whose gradients it is computed from
    kinds = op_kinds(block)
    updated_from = {name for op, kind in zip(block.ops, kinds) if kind == OPTIMIZER for name in op.input_names()}
    for op, kind in zip(block.ops, kinds):
        role = op.attrs.get("op_role")
        if kind == BACKWARD:
            if is_backward_seed(op):
                started.append(op.input("X")[0])
            for name in op.output_names():
                since[name] = tuple(started)
        elif kind != OPTIMIZER:
            sources = {loss for name in op.input_names() for loss in since.get(name, ())}
            for name in op.output_names() if sources else ():
                since[name] = tuple(sources)
                var = block.find_var(name)
                if (var is not None and not var.persistable and var.dtype in FLOAT_DTYPES and var.shape in ([], [1])
                        and name not in updated_from):
                    inner.update(sources)
            if isinstance(role, int) and role & roles.LOSS:
                started.extend(op.output_names())
    return inner


@dataclass
class History:
    fetch: list[str]
    ratios: dict[str, tuple[str, str]] = field(default_factory=dict)   # set_metrics.per_count's: name -> parts
    last_of: set[str] = field(default_factory=set)             # running over every step (an auc op's AUC)
    averaged: list[str] = field(default_factory=list)          # means a fetched scalar is computed from (an MSE)
    derive: Callable[[dict], dict] | None = None               # those scalars at the averaged means (a PSNR)
    sums: dict[str, tuple[float, list]] = field(default_factory=dict)   # set_metrics.sums_of_ratios': a masked mean
    steps: list[list[float]] = field(default_factory=list)     # the fetched scalars of each step
    epochs: list[dict] = field(default_factory=list)           # {"epoch", "train": {name: mean}, "eval": {...}}
    examples: int = 0
    seconds: float = 0.0
    epoch_sums: list[float] = field(default_factory=list)      # of the epoch under way, weighted by batch size
    epoch_examples: int = 0
    epoch_parts: dict[str, float] = field(default_factory=dict)   # the ratios' parts summed, the means weighted
    partless_epoch: bool = False   # resumed mid-epoch from an older gradc's checkpoint, which kept no epoch_parts
    last_eval: dict = field(default_factory=dict)              # the latest evaluation (an epoch's, or at the end)
    kept_epoch: int | None = None                              # early stopping: the epoch whose parameters it kept
    told_nonfinite: bool = False                               # a step's NaN or Inf was warned of

    @property
    def parts(self) -> list[str]:
        """The vars a step fetches beside ``fetch`` for the epoch's ratios and derived scalars."""
        ratio_parts = [part for pair in self.ratios.values() for part in pair]
        return list(dict.fromkeys([*ratio_parts, *(name for name in self.averaged if name not in self.fetch)]))

    def add_step(self, values: list[float], examples: int, parts: Sequence[float] = ()) -> str | None:
        """Count the step in (``parts``: the values of ``self.parts``); the first step whose values are not all
        finite: a warning, for its epoch's mean of them is not finite either (an inf in a batch; once a run: a
        diverged run's every later step would repeat it)."""
        self.steps.append(values)
        for name, value in zip(self.parts, parts):
            weight = examples if name in self.averaged else 1   # a ratio's parts are sums already
            self.epoch_parts[name] = self.epoch_parts.get(name, 0.0) + value * weight
        self.examples += examples
        self.epoch_sums = [s + v * examples for s, v in zip(self.epoch_sums or [0.0] * len(values), values)]
        self.epoch_examples += examples
        bad = [f"{name} is {value}" for name, value in zip(self.fetch, values) if not np.isfinite(value)]
        if bad and not self.told_nonfinite:
            self.told_nonfinite = True
            return (f"{', '.join(bad)}, so this epoch's mean of {'it' if len(bad) == 1 else 'them'} is not finite "
                    f"either (--check-nan stops at the op that writes the first NaN or Inf; later steps are not told)")
        return None

    def running(self) -> dict[str, float]:
        """The epoch's values so far, as an evaluation gives the set's: a ratio to a count of the data (a CER's edit
        distances to the label lengths) as the summed dividends over the summed counts, a scalar computed from a mean
        (a PSNR of the MSE) at the epoch's mean, a value running over every step (an AUC) as the last step's, any
        other the mean over the examples."""
        count = max(self.epoch_examples, 1)
        means = {name: total / count for name, total in zip(self.fetch, self.epoch_sums)}
        # resumed mid-epoch from an older gradc's checkpoint, the parts hold the steps since alone: the means stand
        parts = {} if self.partless_epoch else self.epoch_parts
        if self.derive is not None and self.epoch_examples and not self.partless_epoch:
            means.update(self.derive({name: means[name] if name in self.fetch else parts[name] / count
                                      for name in self.averaged}))
        ratios = {name: parts[top] / parts[bottom] for name, (top, bottom) in self.ratios.items() if parts.get(bottom)}
        means.update({name: value for name, value in ratios.items() if name in self.fetch})
        for name, (constant, pairs) in self.sums.items():   # a masked mean plus a penalty: each term's epoch value
            terms = [ratios.get(term) if term in self.ratios else means[term] if term in self.fetch
                     else parts.get(term, 0.0) / count for _, term in pairs]
            if parts and None not in terms:
                means[name] = constant + sum(weight * value for (weight, _), value in zip(pairs, terms))
        return {**means, **{name: self.last()[name] for name in self.last_of if name in means}}

    def end_epoch(self, epoch: int, evaluated: dict[str, float]) -> dict:
        record = {"epoch": epoch + 1, "step": len(self.steps), "train": self.running(), "eval": evaluated}
        self.last_eval = evaluated
        self.epochs.append(record)
        self.epoch_sums, self.epoch_examples, self.epoch_parts, self.partless_epoch = [], 0, {}, False
        return record

    def best_epoch(self, name: str, higher: bool = False) -> dict | None:
        """The first epoch whose evaluation of ``name`` is the lowest (``higher``: the highest) so far (None before
        any finite one: a NaN, undefined or diverged, is no best, and compares false with every value, so min and max
        kept a first epoch's NaN as the best for good and early stopping restored its parameters)."""
        evaluated = [record for record in self.epochs
                     if name in (record.get("eval") or {}) and np.isfinite(record["eval"][name])]
        choose = max if higher else min
        return choose(evaluated, key=lambda record: record["eval"][name], default=None)

    def epochs_since_best(self, name: str, higher: bool = False) -> int:
        best = self.best_epoch(name, higher)
        return 0 if best is None else self.epochs[-1]["epoch"] - best["epoch"]

    def last(self) -> dict[str, float]:
        return dict(zip(self.fetch, self.steps[-1])) if self.steps else {}

    def state(self) -> dict:
        return {"fetch": self.fetch, "steps": self.steps, "epochs": self.epochs, "examples": self.examples,
                "seconds": self.seconds, "epoch_sums": self.epoch_sums, "epoch_examples": self.epoch_examples,
                "epoch_parts": self.epoch_parts, "partless_epoch": self.partless_epoch, "last_eval": self.last_eval}

    @classmethod
    def from_state(cls, fetch: list[str], state: dict, **kinds) -> History:
        """The history a checkpoint kept; a fresh one if it fetched other vars (its records would not line up).
        ``kinds``: its ratios and last_of, which the program gives."""
        history = cls(list(fetch), **kinds)
        if state.get("fetch") == history.fetch and all(isinstance(state.get(key), list) for key in ("steps", "epochs")):
            for key, value in state.items():
                if key in cls.__dataclass_fields__ and isinstance(value, type(getattr(history, key))):
                    setattr(history, key, value)
            history.partless_epoch |= bool(history.epoch_examples) and "epoch_parts" not in state
        return history


class Reporter:
    """What the trainer tells as it goes; every method may be overridden, none must be."""

    def begin(self, trainer, epochs: int, batches: int, single_batch: bool, steps: int | None) -> None:
        pass

    def epoch_begin(self, epoch: int, batch: int) -> None:
        pass

    def step(self, step: int, epoch: int, batch: int, values: list[float]) -> None:
        pass

    def epoch_end(self, epoch: int, record: dict) -> None:
        pass

    def stopped_early(self, history: History, name: str, patience: int) -> None:
        pass

    def kept_best(self, record: dict, name: str) -> None:
        """The run ends with the parameters of the epoch of ``record``, the best by its evaluation of ``name``."""

    def end(self, history: History) -> None:
        pass
