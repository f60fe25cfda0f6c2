"""Paddle 3.3.1's own numbers for weight_quantize, which it runs on CPU (float16 / bfloat16 weights): for each case
a PIR program (x -> pd_op.weight_quantize -> out, scale) built in PIR mode and run by Paddle's executor, written as
tests/data/paddle/pir_gpu_only/<case>/program.json with feed.npz, expected.npz (Paddle's out and scale) and
meta.json. Each case runs in a process of its own: one process quantizing ten weights once aborted in Paddle
("corrupted double-linked list"). tests/test_weight_quant.py checks gradc byte for byte. Not part of the package:
it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_weight_quantize.py
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "pir_gpu_only"
# case: (algo, arch, group_size)
CASES = {"weight_quantize_int8_sm80": ("weight_only_int8", 80, -1),
         "weight_quantize_int8_sm70_group64": ("weight_only_int8", 70, 64),
         "weight_quantize_int4_sm80_group64": ("weight_only_int4", 80, 64),
         "weight_quantize_int4_sm70": ("weight_only_int4", 70, -1),
         "weight_quantize_llm_int8": ("llm.int8", 86, -1)}
SHAPE = [128, 16]


def write(case: str, seed: int) -> str:
    import paddle
    from coverage.pir_build import _with_fetches
    from paddle.base import core
    from paddle.nn.quant import weight_quantize

    algo, arch, group_size = CASES[case]
    paddle.enable_static()
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        x = paddle.static.data("x", SHAPE, "float16")
        out, scale = weight_quantize(x, algo=algo, arch=arch, group_size=group_size)
    program = _with_fetches(main, [(out, "out"), (scale, "scale")])
    rng = np.random.default_rng(seed)
    feed = {"x": rng.standard_normal(SHAPE).astype(np.float16)}
    feed["x"][:, 3] = 0   # a column of zeros: 0 / 0 in the kernel
    values = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed, fetch_list=["out", "scale"])
    directory = OUT / case
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    core.serialize_pir_program(program, str(directory / "program.json"), True, False, True)
    np.savez_compressed(directory / "feed.npz", **feed)
    np.savez_compressed(directory / "expected.npz", out=values[0], scale=values[1])
    meta = {"case": case, "paddle_version": paddle.__version__, "fetches": ["out", "scale"],
            "algo": algo, "arch": arch, "group_size": group_size}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"out {values[0].shape} {values[0].dtype}, scale {values[1].shape} {values[1].dtype}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    if len(sys.argv) > 1:
        print(f"{sys.argv[1]}: {write(sys.argv[1], 400 + list(CASES).index(sys.argv[1]))}")
        sys.exit(0)
    for name in CASES:
        subprocess.run([sys.executable, __file__, name], check=True)
