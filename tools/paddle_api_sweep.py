"""List the public callables of Paddle's API modules that no coverage row's code names (tools/coverage/*.py): the
worklist of a sweep such as tools/coverage/pir_sweep.py (docs/pir-sweep.md). A name counts as held when any row file
has it as a word, so an alias a row calls by its other name is listed until a row uses it. Not part of the package:
it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_api_sweep.py [MODULE ...]
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
import warnings
from pathlib import Path

import paddle

ROWS = Path(__file__).resolve().parent / "coverage"
MODULES = ("paddle", "paddle.Tensor", "paddle.incubate", "paddle.incubate.nn", "paddle.incubate.nn.functional",
           "paddle.incubate.autograd", "paddle.nn.quant", "paddle.signal", "paddle.audio.functional",
           "paddle.audio.features", "paddle.text", "paddle.vision.ops", "paddle.distribution", "paddle.compat",
           "paddle.compat.nn", "paddle.compat.nn.functional")


def public_callables(name: str) -> list[str]:
    if name == "paddle.Tensor":
        return [n for n in dir(paddle.Tensor) if not n.startswith("_") and callable(getattr(paddle.Tensor, n, None))]
    module = importlib.import_module(name)
    names = getattr(module, "__all__", [n for n in dir(module) if not n.startswith("_")])
    return [n for n in names if callable(getattr(module, n, None)) and not inspect.ismodule(getattr(module, n))]


def main(modules: list[str]) -> None:
    held = set(re.findall(r"[A-Za-z_]\w*", "\n".join(p.read_text() for p in ROWS.glob("*.py"))))
    for name in modules:
        names = public_callables(name)
        missing = [n for n in names if n not in held]
        print(f"{name}: {len(names)} public callables, {len(missing)} no row names")
        print("   " + " ".join(missing))


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    main(sys.argv[1:] or list(MODULES))
