"""A float64 legacy training program whose ops read float attributes (Paddle 3.3.1, legacy static mode): x [8, 6]
(values ~1e-3) -> Linear -> LayerNorm (epsilon 1e-5) -> leaky_relu (0.01) -> scale (0.01, bias 0.001) -> clip
(-0.007, 0.007) -> BatchNorm1D in training (epsilon 1e-5, momentum 0.9) -> Linear(1) -> mean squared error against
y, minimized by Adam(0.01) with its default beta1 0.9, beta2 0.999, epsilon 1e-8, 3 steps. The small values make
each epsilon count (the norms' variances are ~1e-5), and the clip keeps the batch norm from cancelling the layer
norm's scale and shift (their gradients would be rounding noise).

Paddle declares these attributes FLOAT (float32): 1e-5 is stored and read as 9.99999974737875e-06, 0.9 as
0.8999999761581421, and its float64 kernels compute with those values, so the numbers tell which value a kernel
used. tests/test_float_attrs.py holds gradc to them both on Paddle's program and on the same model written by gradc
(the attributes given as the Python numbers above or left to the defaults, its own backward and Adam).

Into tests/data/paddle/float_attrs/: forward.pb (before minimize), train.pb, startup.pb, init.npz (every persistable
after the startup), feeds.npz, losses.npy, final.npz (every persistable after the last step), meta.json.
Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_float_attrs.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_optimizer_fixtures import SEED, run_steps, serialize, stacked

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "float_attrs"
STEPS = 3
LEARNING_RATE = 0.01


def model():
    x = paddle.static.data("x", [8, 6], "float64")
    y = paddle.static.data("y", [8, 1], "float64")
    hidden = F.leaky_relu(paddle.nn.LayerNorm(6)(paddle.nn.Linear(6, 6)(x)))
    hidden = paddle.clip(paddle.scale(hidden, 0.01, 0.001), -0.007, 0.007)
    hidden = paddle.nn.BatchNorm1D(6)(hidden)
    return F.mse_loss(paddle.nn.Linear(6, 1)(hidden), y)


def main() -> None:
    paddle.enable_static()
    paddle.set_default_dtype("float64")
    paddle.seed(SEED)
    program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(program, startup):
        loss = model()
        forward = serialize(program)
        paddle.optimizer.Adam(LEARNING_RATE).minimize(loss)
    rng = np.random.default_rng(SEED)
    feeds = [{"x": rng.standard_normal((8, 6)) * 1e-3, "y": rng.standard_normal((8, 1))} for _ in range(STEPS)]
    init, losses, states, _, _ = run_steps(program, startup, loss.name, feeds, "learning_rate_0")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "forward.pb").write_bytes(forward)
    (OUT / "train.pb").write_bytes(serialize(program))
    (OUT / "startup.pb").write_bytes(serialize(startup))
    np.savez_compressed(OUT / "init.npz", **init)
    np.savez_compressed(OUT / "feeds.npz", **stacked(feeds))
    np.savez_compressed(OUT / "final.npz", **states[-1])
    np.save(OUT / "losses.npy", np.array(losses))
    ops = [op.type for op in program.global_block().ops]
    meta = {"seed": SEED, "paddle_version": paddle.__version__, "steps": STEPS, "loss": loss.name,
            "learning_rate": LEARNING_RATE, "ops_train": ops, "description": __doc__.split("\n\n")[0]}
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"losses {losses}; {len(ops)} ops; persistables {sorted(init)}")


if __name__ == "__main__":
    main()
    sys.exit(0)
