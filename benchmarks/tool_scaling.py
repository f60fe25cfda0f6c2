"""Time per layer of every pass and tool a large program meets, at N and 4N layers of the deep MLP: each should be
linear, so the ratio of its time per layer at 4N to that at N stays near 1. A step that scans the whole program
per op (or per segment, per live value) shows as a ratio of 2-4; `grows` marks those above 1.5.

Its first run (2026-11-28, 500 and 2,000 layers) found Program.clone at 4.5x, inference_program 3.0x and
gradc.minimize 1.9x (the collector's passes over a growing heap), `gradc diff` 3.2x (difflib over op types),
the memory estimate 2.3x (every live value scanned per op) and the recompute pass 1.9x (a sweep of the whole
backward per segment); all are at 0.7-1.4x since.

    python benchmarks/tool_scaling.py --out benchmarks/results/tool_scaling.txt
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import gradc
from gradc.diff import diff_programs
from gradc.io import parse_program, serialize
from gradc.memory import estimate
from gradc.passes import BackwardPass, EagerAccumulationPass, Pipeline, RecomputePass, VerifyPass
from gradc.pir import parse_pir, serialize_pir
from gradc.training import inference_program
from gradc.verification import verify
from gradc.viz.html import program_html

sys.path.insert(0, str(Path(__file__).parent))
from perf_models import deep_mlp  # noqa: E402
from report import report  # noqa: E402


def _compiled(layers: int):
    net = deep_mlp(layers)
    forward = net.program.clone()
    gradc.append_backward(net.program, net.loss)
    return net, forward


def _first_run(layers: int):
    net = deep_mlp(layers)
    startup = gradc.minimize(net.program, net.loss, "adam", lr=0.01)
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(net.startup, scope=scope)
    executor.run(startup, scope=scope)
    feed = {"x": np.ones((2, 64), np.float32), "label": np.zeros((2, 1), np.int64)}
    return lambda: executor.run(net.program, feed, [net.loss], scope)


def _last_activation(program) -> str:
    return [op for op in program.global_block.ops if op.type == "relu"][-1].output("Out")[0]


# name -> setup(layers) returning the call to time (built fresh per round: passes change their program)
STEPS = {
    "load (binary)": lambda n: (lambda data: lambda: parse_program(data, "pb"))(serialize(_compiled(n)[0].program)),
    "verify pass + backward": lambda n: (lambda p: lambda: Pipeline([VerifyPass(), BackwardPass()])(p))(
        deep_mlp(n).program),
    "gradc.verify (training program)": lambda n: (lambda p: lambda: verify(p))(_compiled(n)[0].program),
    "save (binary)": lambda n: (lambda p: lambda: serialize(p))(_compiled(n)[0].program),
    "Program.clone": lambda n: _compiled(n)[0].program.clone,
    "diff forward vs training": lambda n: (lambda net, fwd: lambda: diff_programs(fwd, net.program))(*_compiled(n)),
    "recompute pass (auto)": lambda n: (lambda p: lambda: Pipeline([RecomputePass()])(p))(_compiled(n)[0].program),
    "eager accumulation pass": lambda n: (lambda p: lambda: Pipeline([EagerAccumulationPass()])(p))(
        _compiled(n)[0].program),
    "memory estimate": lambda n: (lambda p: lambda: estimate(p, 1))(_compiled(n)[0].program),
    "gradc.minimize (adam)": lambda n: (lambda net: lambda: gradc.minimize(net.program, net.loss, "adam"))(
        deep_mlp(n)),
    "PIR save": lambda n: (lambda p: lambda: serialize_pir(p))(_compiled(n)[0].program),
    "PIR load": lambda n: (lambda data: lambda: parse_pir(data))(serialize_pir(_compiled(n)[0].program)),
    "inference_program": lambda n: (lambda p: lambda: inference_program(p, ["x"], [_last_activation(p)]))(
        _compiled(n)[0].program),
    "executor: first run (planning)": _first_run,
    "viewer page": lambda n: (lambda p: lambda: program_html(p, "x"))(_compiled(n)[0].program),
}


def per_layer(step, layers: int, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        call = STEPS[step](layers)
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) / layers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=500, help="N: the smaller program (4N the larger)")
    parser.add_argument("--rounds", type=int, default=3, help="the median of this many rounds")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    small, large = args.layers, 4 * args.layers
    lines = [f"# deep MLP, {small} and {large} layers; µs per layer, the median of {args.rounds} rounds", "",
             f"| step | {small} layers | {large} layers | ratio | |", "|---|---|---|---|---|"]
    for step in STEPS:
        a, b = per_layer(step, small, args.rounds), per_layer(step, large, args.rounds)
        lines.append(f"| {step} | {a * 1e6:.0f} | {b * 1e6:.0f} | {b / a:.2f} | {'grows' if b / a > 1.5 else ''} |")
        print(lines[-1], flush=True)
    report(lines, args.out)


if __name__ == "__main__":
    main()
