"""Fixtures for the oneDNN-only legacy ops (tests/data/paddle/onednn_ops/<case>): int8 quantize / dequantize /
requantize, fused_elementwise_div, fused_conv3d, conv2d_transpose_bias and mul on oneDNN (matmul_with_flatten). Each
case (tools/paddle_onednn_cases.py) writes the op into a ProgramDesc with its OpProto's slots and attributes, saves it
(program.pdmodel) and Paddle's translation of it to PIR (program.json: onednn_op.quantize, onednn_op.fused_conv3d,
...), and records the feeds and Paddle's own CPU run of the written program (its oneDNN kernels; 3.3.1's CPU build
has oneDNN) as the expected outputs, int8 / uint8 exactly and bfloat16 as its bits (uint16).

``ptq`` writes tests/data/paddle/onednn_ops/ptq_int8 and ptq_int8_attention (tools/paddle_onednn_ptq.py): small
models quantized by PostTrainingQuantization and optimized by a Predictor with enable_mkldnn_int8, the program
Paddle's int8 passes write, with every op's outputs from Paddle's run of it and its PIR translation.

Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /work/paddle-venv/bin/python tools/paddle_onednn_ops.py [case ...|ptq]
"""

from __future__ import annotations

import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import paddle
from paddle.base import core
from paddle_gpu_inference_ops import _paddle_run, legacy_program
from paddle_onednn_cases import CASES
from paddle_onednn_ptq import CASES as PTQ_CASES
from paddle_onednn_ptq import write_ptq

CONSTANTS = ("pd_op.data", "pd_op.full", "pd_op.full_int_array")   # the translation's feeds and folded operands
OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "onednn_ops"


def _fresh(case: str) -> Path:
    directory = OUT / case
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    return directory


def translated(main, spec: dict, fetches: list[str]):
    """Paddle's translation of the written program to PIR, fetching the legacy fetches: (program, fetched names)."""
    program = paddle.pir.translate_to_pir(main.desc)
    made = [op for op in program.global_block().ops if op.name() not in CONSTANTS]
    values = {}
    for op, (_, _, outs, _) in zip(made, spec["ops"]):
        values |= {out[0]: result for out, result in zip(outs.values(), op.results())}   # outputs in slot order
    with paddle.pir_utils.IrGuard(), paddle.static.program_guard(program):
        for col, name in enumerate(fetches):
            paddle._pir_ops.fetch(values[name], name, col).persistable = True
    return program, fetches


def write(case: str, seed: int) -> str:
    spec = CASES[case]
    main, fetches = legacy_program(spec)
    directory = _fresh(case)
    (directory / "program.pdmodel").write_bytes(main.desc.serialize_to_string())
    if spec.get("plain_pir"):
        off = ("_set_bool_attr", False)
        unmarked = [(t, ins, outs, {**attrs, "use_mkldnn": off}) for t, ins, outs, attrs in spec["ops"]]
        plain = {**spec, "ops": unmarked}
        pir, pir_fetches = translated(legacy_program(plain)[0], plain, fetches)
    else:
        pir, pir_fetches = translated(main, spec, fetches)
    core.serialize_pir_program(pir, str(directory / "program.json"), True, False, True)
    rng = np.random.default_rng(seed)
    feed = {name: spec["draw"](rng, name, *f) if "draw" in spec else rng.standard_normal(f[0]).astype(f[1])
            for name, f in spec["feeds"].items()}
    np.savez_compressed(directory / "feed.npz", **feed)
    expected = _paddle_run(main, feed, spec, fetches)
    np.savez_compressed(directory / "expected.npz", **expected)
    meta = {"case": case, "paddle_version": paddle.__version__, "legacy_ops": [op[0] for op in spec["ops"]],
            "pir_ops": sorted({op.name() for op in pir.global_block().ops} - {"pd_op.fetch", "pd_op.data"}),
            "expected_by": "Paddle's CPU (oneDNN) kernels running the written program",
            "fetches": sorted(expected), "pir_fetches": pir_fetches,
            "dtypes": {name: str(value.dtype) for name, value in expected.items()}}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return " ".join(f"{n}:{v.dtype}" for n, v in expected.items()) + f" {meta['pir_ops']}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for index, case in enumerate(CASES):   # the cases named on the command line, or all; seed 700 + place in list
        if not sys.argv[1:] or case in sys.argv[1:]:
            print(f"{case}: {write(case, 700 + index)}")
    if not sys.argv[1:] or "ptq" in sys.argv[1:]:
        for case in PTQ_CASES:
            print(f"{case}: {write_ptq(case)}")
