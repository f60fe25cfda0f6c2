"""Reading and writing Paddle 3's PIR JSON (what Paddle 3 saves by default) against the binary ProgramDesc and
against Python's own json module: the training program of perf.py's deep MLP (N fc+relu layers) written by gradc
as PIR JSON, then loaded and saved again; CPU time, median of the rounds, each step interleaved in one process.

    python benchmarks/pir_io.py --layers 3000 --rounds 7 --out benchmarks/results/pir_io.txt
"""

from __future__ import annotations

import gc
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import gradc
from gradc.io import parse_program, serialize

sys.path.insert(0, str(Path(__file__).parent))
from perf_models import deep_mlp  # noqa: E402
from report import mlp_arguments, report  # noqa: E402


def cpu_time(step) -> float:
    start = time.process_time()
    step()
    return time.process_time() - start


def main() -> None:
    args = mlp_arguments(__doc__)
    net = deep_mlp(args.layers)
    gradc.append_backward(net.program, net.loss)
    binary, pir = serialize(net.program, "pb"), serialize(net.program, "pir")
    document = json.loads(pir)
    steps = {
        "PIR JSON load": lambda: parse_program(pir, "pir"),
        "PIR JSON save": lambda: serialize(net.program, "pir"),
        "json.loads of the same JSON": lambda: json.loads(pir),
        "json.dumps of the same document": lambda: json.dumps(document, sort_keys=True, separators=(",", ":")),
        "binary load": lambda: parse_program(binary, "pb"),
        "binary save": lambda: serialize(net.program, "pb"),
    }
    times: dict[str, list[float]] = {name: [] for name in steps}
    with_gc = gc.isenabled()
    gc.disable()   # as gradc's own load and save run (gradc.gcpause): json's steps alike
    try:
        for _ in range(args.rounds):
            for name, step in steps.items():
                times[name].append(cpu_time(step))
    finally:
        if with_gc:
            gc.enable()
    median = {name: statistics.median(values) for name, values in times.items()}
    lines = [f"# the training program of a {args.layers}-layer MLP ({net.program.num_ops()} ops): PIR JSON "
             f"{len(pir) / 1e6:.1f} MB, binary {len(binary) / 1e6:.1f} MB; CPU time, median of {args.rounds} "
             f"(Python {platform.python_version()}, {platform.machine()})"]
    lines += [f"{name:32s} {1e3 * seconds:8.1f} ms" for name, seconds in median.items()]
    for label, ours, peer in (("PIR load / json.loads", "PIR JSON load", "json.loads of the same JSON"),
                              ("PIR save / json.dumps", "PIR JSON save", "json.dumps of the same document")):
        lines.append(f"{label:32s} {median[ours] / median[peer]:8.1f}x")
    report(lines, args.out)


if __name__ == "__main__":
    main()
