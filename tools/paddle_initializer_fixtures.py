"""Startup programs of a Conv2D (3 -> 16 channels, 3x3) with each of paddle.nn.initializer's initializers, as Paddle
3.3.1 writes them in legacy mode (startup.pb) and in PIR mode (startup.json), with the weight Paddle's startup gave
(weight.npy): gradc must run each, to Paddle's values where they are not drawn at random. Not part of the package:
it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_initializer_fixtures.py   (both modes, each in a child process)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from suite_export import in_both_modes

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "initializers"
SHAPE = [16, 3, 3, 3]


def initializers() -> dict:
    from paddle.nn import initializer as init
    return {
        "constant": init.Constant(0.25),
        "assign": init.Assign(np.arange(np.prod(SHAPE), dtype="float32").reshape(SHAPE) / 100),
        "bilinear": init.Bilinear(),
        "dirac": init.Dirac(),
        "uniform": init.Uniform(-0.3, 0.7),
        "normal": init.Normal(0.5, 2.0),
        "truncated_normal": init.TruncatedNormal(0.0, 1.0, -1.0, 2.0),
        "xavier_uniform": init.XavierUniform(),
        "xavier_normal": init.XavierNormal(),
        "kaiming_uniform": init.KaimingUniform(),
        "kaiming_normal": init.KaimingNormal(),
        "orthogonal": init.Orthogonal(gain=2.0),
    }


def build(pir: bool) -> None:
    import paddle
    from paddle.base import core

    paddle.enable_static()
    for name, initializer in initializers().items():
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            x = paddle.static.data("x", [1, 3, 8, 8], "float32")
            paddle.nn.Conv2D(3, SHAPE[0], 3, weight_attr=paddle.ParamAttr(name="w", initializer=initializer),
                             bias_attr=False)(x)
        out = OUT / f"{name}_{'pir' if pir else 'legacy'}"
        out.mkdir(parents=True, exist_ok=True)
        if pir:
            core.serialize_pir_program(startup, str(out / "startup.json"), True, False, True)
        else:
            (out / "startup.pb").write_bytes(startup.desc.serialize_to_string())
        executor = paddle.static.Executor(paddle.CPUPlace())
        with paddle.static.scope_guard(paddle.static.Scope()):
            executor.run(startup)
            np.save(out / "weight.npy", np.array(paddle.static.global_scope().find_var("w").get_tensor()))


if __name__ == "__main__":
    in_both_modes(__file__, build)
