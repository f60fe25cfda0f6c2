"""A Glow-style log-determinant in a loss, as docs/tools.md's generative-model week left it: a [4, 4] parameter w
(an invertible 1x1 convolution's weight) and loss = 0.01 * sum(x @ w) - paddle.linalg.slogdet(w)[1], built with
Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0). Paddle declares slogdeterminant's Out with w's
shape ([4, 4]; its kernel writes [2]), so the slice and the loss are declared [4]; the loss's value is one number.

Written: forward.pb.gz (the program before paddle.static.gradients), paddle.npz (w, the fed x, Paddle's loss and its
gradient of w).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_slogdet_loss.py tests/data/paddle/slogdet_loss
"""

import gzip
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle_legacy_shim
from paddle_programs import without_callstacks


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_program, startup):
        w = paddle.static.create_parameter([4, 4], "float32", name="w")
        x = paddle.static.data("x", [4, 4], "float32")
        loss = paddle.sum(paddle.matmul(x, w)) * 0.01 - paddle.linalg.slogdet(w)[1]
        forward = main_program.clone()
        (grad,) = paddle.static.gradients([loss], [w])
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    w_value = (np.random.default_rng(0).standard_normal((4, 4)) + 3 * np.eye(4)).astype("float32")
    x_value = np.random.default_rng(1).standard_normal((4, 4)).astype("float32")
    paddle.static.global_scope().var("w").get_tensor().set(w_value, paddle.CPUPlace())
    loss_value, grad_value = exe.run(main_program, feed={"x": x_value}, fetch_list=[loss, grad])
    out.mkdir(parents=True, exist_ok=True)
    (out / "forward.pb.gz").write_bytes(gzip.compress(without_callstacks(forward), mtime=0))
    np.savez(out / "paddle.npz", w=w_value, x=x_value, loss=loss_value, grad=grad_value, declared=list(loss.shape))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
