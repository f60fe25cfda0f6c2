"""Training over data: the training program run once per batch (a Dataset cut into batches, or one fed batch
at every step), the forward part evaluated after each epoch, a host-side learning-rate schedule, NaN checks,
checkpoints and resuming, and Ctrl-C. ``gradc train`` and Python's ``gradc.Trainer`` / ``gradc.train`` are this.

    trainer = Trainer(program, startup, fetch=["mean_0.tmp_0", "accuracy_0.tmp_2"], seed=0)
    history = trainer.fit("train.npz", epochs=5, batch_size=64, shuffle=True, eval_data="test.npz")

A run is a function of its seed: the order of each epoch comes from (seed, epoch) and the randomness of each
step (dropout, ...) from (seed, step), so a run resumed from a checkpoint ends where an uninterrupted one does. With
``paddle_stream`` the seed is given once, before the startup programs, as paddle.seed gives it, and every draw follows
on from there as in Paddle (the same programs then draw Paddle's initial weights and dropout masks); a checkpoint then
holds where the stream stands.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from .. import schedules, schedules_plateau
from ..bfloat16 import round_parameters
from ..errors import GradcError, GradcWarning
from ..executor import Executor, Scope, randomness
from ..executor.failures import NonFiniteError
from ..executor.feeding import fetch_names
from ..io import load
from ..ir import Program
from ..rnn_flat import program_flat_buffers
from ..schedule_base import minimized_with
from .best import EarlyStopping
from .checkpoint import checkpoint_directory
from .data import Dataset, OneBatch, as_data, check_fits, examples, naming, without_unread
from .eval_plan import EvalMetrics, EvalPlan, data_arrays, fit_labels, only_read, reported
from .eval_run import evaluate_plan, said_once
from .evaluation import trainer_plan
from .grad_norms import gradient_norms, overflow_flag, parameter_gradients
from .history import History, Reporter, default_fetch, scalar
from .interrupt import deferred_interrupt
from .lbfgs import LBFGS, program_objective
from .params import refresh_flat_buffers, run_startup
from .programs import updates_nothing
from .resume import resume_from
from .set_metrics import set_kinds
from .trainer_checkpoints import TrainerCheckpoints

STARTUP, STEP, EVAL = 1, 0, 2   # randomness streams: [seed, stream, number]


class Trainer(TrainerCheckpoints):
    def __init__(self, program: Program | str | os.PathLike, startup=(), scope: Scope | None = None, *,
                 fetch: str | Sequence[str] | None = None, seed: int = 0, check_nan: bool = False,
                 lr_schedule: schedules.Schedule | str | None = None, lr_var: str | None = None,
                 executor: Executor | None = None, paddle_stream: bool = False, log_grad_norms: bool = False,
                 lbfgs: LBFGS | None = None, after_step: Sequence[Program | str | os.PathLike] = (),
                 lr_per_epoch: bool = False):
        """``startup``: programs (or paths) run once, in order, to initialise the scope. ``fetch``: scalar vars
        reported each step and evaluated (default: the loss). ``paddle_stream``: seed once (see the module).
        ``log_grad_norms``: measure each parameter's gradient every step (``grad_norms``, the reporters show it).
        ``lbfgs``: each step is an L-BFGS step (gradc.training.lbfgs) of a program compiled without an optimizer.
        ``after_step``: programs run on the scope, unfed, after every step (TransE's renormalisation, say).
        ``lr_per_epoch``: the schedule's value at the epoch, not the step (a scheduler stepped after each epoch)."""
        self.program = program if isinstance(program, Program) else load(program, lazy=False)
        self.after_step = [after if isinstance(after, Program) else load(after, lazy=False) for after in after_step]
        if lbfgs is not None and lr_schedule is not None:
            raise GradcError("L-BFGS takes no learning-rate schedule: its learning_rate is the first trial step")
        reason = None if lbfgs is not None else updates_nothing(self.program)
        if reason:
            warnings.warn(reason, GradcWarning, stacklevel=2)
        self.scope = Scope() if scope is None else scope
        self.executor = executor or Executor()
        self.executor.check_finite = check_nan
        fetch = fetch_names(fetch) if fetch is not None else None   # as Executor.run takes it: [loss, [metric]]
        self.fetch = default_fetch(self.program) if fetch is None else fetch
        if not self.fetch:
            warnings.warn("no value to report: the program has no scalar loss gradc can pick (a loss of one value per "
                          "example is not one); name the scalars to report with --fetch NAME (fetch= in Python)",
                          GradcWarning, stacklevel=2)
        self.seed, self.paddle_stream = seed, paddle_stream
        self.gradient_pairs = parameter_gradients(self.program) if log_grad_norms else []
        self.overflow_flag = overflow_flag(self.program) if log_grad_norms else []
        self.grad_norms: dict[str, float] = {}   # the last step's, by parameter
        self.step_parts: list[float] = []        # the last step's values of history.parts
        self.schedule = (schedules.parse(lr_schedule) if isinstance(lr_schedule, str) else lr_schedule
                         or (minimized_with(self.program) if lr_var is None else None))   # the optimizer's
        schedules_plateau.check_watched(self.schedule, self.fetch)
        self.lr_var, self.lr_per_epoch = lr_var, lr_per_epoch   # per epoch: the scheduler stepped after each
        self.epoch = self.batch = self.step = 0
        self.history = History(list(self.fetch), **set_kinds(self.program, self.fetch, self.executor, self.scope))
        self._eval_plans: dict[tuple, EvalPlan] = {}
        self._labels_fitted: dict[tuple, Dataset | OneBatch] = {}   # by plan: the data it was last fitted to
        self.metrics = EvalMetrics()   # fit's: what an evaluation reports beside the scalars
        self._told: set[str] = set()   # the evaluation's notices said (not again after each epoch)
        self.early_stopping: EarlyStopping | None = None
        self._settings: dict | None = None   # the last fit's, which a checkpoint records
        startups = [startup] if isinstance(startup, (Program, str, os.PathLike)) else list(startup or ())
        if paddle_stream:
            randomness.seed(seed)
        for number, init in enumerate(startups):
            self._reseed(STARTUP, number)   # initialisers without a seed of their own
            run_startup(self.executor, init, self.scope)
        round_parameters(self.program, self.scope)   # a pure bfloat16 program's, as Paddle's amp_init
        self.lbfgs, self.flat_buffers = lbfgs, program_flat_buffers(self.program)
        self._objective = program_objective(self.executor, self.program, self.scope) if lbfgs is not None else None

    # ------------------------------------------------------------------ steps and evaluation
    def train_step(self, feed: Mapping[str, object]) -> list[float]:
        """One step of the training program on ``feed``; the fetched scalars."""
        self._reseed(STEP, self.step)
        if self.schedule is not None:
            update = (self.epoch if self.lr_per_epoch     # gradient merge: k runs an update
                      else self.step // schedules.runs_per_update(self.program, self.scope))
            rate = schedules.rate_at(self.schedule, update)
            schedules.write_learning_rate(self.program, self.scope, rate, self.lr_var)
        parts = self.history.parts   # what the epoch's set values are computed from (History.running)
        fetch = self.fetch + parts + [grad for _, grad in self.gradient_pairs] + self.overflow_flag
        try:
            if self._objective is not None:
                values = self._objective.step(self.lbfgs, feed, fetch, lambda: self._reseed(STEP, self.step))
            else:
                values = self.executor.run(self.program, feed, fetch, self.scope)
        except NonFiniteError as exc:
            raise NonFiniteError(exc.where, exc.var, exc.slot, exc.what, self.step + 1, exc.detail) from None
        for after in self.after_step:
            self.executor.run(after, {}, [], self.scope)
        refresh_flat_buffers(self.scope, self.flat_buffers)
        self.step += 1
        self.step_parts = [scalar(name, value) for name, value in zip(parts, values[len(self.fetch):])]
        if self.gradient_pairs:
            overflowed = bool(self.overflow_flag) and bool(np.asarray(values[-1]).any())
            self.grad_norms = gradient_norms(self.gradient_pairs, values[len(self.fetch) + len(parts):], overflowed)
        return [scalar(name, value) for name, value in zip(self.fetch, values)]

    def _reseed(self, stream: int, number: int) -> None:
        if not self.paddle_stream:
            randomness.seed([self.seed, stream, number])

    def evaluate(self, data, batch_size: int | None = None) -> dict[str, float]:
        """The mean over the examples of each fetched scalar the forward part computes, in test mode."""
        data = self._eval_data(data)
        evaluation = self._eval_plan(data)
        self._reseed(EVAL, self.epoch)
        with said_once(self._told):
            return reported(evaluate_plan(self.executor, self.scope, evaluation, data, batch_size), evaluation)

    def check_data(self, data, eval_data=None, batch_size: int = 32, drop_last: bool = False) -> None:
        """Refuse, before the first step, training or evaluation data the program cannot take (check_fits)."""
        check_fits(self.program, data, batch_size, drop_last)
        if eval_data is not None:
            check_fits((plan := self._eval_plan(eval_data, fitted=False)).program, only_read(eval_data, plan.feeds),
                       batch_size, labels_of=self.program, evaluated=True)   # a ranker's query ids: no input
            self._eval_plan(eval_data)   # a k past the class count, a --mask not there: refused before the first step
            watched = self.early_stopping.monitor if self.early_stopping else None
            if watched in plan.unfed:
                raise GradcError(f"{eval_data.source}: early stopping watches '{watched}', which needs "
                                 f"'{plan.unfed[watched]}', not in the eval data: watch a metric of the evaluation "
                                 f"(--monitor {self.metrics.names()[0]})")

    def _eval_data(self, data) -> Dataset | OneBatch:
        """``data`` to evaluate, without the arrays neither the program nor the metrics read."""
        data = as_data(data, "eval data", self.program)
        self.metrics.check_arrays(data)
        return without_unread(self.program, data, self.metrics.kept())

    def _eval_plan(self, data: Dataset | OneBatch, fitted: bool = True) -> EvalPlan:
        """``data``'s evaluation plan, fitted to its labels (fit_labels) once per data set unless not ``fitted``."""
        key = (tuple(sorted(data_arrays(data))), repr(self.metrics))
        if key not in self._eval_plans:
            self._eval_plans[key] = trainer_plan(self.program, data, self.fetch, self.metrics)
        if fitted and self._labels_fitted.get(key) is not data:
            fit_labels(self.program, self._eval_plans[key], data, self.metrics.mask, self.metrics.ignore_index)
            self._labels_fitted[key] = data
        return self._eval_plans[key]

    # ------------------------------------------------------------------ the loop
    def fit(self, data, *, epochs: int | None = None, batch_size: int = 32, shuffle: bool = False,
            drop_last: bool = False, steps: int | None = None, eval_data=None, checkpoint_dir=None,
            checkpoint_every: int | None = None, resume=None, reporter: Reporter | None = None,
            early_stop: int | None = None, monitor: str | None = None, metrics: EvalMetrics | None = None
            ) -> History:
        """Train until ``epochs`` epochs (or ``steps`` steps, in all; ``steps`` alone: as many epochs as they span,
        as ``gradc train --steps``; neither: one epoch) are done, or, with ``early_stop`` N, until the
        evaluation of ``monitor`` (default: the first fetched var, the loss) has not improved for N epochs, and then
        end with the best epoch's model parameters (gradc.training.best); return the history. ``metrics``: what
        the evaluation of ``eval_data`` reports beside the fetched scalars (the accuracy, mIoU, recall@k)."""
        if early_stop is not None and (eval_data is None or not self.fetch):
            raise GradcError("early stopping watches the evaluation of the first fetched var (the loss): give eval "
                             "data (--eval) and the loss")
        self.metrics = metrics or EvalMetrics()
        self.early_stopping = early = None if early_stop is None else EarlyStopping(
            self.program, monitor or self.fetch[0], early_stop, self.fetch, *self.metrics.watched(self.program))
        data = without_unread(self.program, as_data(data, "data", self.program))
        if eval_data is not None:
            eval_data = self._eval_data(eval_data)
        settings = {"batch_size": batch_size, "shuffle": shuffle, "seed": self.seed, "drop_last": drop_last,
                    "examples": data.size, "single_batch": isinstance(data, OneBatch),
                    **({"paddle_stream": True} if self.paddle_stream else {}),
                    **({"lbfgs": self.lbfgs.settings()} if self.lbfgs is not None else {}),
                    **({"early_stop": early_stop, "monitor": early.monitor} if early else {})}
        self._settings = settings
        if resume is not None:
            resume_from(self, resume, settings)
            checkpoint_dir = checkpoint_dir or resume
        batches = data.batch_count(batch_size, drop_last)
        if batches == 0:
            raise GradcError(f"{data.source}: {data.size} examples make no batch of {batch_size} with --drop-last")
        epochs = epochs if epochs is not None else -(-steps // batches) if steps else 1
        self.check_data(data, eval_data, batch_size, drop_last)
        if self.schedule is not None:   # a schedule that ends (OneCycleLR) refuses a run too long before its first step
            last = epochs if self.lr_per_epoch else min(epochs * batches, steps or epochs * batches)
            schedules.rate_at(self.schedule, last - 1)
        if checkpoint_dir:
            checkpoint_directory(checkpoint_dir)
        reporter = reporter or Reporter()
        reporter.begin(self, epochs, batches, isinstance(data, OneBatch), steps)
        self._clock, saved_at = time.perf_counter(), None
        with deferred_interrupt() as stop:
            while self.epoch < epochs and (steps is None or self.step < steps) and not self._stale():
                reporter.epoch_begin(self.epoch, self.batch)
                for feed in data.batches(self.epoch, batch_size, shuffle, self.seed, drop_last, start=self.batch):
                    where = f"step {self.step + 1} (epoch {self.epoch + 1}, batch {self.batch + 1})"
                    with naming(data, where):
                        values = self.train_step(feed)
                    self.batch += 1
                    size = 1 if getattr(data, "episodes", False) else examples(feed)
                    if note := self.history.add_step(values, size, self.step_parts):
                        warnings.warn(f"{where}: {note}", GradcWarning, stacklevel=2)
                    reporter.step(self.step, self.epoch, self.batch, values)
                    if checkpoint_dir and checkpoint_every and self.step % checkpoint_every == 0:
                        saved_at = self._save(checkpoint_dir, settings)
                    if stop.requested:
                        self._stop(checkpoint_dir, settings, saved_at)
                    if steps is not None and self.step >= steps:
                        break
                if self.batch < batches:
                    break
                results = self.evaluate(eval_data, batch_size) if eval_data is not None else {}
                record = self.history.end_epoch(self.epoch, results)
                schedules_plateau.after_epoch(self.schedule, record, self.fetch)   # before the report: a new rate
                reporter.epoch_end(self.epoch, record)
                if self.early_stopping:
                    self.early_stopping.after_epoch(self.history, self.scope)
                self.epoch, self.batch = self.epoch + 1, 0
                if checkpoint_dir and not checkpoint_every:
                    saved_at = self._save(checkpoint_dir, settings)
                if stop.requested:
                    self._stop(checkpoint_dir, settings, saved_at)
            if checkpoint_dir and saved_at != self.step:
                self._save(checkpoint_dir, settings)
        if eval_data is not None and self.batch:   # --steps ended the run within an epoch: evaluate it as it is
            self.history.last_eval = self.evaluate(eval_data, batch_size)
        if self._stale():
            reporter.stopped_early(self.history, self.early_stopping.monitor, early_stop)
        if self.early_stopping and (best := self.early_stopping.restore(self.scope, self.history)) is not None:
            self.history.kept_epoch, self.history.last_eval = best["epoch"], best["eval"]
            reporter.kept_best(best, self.early_stopping.monitor)
        self._count_time()
        reporter.end(self.history)
        return self.history

    def _stale(self) -> bool:
        """Early stopping's patience has run out (read from the history, so a resumed run agrees)."""
        return self.early_stopping is not None and self.early_stopping.stale(self.history)


def train(program, data, startup=(), scope: Scope | None = None, *, fetch=None, seed: int = 0,
          check_nan: bool = False, lr_schedule=None, lr_var=None, paddle_stream: bool = False,
          lbfgs: LBFGS | None = None, lr_per_epoch: bool = False, **fit_options) -> History:
    """Trainer(program, startup, scope, ...).fit(data, **fit_options) in one call."""
    trainer = Trainer(program, startup, scope, fetch=fetch, seed=seed, check_nan=check_nan, lr_schedule=lr_schedule,
                      lr_var=lr_var, paddle_stream=paddle_stream, lbfgs=lbfgs, lr_per_epoch=lr_per_epoch)
    return trainer.fit(data, **fit_options)

