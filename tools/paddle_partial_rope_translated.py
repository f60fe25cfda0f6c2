"""PIR program of Paddle 3.3.1's GPU-only fused_partial_rope and its grad op, written as
tools/paddle_gpu_only_translated.py writes its cases (legacy ops put into a ProgramDesc, named by Paddle's
translator; feeds drawn by its _feed) into tests/data/paddle/pir_gpu_only/partial_rope/. tests/test_partial_rope.py
runs it against the CUDA kernel's formula. Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_partial_rope_translated.py
"""

from __future__ import annotations

import sys
import warnings

import paddle
import paddle_gpu_only_translated as translated

F32 = translated.F32
X, TABLE = [2, 3, 2, 10], [1, 3, 1, 6]   # heads of 10: 4 passed through, 6 turned


def _partial_rope() -> dict:
    """fused_partial_rope of x and its grad op at a fed dout."""
    feeds = {"x": (X, F32), "cos": (TABLE, F32), "sin": (TABLE, F32), "dout": (X, F32)}
    tables = {"cos": ["cos"], "sin": ["sin"]}
    return {"feeds": feeds, "ops": [
        ("fused_partial_rope", {"x": ["x"], **tables}, {"out": ("out", X)}, {}),
        ("fused_partial_rope_grad", {**tables, "out@GRAD": ["dout"]}, {"x@GRAD": ("x@GRAD", X)}, {})]}


CASES = {"partial_rope": _partial_rope()}
SEEDS = {"partial_rope": 540}

if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    translated.CASES.update(CASES)
    for case in CASES:
        print(f"{case}: {translated.write(case, SEEDS[case])}")
    sys.exit(0)
