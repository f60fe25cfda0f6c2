"""Paddle 3.3.1's legacy second-derivative ops of unary math that gradc's week-39 set lacked, as
`paddle.static.gradients` of a gradient writes them (legacy static mode, FLAGS_enable_pir_api=0):
double_<act>.pb.gz, float64 sum(v * grad_x sum(w * act(x))) (x, w, v fed), and double_<act>_paddle.pb.gz, Paddle's
gradients of it to x and w (sqrt_grad_grad, rsqrt_grad_grad, leaky_relu_grad_grad, abs_double_grad);
double.npz: the feeds (x positive for sqrt and rsqrt) and Paddle's gradients.

    cd tools && FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python paddle_double_grad_ops.py \
        ../tests/data/paddle/double_grad_ops
"""

import gzip
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_programs import without_callstacks

RNG = np.random.default_rng(46)
DOUBLE = {"sqrt": lambda x: paddle.sqrt(x), "rsqrt": lambda x: paddle.rsqrt(x),   # looked up late: install()
          "leaky_relu": lambda x: F.leaky_relu(x, 0.1), "abs": lambda x: paddle.abs(x)}    # rebinds them
POSITIVE = ("sqrt", "rsqrt")


def write_gz(path: Path, data: bytes) -> None:
    path.with_name(path.name + ".gz").write_bytes(gzip.compress(data, mtime=0))


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    exe = paddle.static.Executor(paddle.CPUPlace())
    x = RNG.uniform(0.3, 1.5, (3, 4)) * RNG.choice([-1, 1], (3, 4))
    w, v = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    results = {"x": x, "w": w, "v": v}
    for name, act in DOUBLE.items():
        main_program = paddle.static.Program()
        feed = {"x": np.abs(x) if name in POSITIVE else x, "w": w, "v": v}
        with paddle.static.program_guard(main_program, paddle.static.Program()):
            xv, wv, vv = (paddle.static.data(n, [3, 4], "float64") for n in ("x", "w", "v"))
            xv.stop_gradient = wv.stop_gradient = False
            (grad,) = paddle.static.gradients(paddle.sum(act(xv) * wv), xv)
            loss = paddle.sum(grad * vv)
            forward = main_program.clone()
            grads = paddle.static.gradients(loss, [xv, wv])
        print(name, [op.type for op in main_program.global_block().ops])
        results[f"{name}_x"], results[f"{name}_w"] = exe.run(main_program, feed=feed, fetch_list=grads)
        write_gz(out / f"double_{name}.pb", without_callstacks(forward))
        write_gz(out / f"double_{name}_paddle.pb", without_callstacks(main_program))
    np.savez(out / "double.npz", **results)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
