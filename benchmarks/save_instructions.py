"""One save of the compiled deep MLP (issue 13's save row: N=3000 fc+relu layers, loaded, verified and compiled as
perf_gradc.py's pipeline does) between markers, for callgrind:

    PYTHONHASHSEED=0 OPENBLAS_NUM_THREADS=1 PYTHONPATH=src setarch -R valgrind --tool=callgrind \\
        --collect-atstart=no --toggle-collect=sys_call_tracing --callgrind-out-file=/tmp/save.out \\
        .venv/bin/python benchmarks/save_instructions.py --layers 300
    callgrind_annotate /tmp/save.out | head

A warm-up save first (lazy imports), then the measured one, as backward_instructions.py counts a backward.
``--protobuf`` measures protobuf's SerializeToString of the same bytes (parsed into its message) instead, the
row's denominator counted the same way.
``--profile`` prints cProfile's view instead; ``--repeat K`` times K saves and K of protobuf's serialisations of
the same bytes, in turns (CPU milliseconds, min and median, and the median of the rounds' ratios).
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import gc
import pstats
import statistics
import sys
import tempfile
import time
from pathlib import Path

import gradc
from gradc.io import parse_program, serialize
from gradc.passes import BackwardPass, Pipeline, VerifyPass

sys.path.insert(0, str(Path(__file__).parent))
from perf_models import deep_mlp  # noqa: E402


def compiled_mlp(layers: int) -> gradc.Program:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mlp.pb"
        gradc.save(deep_mlp(layers).program, path)
        program = parse_program(path.read_bytes(), "pb", str(path))
    Pipeline([VerifyPass(), BackwardPass()])(program)
    return program


def measured_save(program: gradc.Program) -> None:
    """Run through sys.call_tracing, which callgrind's --toggle-collect can name (see backward_instructions.py)."""
    sys.call_tracing(serialize, (program, "pb"))


def measured_serialisation(message) -> None:
    """protobuf's SerializeToString of the same program, between the same markers."""
    sys.call_tracing(functools.partial(message.SerializeToString, deterministic=True), ())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=3000)
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions of the measured one")
    parser.add_argument("--protobuf", action="store_true", help="measure protobuf's SerializeToString instead")
    parser.add_argument("--repeat", type=int, default=0, help="time this many saves and serialisations (CPU)")
    args = parser.parse_args()
    program = compiled_mlp(args.layers)
    saved = serialize(program, "pb")   # the warm-up
    if args.repeat:
        from gradc.proto import framework_pb2 as pb
        message = pb.ProgramDesc.FromString(saved)
        saves, serialisations = [], []
        for _ in range(args.repeat):
            for times, action in ((saves, lambda: serialize(program, "pb")),
                                  (serialisations, lambda: message.SerializeToString(deterministic=True))):
                gc.collect()
                start = time.process_time()
                action()
                times.append(time.process_time() - start)
        ratio = statistics.median(a / b for a, b in zip(saves, serialisations))
        print(f"save min {min(saves) * 1e3:.1f} ms, median {statistics.median(saves) * 1e3:.1f} ms; "
              f"SerializeToString min {min(serialisations) * 1e3:.1f} ms, median "
              f"{statistics.median(serialisations) * 1e3:.1f} ms; ratio {ratio:.2f}x")
        return
    gc.collect()
    if args.protobuf:
        from gradc.proto import framework_pb2 as pb
        message = pb.ProgramDesc.FromString(saved)
        message.SerializeToString(deterministic=True)   # its warm-up
        gc.collect()
        measured_serialisation(message)
    elif args.profile:
        profiler = cProfile.Profile()
        profiler.runcall(measured_save, program)
        pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
    else:
        measured_save(program)


if __name__ == "__main__":
    main()
