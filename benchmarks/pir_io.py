"""Reading and writing Paddle 3's PIR JSON (what Paddle 3 saves by default) against the binary ProgramDesc and
against Python's own json module: a deep MLP (N fc+relu layers) written by gradc as PIR JSON, then loaded and
saved again; CPU time, median of the rounds, each format's steps interleaved in one process.

    python benchmarks/pir_io.py --layers 3000 --rounds 7 --out benchmarks/results/pir_io.txt
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import time
from pathlib import Path

import gradc
from gradc.io import parse_program, serialize
from gradc.layers import ProgramBuilder


def cpu_time(step) -> float:
    start = time.process_time()
    step()
    return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    net = ProgramBuilder()
    hidden = net.data("x", [-1, 64])
    for _ in range(args.layers):
        hidden = net.fc(hidden, 64, act="relu")
    gradc.append_backward(net.program, net.mean(hidden))
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
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
