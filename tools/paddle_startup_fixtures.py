"""Startup programs of Paddle's own layers with a TruncatedNormal initializer (ViT- and BERT-style models use one),
as Paddle 3.3.1 writes them in legacy mode (startup.pb) and in PIR mode (startup.json): gradc must run both. Not
part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_startup_fixtures.py           (writes both, each in a child process)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "startup_truncated"
INIT = {"mean": 0.5, "std": 1.0, "a": -0.5, "b": 1.5}   # Paddle's a and b bound the values themselves


def build(pir: bool) -> None:
    import paddle
    from paddle.base import core

    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [2, 64], "float32")
        layer = paddle.nn.Linear(64, 256, weight_attr=paddle.nn.initializer.TruncatedNormal(**INIT))
        layer(x)
    if pir:
        core.serialize_pir_program(startup, str(OUT / "startup.json"), True, False, True)
    else:
        (OUT / "startup.pb").write_bytes(startup.desc.serialize_to_string())
        meta = {"paddle_version": paddle.__version__, "initializer": INIT, "weight": layer.weight.name,
                "shape": [64, 256], "bias": layer.bias.name}
        (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] == ["--child"]:
        build(pir=os.environ["FLAGS_enable_pir_api"] == "1")
    else:
        OUT.mkdir(parents=True, exist_ok=True)
        for flag in ("0", "1"):
            subprocess.run([sys.executable, __file__, "--child"], env={**os.environ, "FLAGS_enable_pir_api": flag},
                           check=True)
