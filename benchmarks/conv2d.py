"""conv2d forward + backward through gradc's executor vs a straightforward numpy reference.

gradc's kernels copy the input windows once (im2col) and do one matmul per group; the reference
loops over the kernel positions with einsum, the way one first writes a convolution in numpy.
Both run in float32 on the same data and must agree before any time is reported. The matmuls go
through numpy's BLAS, whose threads suffer on a busy machine: the header records the CPU count and
load average, and OPENBLAS_NUM_THREADS=1 gives steadier numbers.

    python benchmarks/conv2d.py --out benchmarks/results/conv2d.txt
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

import gradc
from gradc.backward import append_grad_ops


def gradc_programs(x_shape, w_shape, pad):
    """The forward program (conv2d alone) and the training one (conv2d + conv2d_grad)."""
    program = gradc.Program()
    block = program.global_block
    n, _, h, w = x_shape
    block.create_var("x", list(x_shape))
    block.create_var("w", list(w_shape))
    block.create_var("y", [n, w_shape[0], h + 2 * pad - w_shape[2] + 1, w + 2 * pad - w_shape[3] + 1])
    block.append_op("conv2d", {"Input": ["x"], "Filter": ["w"]}, {"Output": ["y"]}, {"paddings": [pad, pad]})
    train = program.clone()
    append_grad_ops(train, ["y"])
    return program, train


def reference(x, w, dy, pad):
    """y, dx, dw (dy None: y only) by explicit loops over kernel positions, one einsum each."""
    n, (o, _, kh, kw) = x.shape[0], w.shape
    h, wd = x.shape[2] + 2 * pad - kh + 1, x.shape[3] + 2 * pad - kw + 1
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    y = np.zeros((n, o, h, wd), dtype=x.dtype)
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + h, j:j + wd], w[:, :, i, j])
    if dy is None:
        return y, None, None
    dxp, dw = np.zeros_like(xp), np.zeros_like(w)
    for i in range(kh):
        for j in range(kw):
            dxp[:, :, i:i + h, j:j + wd] += np.einsum("nohw,oc->nchw", dy, w[:, :, i, j])
            dw[:, :, i, j] = np.einsum("nohw,nchw->oc", dy, xp[:, :, i:i + h, j:j + wd])
    return y, dxp[:, :, pad:pad + x.shape[2], pad:pad + x.shape[3]], dw


def best_of(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", help="also write the results to this file")
    args = parser.parse_args()

    x_shape, w_shape, pad = (args.batch, 3, 32, 32), (16, 3, 3, 3), 1
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape, dtype=np.float32)
    w = rng.standard_normal(w_shape, dtype=np.float32)
    dy = rng.standard_normal((args.batch, 16, 32, 32), dtype=np.float32)
    forward, train = gradc_programs(x_shape, w_shape, pad)
    executor = gradc.Executor()

    def run_forward():
        return executor.run(forward, {"x": x, "w": w}, ["y"], gradc.Scope())

    def run_train():
        return executor.run(train, {"x": x, "w": w, "y@GRAD": dy}, ["y", "x@GRAD", "w@GRAD"], gradc.Scope())

    for name, ours, ref in zip(("y", "x@GRAD", "w@GRAD"), run_train(), reference(x, w, dy, pad)):
        assert ours.dtype == np.float32, f"{name} is {ours.dtype}"
        np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-3, err_msg=name)

    times = {
        "forward": (best_of(run_forward, args.repeats), best_of(lambda: reference(x, w, None, pad), args.repeats)),
        "forward+backward": (best_of(run_train, args.repeats), best_of(lambda: reference(x, w, dy, pad), args.repeats)),
    }
    lines = [f"# conv2d x{list(x_shape)} w{list(w_shape)} pad {pad}, float32, best of {args.repeats}; "
             f"numpy {np.__version__}, Python {platform.python_version()}, {platform.machine()}, "
             f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}",
             f"{'phase':<17} {'gradc ms':>9} {'reference ms':>13} {'reference/gradc':>16}"]
    for phase, (ours, ref) in times.items():
        lines.append(f"{phase:<17} {1e3 * ours:>9.2f} {1e3 * ref:>13.2f} {ref / ours:>16.2f}")
    print("\n".join(lines))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
