"""How `gradc train` reports: a progress bar per epoch (click's) on stderr when it is a terminal, plain log
lines every --log-every steps otherwise; a line per epoch with the training and evaluation means; a summary."""

from __future__ import annotations

import math
import sys
import time

import click

from .grad_norms import describe
from .history import History, Reporter


def _values(names, values) -> str:
    return " ".join(f"{name}={value:.6g}" for name, value in zip(names, values))


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}" + ("" if number == 1 else "s")


class ConsoleReporter(Reporter):
    def __init__(self, log_every: int = 1, progress_stream=None, bar: bool = True):
        self.log_every, self.allow_bar = log_every, bar
        self.stream = progress_stream or sys.stderr
        self.bar = None

    def begin(self, trainer, epochs, batches, single_batch, steps):
        self.trainer, self.epochs, self.batches, self.single = trainer, epochs, batches, single_batch
        self.total_steps = steps if single_batch and steps else epochs * batches
        self.names, self.started = trainer.fetch, time.perf_counter()
        self.examples_at_start = trainer.history.examples
        if trainer.epoch >= epochs or (steps is not None and trainer.step >= steps):
            asked = "--steps" if steps is not None and trainer.step >= steps else "--epochs"
            click.echo(f"nothing to train: the resumed run has done {_count(trainer.epoch, 'epoch')} "
                       f"({_count(trainer.step, 'step')}), all that {asked} asks for (give more to train on)")
        terminal = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.progress = terminal and self.allow_bar
        if self.progress and single_batch:
            self.bar = self._bar(self.total_steps, "training", trainer.step)

    def _bar(self, length: int, label: str, done: int):
        bar = click.progressbar(length=length, label=label, file=self.stream, show_eta=True, show_pos=True,
                                item_show_func=lambda status: status)
        bar.__enter__()
        bar.update(done)
        return bar

    def epoch_begin(self, epoch, batch):
        self.epoch_started, self.epoch_examples = time.perf_counter(), self.trainer.history.epoch_examples
        if self.progress and not self.single:
            self.bar = self._bar(self.batches, f"epoch {epoch + 1}/{self.epochs}", batch)

    def _rate(self) -> float:
        seen = self.trainer.history.examples - self.examples_at_start
        return seen / max(time.perf_counter() - self.started, 1e-9)

    def step(self, step, epoch, batch, values):
        if self.bar is not None:
            running = self.trainer.history.running() if not self.single else dict(zip(self.names, values))
            status = f"{self._rate():,.0f} ex/s" + "".join(f"  {n}={v:.4g}" for n, v in running.items())
            self.bar.update(1, status)
            return
        if self.single:
            if step % self.log_every == 0 or step == self.total_steps:
                click.echo(f"step {step}: {_values(self.names, values)}")
                self._grad_norms()
        elif batch % self.log_every == 0 or batch == self.batches:
            click.echo(f"epoch {epoch + 1}/{self.epochs} step {batch}/{self.batches}: "
                       f"{_values(self.names, values)} ({self._rate():,.0f} ex/s)")
            self._grad_norms()

    def _grad_norms(self):
        if self.trainer.grad_norms:
            click.echo(f"  {describe(self.trainer.grad_norms)}")

    def _close_bar(self):
        if self.bar is not None:
            self.bar.__exit__(None, None, None)
            self.bar = None

    def epoch_end(self, epoch, record):
        if self.single:
            return
        self._close_bar()
        seconds = time.perf_counter() - self.epoch_started
        line = f"epoch {epoch + 1}/{self.epochs}: train {_values(record['train'], record['train'].values())}"
        if record["eval"]:
            line += f" | eval {_values(record['eval'], record['eval'].values())}"
        if "learning_rate" in record:
            line += f" | learning rate now {record['learning_rate']:g}"
        click.echo(f"{line} ({seconds:.1f} s)")

    def stopped_early(self, history: History, name: str, patience: int):
        best = history.best_epoch(name, self.trainer.early_stopping.higher)
        click.echo(f"stopped early: eval {name} has not improved on epoch {best['epoch']}'s {best['eval'][name]:.6g} "
                   f"for {_count(patience, 'epoch')} (--early-stop)")

    def kept_best(self, record: dict, name: str):
        last = " (the last)" if record["epoch"] == self.trainer.epoch and not self.trainer.batch else ""
        click.echo(f"kept the parameters of epoch {record['epoch']}{last}, the best by eval {name}="
                   f"{record['eval'][name]:.6g}")

    def end(self, history: History):
        self._close_bar()
        steps, seconds = len(history.steps), history.seconds
        rate = history.examples / max(seconds, 1e-9)
        parts = [_count(steps, "step"), f"{history.examples:,} examples in {seconds:.1f} s ({rate:,.0f} ex/s)"]
        if not self.single:   # --steps may end the run within an epoch
            done, part = _count(len(history.epochs), "epoch"), self.trainer.batch
            within = f"{part}/{self.batches} steps of epoch {self.trainer.epoch + 1}"
            parts.insert(0, done if not part else f"{done} + {within}" if history.epochs else within)
        line = "done: " + ", ".join(parts)
        if history.steps and history.fetch:
            line += f"; last step {_values(history.fetch, history.steps[-1])}"
        if history.last_eval:
            line += f"; eval {_values(history.last_eval, history.last_eval.values())}"
        click.echo(line)
        if history.steps and not all(math.isfinite(value) for value in history.steps[-1]):
            click.echo("a fetched value is NaN or Inf: --check-nan stops at the first op that writes one and names it")
