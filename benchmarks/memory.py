"""Peak memory and step time of training programs with and without the memory passes, in one run:
recompute (gradc.passes.recompute) on a 100-layer MLP and a ResNet-style net, eager accumulation
(gradc.passes.accumulate) on a var read by 50 ops.

Peak is tracemalloc's peak during one forward + backward step (parameters live in the scope before it
starts and are not counted); "activations" is that peak less the parameter gradients, which the step
fetches and so holds at its end. Time is the best of --repeats steps, with one BLAS thread.

    python benchmarks/memory.py --out benchmarks/results/memory.txt
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import tracemalloc
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")   # one BLAS thread: steadier times on a shared machine
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np  # noqa: E402

import gradc  # noqa: E402
from gradc.passes import EagerAccumulationPass, RecomputePass  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from deep_nets import fan_out, initial_values, mlp, resnet  # noqa: E402


def measure(program, feed, fetch, values, repeats: int) -> tuple[int, float, list]:
    """(peak bytes, best step seconds, fetched values) of one training step."""
    executor, scope = gradc.Executor(), gradc.Scope()
    for name, value in values.items():
        scope[name] = value.copy()
    results = executor.run(program, feed, fetch, scope)   # plans are made once: time steady-state steps
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        executor.run(program, feed, fetch, scope)
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    executor.run(program, feed, fetch, scope)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, best, results


def compare(title: str, net, loss, feed, transform, repeats: int) -> list[str]:
    pairs = gradc.append_backward(net.program, loss)
    fetch = [loss] + [grad for _, grad in pairs]
    values = initial_values(net)
    grads = sum(values[param].nbytes for param, _ in pairs)
    changed = net.program.clone()
    summary = transform(changed)
    before, after = (measure(p, feed, fetch, values, repeats) for p in (net.program, changed))
    same = all(np.array_equal(a, b) for a, b in zip(before[2], after[2]))
    mib = 2 ** 20
    return [f"{title}: {summary}",
            f"  {'':12} {'peak MiB':>9} {'activations MiB':>16} {'step s':>8}",
            *(f"  {name:12} {peak / mib:9.2f} {(peak - grads) / mib:16.2f} {seconds:8.3f}"
              for name, (peak, seconds, _) in (("without", before), ("with", after))),
            f"  peak {before[0] / after[0]:.1f}x lower, activations {(before[0] - grads) / (after[0] - grads):.1f}x "
            f"lower, step time {after[1] / before[1] - 1:+.0%}; gradients the same bit for bit: {same}", ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path, help="also write the report to this file")
    args = parser.parse_args()
    lines = compare("100-layer MLP (fc 128 + relu, batch 512, float32), --recompute auto",
                    *mlp(layers=100, width=128, batch=512), lambda p: RecomputePass("auto")(p), args.repeats)
    lines += compare("ResNet-style net (stem + 8 residual blocks of conv 3x3 + batch_norm, 16 channels, "
                     "16x16 images, batch 16), --recompute auto",
                     *resnet(blocks=8, channels=16, size=16, batch=16), lambda p: RecomputePass("auto")(p),
                     args.repeats)
    lines += compare("one var read by 50 ops (h = tanh(x W) [256, 256], 50 readers h v_i), --accumulate eager",
                     *fan_out(readers=50, width=256, batch=256), lambda p: EagerAccumulationPass()(p), args.repeats)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
