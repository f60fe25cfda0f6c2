"""Peak memory of forward + backward of a while loop vs its number of iterations.

The loop h = tanh(h @ W + b) keeps one step scope per iteration (its temporaries and the value the
loop var had when the iteration started) for while_grad, which replays the iterations in reverse and
drops each step scope once replayed. So the peak should grow linearly: a constant number of bytes
per iteration, about the size of the per-iteration temporaries.

    python benchmarks/while_memory.py --out benchmarks/results/while_memory.txt
"""

from __future__ import annotations

import argparse
import sys
import tracemalloc
from pathlib import Path

import numpy as np

import gradc

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from programs import Net  # noqa: E402

BATCH, WIDTH = 32, 64


def loop_program(iterations: int) -> tuple[gradc.Program, str]:
    net = Net("float32")
    x, w, b = net.data("x", [BATCH, WIDTH]), net.param("w", [WIDTH, WIDTH]), net.param("b", [WIDTH])
    i, n = net.constant(0), net.constant(iterations)
    h = net.copy(x)
    net.while_loop(lambda i, h: net.less_than(i, n),
                   lambda i, h: [net.increment(i), net.tanh(net.elementwise_add(net.matmul(h, w), b))], [i, h])
    loss = net.mean(h)
    gradc.append_backward(net.program, loss)
    return net.program, loss


def peak_bytes(iterations: int) -> int:
    program, loss = loop_program(iterations)
    rng = np.random.default_rng(0)
    feed = {"x": rng.standard_normal((BATCH, WIDTH)).astype(np.float32)}
    executor = gradc.Executor()

    def run():
        scope = gradc.Scope()
        scope["w"] = (rng.standard_normal((WIDTH, WIDTH)) / np.sqrt(WIDTH)).astype(np.float32)
        scope["b"] = np.zeros(WIDTH, np.float32)
        return executor.run(program, feed, [loss, "w@GRAD", "x@GRAD"], scope)

    run()   # plans and kernels are prepared once; measure a steady-state run
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, nargs="+", default=[25, 50, 100, 200])
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args()

    tensor = BATCH * WIDTH * 4
    lines = [f"while loop h = tanh(h @ W + b), h float32 [{BATCH}, {WIDTH}] ({tensor} bytes); "
             "peak traced memory of one forward + backward run", "",
             f"{'iterations':>10} {'peak bytes':>12} {'bytes/iter':>11} {'slope since previous':>21}"]
    previous = None
    for n in args.iterations:
        peak = peak_bytes(n)
        slope = "" if previous is None else f"{(peak - previous[1]) / (n - previous[0]):.0f}"
        lines.append(f"{n:>10} {peak:>12} {peak / n:>11.0f} {slope:>21}")
        previous = (n, peak)
    lines += ["", f"a constant slope is linear growth; one tensor is {tensor} bytes"]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
