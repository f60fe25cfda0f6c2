"""The MLP training step (issue 13's row: N=100 fc+relu layers, width 64, batch 64) against the hand-written numpy
step of the same math, counted in instructions and timed in turns.

    PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src setarch -R valgrind --tool=callgrind \\
        --collect-atstart=no --toggle-collect=sys_call_tracing --callgrind-out-file=/tmp/step.out \\
        .venv/bin/python benchmarks/step_instructions.py --side gradc
    callgrind_annotate /tmp/step.out | head

``--side gradc`` (or ``numpy``) runs ``--steps`` steps of that side inside ``sys.call_tracing``, after warm-up steps
that build the executor's straight-line code (perf_gradc.WARM_RUNS), as perf_gradc.py's ``step_against_numpy``
times them; the program, its parameters (the startup's, seeded) and the feed are the same in every run, so two runs
of one tree count the same. ``--time R`` instead takes R rounds of ``--steps`` pairs (gradc's step, then numpy's)
and prints each side's min and median and the median pair's ratio; with ``--baseline SRC`` it runs a worker per
tree (this one and the gradc source tree SRC), their rounds in turns, as perf.py's --baseline does.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import gradc

sys.path.insert(0, str(Path(__file__).parent))
from perf_gradc import WARM_RUNS  # noqa: E402
from perf_models import deep_mlp, mlp_layers, mlp_numpy  # noqa: E402


def setup(layers: int) -> tuple:
    """The training program, the run's arguments for gradc's step and numpy's, both warmed up."""
    net = deep_mlp(layers)
    with tempfile.TemporaryDirectory() as folder:
        gradc.save(net.program, str(Path(folder) / "mlp.pb"))
        program = gradc.load(str(Path(folder) / "mlp.pb"))
    pairs = gradc.append_backward(program)
    scope = gradc.Scope()
    gradc.Executor().run(net.startup, scope=scope)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((64, 64), dtype=np.float32), "label": rng.integers(0, 64, (64, 1))}
    executor = gradc.Executor()
    fetch = [net.loss, pairs[0][1]]
    layer_values = [(scope[w], scope[b]) for w, b in mlp_layers(program)]
    for _ in range(WARM_RUNS):
        executor.run(program, feed, fetch, scope)
        mlp_numpy(feed["x"], feed["label"], layer_values)

    def ours() -> None:
        executor.run(program, feed, fetch, scope)

    def theirs() -> None:
        mlp_numpy(feed["x"], feed["label"], layer_values)
    return ours, theirs


def counted(step, steps: int) -> None:
    """``steps`` steps inside sys.call_tracing, the C function callgrind's --toggle-collect names (nothing else
    calls it while no tracer is set)."""
    def run() -> None:
        for _ in range(steps):
            step()
    sys.call_tracing(run, ())


def timed(ours, theirs, steps: int) -> list[tuple[float, float]]:
    """``steps`` pairs, each side's result dropped before the other runs."""
    pairs = []
    for _ in range(steps):
        start = time.perf_counter()
        ours()
        middle = time.perf_counter()
        theirs()
        pairs.append((middle - start, time.perf_counter() - middle))
    return pairs


def summary(pairs: list[tuple[float, float]]) -> str:
    ours, theirs = [o for o, _ in pairs], [t for _, t in pairs]
    ratio = statistics.median(o / t for o, t in pairs)
    return (f"gradc min {min(ours) * 1e3:.3f} median {statistics.median(ours) * 1e3:.3f} ms; numpy min "
            f"{min(theirs) * 1e3:.3f} median {statistics.median(theirs) * 1e3:.3f} ms; median pair's ratio "
            f"{ratio:.4f}; ratio of mins {min(ours) / min(theirs):.4f}")


def worker(layers: int) -> None:
    """Answers each line on stdin (a number of pairs) with one JSON line of the pairs' seconds."""
    ours, theirs = setup(layers)
    for line in sys.stdin:
        print(json.dumps(timed(ours, theirs, int(line))), flush=True)


def alternate(layers: int, rounds: int, steps: int, baseline: str) -> None:
    """A worker for this tree and one for ``baseline``, a round of each in turns (which goes first alternates)."""
    here = str(Path(gradc.__file__).parent.parent)
    trees = {"baseline": baseline, "now": here}
    workers = {name: subprocess.Popen([sys.executable, __file__, "--worker", "--layers", str(layers)],
                                      env={**os.environ, "PYTHONPATH": src}, stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, text=True) for name, src in trees.items()}
    results = {name: [] for name in trees}
    for index in range(rounds):
        for name in (list(trees) if index % 2 == 0 else list(trees)[::-1]):
            workers[name].stdin.write(f"{steps}\n")
            workers[name].stdin.flush()
            results[name].extend(json.loads(workers[name].stdout.readline()))
    for name, process in workers.items():
        process.stdin.close()
        process.wait()
        print(f"{name:8} ({trees[name]}): {summary(results[name])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=100)
    parser.add_argument("--side", choices=("gradc", "numpy"), help="count this side's steps (under callgrind)")
    parser.add_argument("--steps", type=int, default=10, help="steps counted, or pairs a round with --time")
    parser.add_argument("--time", type=int, default=0, metavar="R", help="time R rounds of --steps pairs")
    parser.add_argument("--baseline", help="a gradc source tree whose worker takes turns with this one's")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.layers)
    elif args.baseline:
        alternate(args.layers, args.time or 10, args.steps, args.baseline)
    elif args.time:
        ours, theirs = setup(args.layers)
        print(summary([pair for _ in range(args.time) for pair in timed(ours, theirs, args.steps)]))
    else:
        ours, theirs = setup(args.layers)
        counted(ours if args.side == "gradc" else theirs, args.steps)


if __name__ == "__main__":
    main()
