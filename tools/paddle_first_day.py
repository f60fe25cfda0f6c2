"""Build tests/data/paddle/first_day: the small classifier a new user brings, written with Paddle's own layers the
way Paddle's examples write it, the loss first and the softmax for inference after it (so the last op writes no
scalar), saved as Paddle saves it:

    forward.pb / startup.pb      the legacy main and startup programs (main_program.desc.serialize_to_string())
    forward.json                 the same model built in PIR mode (Paddle 3's default), serialized by Paddle
    model.pdmodel / .pdiparams   paddle.static.save_inference_model (legacy): feeds x, fetches the softmax
    feed.npz                     one training batch: x and its labels y (the inference model takes x only)
    meta.json                    the loss, the softmax and Paddle's loss on feed.npz from its startup values

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_first_day.py tests/data/paddle/first_day
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F

paddle.enable_static()


def classifier():
    x = paddle.static.data("x", [-1, 8], "float32")
    y = paddle.static.data("y", [-1, 1], "int64")
    logits = paddle.nn.Linear(16, 4)(F.relu(paddle.nn.Linear(8, 16)(x)))
    loss = paddle.mean(F.cross_entropy(logits, y))
    return x, loss, F.softmax(logits)


def feed() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    return {"x": rng.standard_normal((4, 8)).astype("float32"), "y": rng.integers(0, 4, (4, 1))}


def build_legacy(out: Path) -> None:
    from paddle_programs import without_callstacks
    paddle.seed(7)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x, loss, prob = classifier()
        executor = paddle.static.Executor(paddle.CPUPlace())
        executor.run(startup)
        (value,) = executor.run(main, feed=feed(), fetch_list=[loss])
        paddle.static.save_inference_model(str(out / "model"), [x], [prob], executor, program=main)
    (out / "forward.pb").write_bytes(without_callstacks(main))
    (out / "startup.pb").write_bytes(without_callstacks(startup))
    np.savez(out / "feed.npz", **feed())
    meta = {"paddle_version": paddle.__version__, "seed": 7, "loss": loss.name, "softmax": prob.name,
            "loss_value": float(value), "ops": [op.type for op in main.global_block().ops]}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def build_pir(out: Path) -> None:
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        classifier()
    paddle.base.core.serialize_pir_program(main, str(out / "forward.json"), True, False, True)


if __name__ == "__main__":
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    if len(sys.argv) > 2 and sys.argv[2] == "--pir":
        build_pir(target)
    else:
        build_legacy(target)   # and the PIR program in a second interpreter: the mode is fixed at start-up
        subprocess.run([sys.executable, __file__, str(target), "--pir"], check=True,
                       env={**os.environ, "FLAGS_enable_pir_api": "1"})
