"""One append_backward of the deep MLP (issue 13's row, N=1000 fc+relu layers) between markers, for callgrind:

    PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src setarch -R valgrind --tool=callgrind \\
        --collect-atstart=no --toggle-collect=sys_call_tracing --callgrind-out-file=/tmp/bwd.out \\
        .venv/bin/python benchmarks/backward_instructions.py
    callgrind_annotate /tmp/bwd.out | head

A warm-up backward first (lazy imports, the registry's caches), then the measured one on a fresh copy of the same
loaded forward program, as perf_gradc.py's ``backward`` row times it. ``--profile`` prints cProfile's view instead;
``--repeat K`` times K backwards (wall seconds, min and median) for A/B runs in alternating processes.
``--program PATH --loss NAME`` differentiates a saved forward program instead: the one perf_paddle.py saves for
perf.py's first row is Paddle's N=1000 MLP (its loss mean_1.tmp_0), whose ops carry Paddle's extra attributes.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

import gradc

sys.path.insert(0, str(Path(__file__).parent))
from perf_models import deep_mlp  # noqa: E402


def measured_backward(program: gradc.Program, loss: str) -> None:
    """Run through sys.call_tracing, a C function (sys_call_tracing) that callgrind's --toggle-collect can name and
    that nothing else calls (no tracer is set, so it only calls): only what runs inside it is counted."""
    sys.call_tracing(gradc.append_backward, (program, loss))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=1000)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions of the measured one")
    parser.add_argument("--repeat", type=int, default=0, help="time this many backwards (wall seconds)")
    parser.add_argument("--program", help="a saved forward program to differentiate instead of the deep MLP")
    parser.add_argument("--loss", help="the loss of --program")
    args = parser.parse_args()
    if (args.program is None) != (args.loss is None):
        parser.error("--program and --loss go together")
    if args.program is not None:
        forward, loss = gradc.load(args.program), args.loss
    else:
        net = deep_mlp(args.layers)
        with tempfile.TemporaryDirectory() as folder:
            path = str(Path(folder) / "mlp.pb")
            gradc.save(net.program, path)
            forward = gradc.load(path)
        loss = net.loss
    gradc.append_backward(forward.clone(), loss)   # the warm-up
    if args.repeat:
        seconds = []
        for _ in range(args.repeat):
            copy = forward.clone()
            gc.collect()
            start = time.perf_counter()
            measured_backward(copy, loss)
            seconds.append(time.perf_counter() - start)
        print(f"min {min(seconds) * 1e3:.1f} ms  median {statistics.median(seconds) * 1e3:.1f} ms")
        return
    copy = forward.clone()
    gc.collect()
    if args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(measured_backward, copy, loss)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(40)
    else:
        measured_backward(copy, loss)


if __name__ == "__main__":
    main()
