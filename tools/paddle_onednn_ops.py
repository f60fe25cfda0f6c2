"""Fixtures for the oneDNN-only legacy ops (tests/data/paddle/onednn_ops/<case>): int8 quantize / dequantize /
requantize, fused_elementwise_div, fused_conv3d, conv2d_transpose_bias and mul on oneDNN (matmul_with_flatten). Each
case (tools/paddle_onednn_cases.py) writes the op into a ProgramDesc with its OpProto's slots and attributes, saves it
(program.pdmodel) and Paddle's translation of it to PIR (program.json: onednn_op.quantize, onednn_op.fused_conv3d,
...), and records the feeds and Paddle's own CPU run of the written program (its oneDNN kernels; 3.3.1's CPU build
has oneDNN) as the expected outputs, int8 / uint8 exactly and bfloat16 as its bits (uint16).

``ptq`` writes tests/data/paddle/onednn_ops/ptq_int8: a small conv net quantized by paddle.static.quantization's
PostTrainingQuantization (abs_max, onnx_format), then optimized by a Predictor with enable_mkldnn and
enable_mkldnn_int8 (enable_save_optim_model): the program Paddle's int8 passes write, with Paddle's run of it and
every quantize op's float input and int8 / uint8 output (fetched by Paddle's executor from the saved program).

Not part of the package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /work/paddle-venv/bin/python tools/paddle_onednn_ops.py [case ...|ptq]
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
import paddle
from paddle.base import core
from paddle_gpu_inference_ops import _paddle_run, legacy_program
from paddle_onednn_cases import CASES

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


def _net():
    """Two Conv2D + relu (a max pool between), flatten and a Linear: what the PTQ quantizes."""
    F = paddle.nn.functional
    x = paddle.static.data("x", [-1, 3, 8, 8], "float32")
    h = F.max_pool2d(F.relu(paddle.nn.Conv2D(3, 8, 3, padding=1)(x)), 2)
    h = paddle.flatten(F.relu(paddle.nn.Conv2D(8, 8, 3, padding=1)(h)), 1)
    return x, paddle.nn.Linear(128, 10)(h)


def _predict(path: Path, feed: np.ndarray, int8: bool, cache: Path | None = None) -> np.ndarray:
    from paddle.inference import Config, create_predictor
    config = Config(f"{path}.pdmodel", f"{path}.pdiparams")
    config.disable_gpu()
    config.enable_mkldnn()
    config.switch_ir_optim(int8)
    if int8:
        config.enable_mkldnn_int8()
        config.set_optim_cache_dir(str(cache))
        config.enable_save_optim_model(True)
    predictor = create_predictor(config)
    predictor.get_input_handle("x").copy_from_cpu(feed)
    predictor.run()
    return predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()


def write_ptq() -> str:
    from paddle.static.quantization import PostTrainingQuantization
    rng = np.random.RandomState(3)
    paddle.seed(3)   # the layers' initial weights
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x, out = _net()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    batches = [rng.uniform(-1, 1, (2, 3, 8, 8)).astype("float32") for _ in range(4)]
    feed = rng.uniform(-1, 1, (2, 3, 8, 8)).astype("float32")
    directory = _fresh("ptq_int8")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paddle.static.save_inference_model(str(tmp / "fp32/model"), [x], [out], exe, program=main)
        ptq = PostTrainingQuantization(
            executor=exe, model_dir=str(tmp / "fp32"), model_filename="model.pdmodel",
            params_filename="model.pdiparams", data_loader=lambda: ({"x": b} for b in batches), batch_nums=4,
            algo="abs_max", onnx_format=True, quantizable_op_type=["conv2d", "matmul_v2", "mul"])
        ptq.quantize()
        ptq.save_quantized_model(str(tmp / "int8"), model_filename="model.pdmodel", params_filename="model.pdiparams")
        predicted = _predict(tmp / "int8/model", feed, True, tmp / "opt")
        unquantized = _predict(tmp / "fp32/model", feed, False)
        shutil.copy(tmp / "opt/_optimized.pdmodel", directory / "model.pdmodel")
        shutil.copy(tmp / "opt/_optimized.pdiparams", directory / "model.pdiparams")
    program, _, fetch_vars = paddle.static.load_inference_model(str(directory / "model"), exe)
    quantizes = [op for op in program.global_block().ops if op.type == "quantize"]
    quantized = [name for op in quantizes for name in (op.input("Input")[0], op.output("Output")[0])]
    values = exe.run(program, feed={"x": feed}, fetch_list=[*fetch_vars, *quantized])
    output = fetch_vars[0].name
    np.savez_compressed(directory / "feed.npz", x=feed)
    np.savez_compressed(directory / "expected.npz", **{output: predicted},
                        **{name: value for name, value in zip(quantized, values[1:])})
    meta = {"case": "ptq_int8", "paddle_version": paddle.__version__, "output": output, "quantized": quantized,
            "ops": [op.type for op in program.global_block().ops],
            "executor_rerun_max_diff": float(np.abs(values[0] - predicted).max()),
            "float32_model_max_diff": float(np.abs(unquantized - predicted).max())}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{meta['ops']} rerun {meta['executor_rerun_max_diff']:.1e} vs float32 {meta['float32_model_max_diff']:.3f}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    paddle.enable_static()
    for index, case in enumerate(CASES):   # the cases named on the command line, or all; seed 700 + place in list
        if not sys.argv[1:] or case in sys.argv[1:]:
            print(f"{case}: {write(case, 700 + index)}")
    if not sys.argv[1:] or "ptq" in sys.argv[1:]:
        print(f"ptq_int8: {write_ptq()}")
