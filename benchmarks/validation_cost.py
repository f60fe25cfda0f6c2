"""What checking untrusted input costs: load + compile + save of a deep MLP (N fc+relu layers, 3N+3 ops) with
gradc's input validation (the structure check at load, each op against its definition at compile) and with
those checks replaced by no-ops, alternating in one process; CPU time, median of the rounds.

    python benchmarks/validation_cost.py --layers 3000 --rounds 7 --out benchmarks/results/validation_cost.txt
"""

from __future__ import annotations

import platform
import statistics
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

import numpy as np

import gradc
import gradc.backward
import gradc.io
from gradc.io import parse_program, serialize
from gradc.layers import ProgramBuilder

sys.path.insert(0, str(Path(__file__).parent))
from report import mlp_arguments, report  # noqa: E402

CHECKS = [(gradc.io, "check_structure"), (gradc.backward, "check_definitions")]


def one_round(data: bytes, loss: str, validate: bool) -> float:
    with ExitStack() as stack:
        if not validate:
            for module, name in CHECKS:
                stack.enter_context(mock.patch.object(module, name, lambda *args, **kwargs: None))
        start = time.process_time()
        program = parse_program(data)
        gradc.append_backward(program, loss)
        serialize(program)
        return time.process_time() - start


def main() -> None:
    args = mlp_arguments(__doc__)
    net = ProgramBuilder()
    hidden = net.data("x", [64, 64])
    for _ in range(args.layers):
        hidden = net.fc(hidden, 64, act="relu")
    loss = net.mean(hidden)
    data = serialize(net.program)
    times = {True: [], False: []}
    for _ in range(args.rounds):
        for validate in (False, True):
            times[validate].append(one_round(data, loss, validate))
    checked, unchecked = statistics.median(times[True]), statistics.median(times[False])
    lines = [f"# load + compile + save, {net.program.num_ops()} forward ops, CPU time, median of {args.rounds} "
             f"(numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()})",
             f"without input validation  {unchecked:.3f} s",
             f"with input validation     {checked:.3f} s",
             f"cost of validation        {100 * (checked / unchecked - 1):+.1f} %"]
    report(lines, args.out)


if __name__ == "__main__":
    main()
