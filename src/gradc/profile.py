"""`gradc run --profile`: measured time and peak memory per op type. Every kernel is wrapped for the
duration of a run (the executor's loop is untouched; plans made inside the ``profiling`` block pick the
wrappers up), timing it and reading tracemalloc's peak above what was allocated when it started. A
control-flow kernel's figures include the ops of the blocks it runs."""

from __future__ import annotations

import time
import tracemalloc
from contextlib import contextmanager
from dataclasses import dataclass, field

from .executor import KERNELS
from .executor.kernels import blas_bits
from .memory import human


@dataclass
class OpTypeStats:
    calls: int = 0
    seconds: float = 0.0
    peak: int = 0          # the most one call allocated above what was in use when it started


@dataclass
class Profile:
    by_type: dict[str, OpTypeStats] = field(default_factory=dict)
    peak: int = 0          # the run's peak, as tracemalloc counts it (everything allocated since it started)
    _frames: list[list[int]] = field(default_factory=list)   # [start current, peak seen] of running kernels

    def report(self) -> str:
        rows = sorted(self.by_type.items(), key=lambda item: -item[1].seconds)
        width = max([len(name) for name, _ in rows] + [7])
        lines = [f"{'op type':<{width}}  {'calls':>6}  {'total ms':>9}  {'mean ms':>8}  {'peak memory':>11}"]
        for name, stats in rows:
            lines.append(f"{name:<{width}}  {stats.calls:>6}  {stats.seconds * 1e3:>9.3f}  "
                         f"{stats.seconds * 1e3 / stats.calls:>8.3f}  {human(stats.peak):>11}")
        calls = sum(s.calls for s in self.by_type.values())
        lines.append(f"{calls} kernel calls, {sum(s.seconds for s in self.by_type.values()) * 1e3:.3f} ms in kernels "
                     f"(control flow includes its blocks), peak memory of the run {human(self.peak)} "
                     f"(tracemalloc, which also slows the run)")
        return "\n".join(lines)

    def as_data(self) -> dict:
        """The report's figures (`gradc run --profile --json`): per op type, the slowest first."""
        rows = sorted(self.by_type.items(), key=lambda item: -item[1].seconds)
        return {"op_types": [{"type": name, "calls": stats.calls, "seconds": stats.seconds, "peak_bytes": stats.peak}
                             for name, stats in rows], "peak_bytes": self.peak}

    def _enter(self) -> None:
        current, peak = tracemalloc.get_traced_memory()
        if self._frames:   # the running parent's peak so far, before the reset hides it
            self._frames[-1][1] = max(self._frames[-1][1], peak)
        self.peak = max(self.peak, peak)
        tracemalloc.reset_peak()
        self._frames.append([current, current])

    def _exit(self, op_type: str, seconds: float) -> None:
        start, seen = self._frames.pop()
        peak = max(tracemalloc.get_traced_memory()[1], seen)
        self.peak = max(self.peak, peak)
        if self._frames:
            self._frames[-1][1] = max(self._frames[-1][1], peak)
        stats = self.by_type.setdefault(op_type, OpTypeStats())
        stats.calls += 1
        stats.seconds += seconds
        stats.peak = max(stats.peak, peak - start)

    def wrap(self, op_type: str, kernel):
        def profiled(ctx):
            self._enter()
            began = time.perf_counter()
            try:
                return kernel(ctx)
            finally:
                self._exit(op_type, time.perf_counter() - began)
        return profiled


@contextmanager
def profiling():
    """Within the block, every kernel reports to the Profile yielded; afterwards they are restored."""
    profile = Profile()
    originals = dict(KERNELS)
    started = not tracemalloc.is_tracing()
    blas_bits.measure_all()   # once a process, not a cost of the first op that asks
    if started:
        tracemalloc.start()
    KERNELS.update({op_type: profile.wrap(op_type, kernel) for op_type, kernel in originals.items()})
    try:
        yield profile
    finally:
        KERNELS.update(originals)
        profile.peak = max(profile.peak, tracemalloc.get_traced_memory()[1])
        if started:
            tracemalloc.stop()
