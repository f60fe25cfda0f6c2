"""Compile time of the backward pass vs program size: deep MLPs of N fc+relu layers.

gradc's pass is linear (one producer/consumer walk per block); Paddle's append_backward rescans the
block per parameter. With --paddle-python pointing at an interpreter that has paddlepaddle installed,
the same programs are differentiated by Paddle in the same run and the ratio is printed.

    python benchmarks/compile_scaling.py --out benchmarks/results/compile_scaling.txt
    python benchmarks/compile_scaling.py --paddle-python /path/to/venv/bin/python --sizes 100 1000 3000
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import gradc
from gradc.layers import ProgramBuilder

# Runs under the Paddle interpreter: builds the same deep MLP with Paddle's own layers, saves it, and
# times Paddle's legacy append_backward on it. gradc then compiles that very file.
PADDLE_SCRIPT = """
import sys, time
import paddle
paddle.enable_static()
from paddle.base.backward import append_backward
layers, width, path = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
main, startup = paddle.static.Program(), paddle.static.Program()
with paddle.static.program_guard(main, startup):
    hidden = paddle.static.data("x", [-1, width])
    label = paddle.static.data("label", [-1, 1], "int64")
    for _ in range(layers):
        hidden = paddle.static.nn.fc(hidden, width, activation="relu")
    loss = paddle.mean(paddle.nn.functional.cross_entropy(hidden, label))
open(path, "wb").write(main.desc.serialize_to_string())
start = time.perf_counter()
with paddle.static.program_guard(main, startup):
    append_backward(loss)
print(time.perf_counter() - start, loss.name)
"""


WIDTH = 8


def deep_mlp(layers: int, width: int = WIDTH) -> tuple[gradc.Program, str]:
    net = ProgramBuilder()
    hidden = net.data("x", [-1, width])
    label = net.data("label", [-1, 1], "int64")
    for _ in range(layers):
        hidden = net.fc(hidden, width, act="relu")
    return net.program, net.cross_entropy_loss(hidden, label)


def time_gradc(program: gradc.Program, loss: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        copy = program.clone()
        start = time.perf_counter()
        gradc.append_backward(copy, loss)
        best = min(best, time.perf_counter() - start)
    return best


def time_paddle(python: str, layers: int, width: int) -> tuple[float, gradc.Program, str]:
    """Paddle's compile time, and the forward program Paddle built (for gradc to compile too)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "forward.pb"
        env = {**os.environ, "FLAGS_enable_pir_api": "0"}
        result = subprocess.run([python, "-c", PADDLE_SCRIPT, str(layers), str(width), str(path)],
                                capture_output=True, text=True, check=True, env=env)
        seconds, loss = result.stdout.strip().splitlines()[-1].split()
        return float(seconds), gradc.load(path), loss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 1000, 3000, 10000],
                        help="numbers of fc+relu layers (each is 3 forward ops)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--paddle-python", help="a Python with paddlepaddle, to time Paddle's pass alongside")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()

    lines = [f"# backward compile time, gradc {gradc.__version__}, Python {platform.python_version()}, "
             f"{platform.machine()}",
             f"{'layers':>7} {'fwd ops':>8} {'bwd ops':>8} {'gradc s':>9} {'us/op':>7}"
             + (f" {'paddle s':>9} {'paddle/gradc':>13}" if args.paddle_python else "")]
    print(lines[0])
    print(lines[1])
    for layers in args.sizes:
        if args.paddle_python:
            paddle_seconds, program, loss = time_paddle(args.paddle_python, layers, WIDTH)
        else:
            program, loss = deep_mlp(layers)
        forward_ops = program.num_ops()
        seconds = time_gradc(program, loss, args.repeats)
        compiled = program.clone()
        gradc.append_backward(compiled, loss)
        row = (f"{layers:>7} {forward_ops:>8} {compiled.num_ops() - forward_ops:>8} {seconds:>9.4f} "
               f"{1e6 * seconds / forward_ops:>7.1f}")
        if args.paddle_python:
            row += f" {paddle_seconds:>9.3f} {paddle_seconds / seconds:>13.1f}"
        print(row, flush=True)
        lines.append(row)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
