"""Fixtures of the programs Paddle's oneDNN int8 passes write (tests/data/paddle/onednn_ops/<case>), for
tools/paddle_onednn_ops.py ``ptq``: a small model quantized by paddle.static.quantization's PostTrainingQuantization
(abs_max, onnx_format), then optimized by a Predictor with enable_mkldnn and enable_mkldnn_int8
(enable_save_optim_model). Each case saves the program and parameters the Predictor wrote (model.pdmodel /
model.pdiparams), the feed, the Predictor's output, and every op's outputs as Paddle's executor gives them running
the saved program (int8 / uint8 exactly); and Paddle's translation of the program to PIR (program.json: onednn_op.
fused_conv2d, onednn_op.fc, ...), with Paddle's own run of that translation where it runs.

- ptq_int8: two Conv2D + relu (a max pool between), flatten and a Linear.
- ptq_int8_attention: one attention layer (three Linear, q k^T / 4, softmax, times v, + x, LayerNorm) and a
  Linear + relu + Linear feed-forward: fc and fused_matmul in int8.

Not part of the package: it needs paddlepaddle.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from pathlib import Path

import numpy as np
import paddle
from paddle.base import core
from paddle.base.layer_helper import LayerHelper

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "onednn_ops"
# the oneDNN extras the translator needs on every op that has them, which the int8 passes leave out
# ("Type of attribute: fuse_activation is not pir::StrAttribute"): their values that change nothing
TRANSLATION_DEFAULTS = {
    "fuse_activation": ("_set_str_attr", ""), "fuse_alpha": ("_set_float32_attr", 0.0),
    "fuse_beta": ("_set_float32_attr", 0.0), "fused_output_scale": ("_set_float32_attr", 1.0),
    "fused_reshape2_shape": ("_set_int32s_attr", []), "fused_unsqueeze2_axes": ("_set_int32s_attr", []),
    "use_quantizer": ("_set_bool_attr", False), "scale_x": ("_set_float32_attr", 1.0),
    "scale_y": ("_set_float32_attr", 1.0), "scale_out": ("_set_float32_attr", 1.0),
    "Scale_out": ("_set_float32_attr", 1.0), "Scale_in_eltwise": ("_set_float32_attr", 1.0),
    "force_fp32_output": ("_set_bool_attr", False), "fuse_residual_connection": ("_set_bool_attr", False),
    "scale_in_eltwise": ("Scale_in_eltwise", "_set_float32_attr", 1.0),
    # fused_matmul's, which the translator names in lower case
    **{f"fused_{kind}_{of.lower()}": (f"fused_{kind}_{of}", "_set_int32s_attr", [])
       for kind in ("reshape", "transpose") for of in ("X", "Y", "Out")},
}
PLAIN = ("feed", "fetch", "quantize")   # ops the translator takes without the extras


def _conv_net():
    F = paddle.nn.functional
    x = paddle.static.data("x", [-1, 3, 8, 8], "float32")
    h = F.max_pool2d(F.relu(paddle.nn.Conv2D(3, 8, 3, padding=1)(x)), 2)
    h = paddle.flatten(F.relu(paddle.nn.Conv2D(8, 8, 3, padding=1)(h)), 1)
    return x, paddle.nn.Linear(128, 10)(h)


def _matmul(a, b, trans_y: bool = False):
    """A matmul_v2 op (3.3.1's paddle.matmul builds PIR values only)."""
    helper = LayerHelper("matmul_v2")
    out = helper.create_variable_for_type_inference(a.dtype)
    helper.append_op(type="matmul_v2", inputs={"X": [a], "Y": [b]}, outputs={"Out": [out]},
                     attrs={"trans_x": False, "trans_y": trans_y})
    return out


def _attention_net():
    F = paddle.nn.functional
    x = paddle.static.data("x", [-1, 6, 16], "float32")
    q, k, v = (paddle.nn.Linear(16, 16)(x) for _ in range(3))
    attention = F.softmax(paddle.scale(_matmul(q, k, True), 0.25), axis=-1)
    h = paddle.nn.LayerNorm(16)(_matmul(attention, v) + x)
    return x, paddle.nn.Linear(32, 4)(F.relu(paddle.nn.Linear(16, 32)(h)))


# case -> (network, feed shape, the op types PostTrainingQuantization quantizes, seed)
CASES = {"ptq_int8": (_conv_net, (2, 3, 8, 8), ["conv2d", "matmul_v2", "mul"], 3),
         "ptq_int8_attention": (_attention_net, (2, 6, 16), ["matmul_v2", "mul", "matmul"], 5)}


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


def _translated(program):
    """Paddle's PIR translation of the saved program, each missing extra attribute filled in as the translator
    asks for it; returns (PIR program, the attributes filled in)."""
    filled = set()
    while True:
        try:
            return paddle.pir.translate_to_pir(program.desc), sorted(filled)
        except ValueError as error:
            name = re.search(r"attribute: (\w+) is not", str(error)).group(1)
            *legacy_name, setter, value = TRANSLATION_DEFAULTS[name]
            name = legacy_name[0] if legacy_name else name
            lacking = [op for op in program.global_block().ops if op.type not in PLAIN and not op.has_attr(name)]
            if not lacking:
                raise
            for op in lacking:
                getattr(op.desc, setter)(name, value)
            filled.add(name)


def _pir_run(pir, feed: np.ndarray):
    """Paddle's own run of the translation (its fetch ops), or why it does not run."""
    try:
        with paddle.pir_utils.IrGuard():
            return paddle.static.Executor(paddle.CPUPlace()).run(pir, feed={"x": feed})[0]
    except Exception as error:   # noqa: BLE001 -- the reason goes into meta.json
        return str(error).splitlines()[0][:200]


def write_ptq(case: str) -> str:
    from paddle.static.quantization import PostTrainingQuantization
    build, shape, quantizable, seed = CASES[case]
    rng = np.random.RandomState(seed)
    paddle.seed(seed)   # the layers' initial weights
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x, out = build()
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    batches = [rng.uniform(-1, 1, shape).astype("float32") for _ in range(4)]
    feed = rng.uniform(-1, 1, shape).astype("float32")
    directory = OUT / case
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        paddle.static.save_inference_model(str(tmp / "fp32/model"), [x], [out], exe, program=main)
        ptq = PostTrainingQuantization(
            executor=exe, model_dir=str(tmp / "fp32"), model_filename="model.pdmodel",
            params_filename="model.pdiparams", data_loader=lambda: ({"x": b} for b in batches), batch_nums=4,
            algo="abs_max", onnx_format=True, quantizable_op_type=quantizable)
        ptq.quantize()
        ptq.save_quantized_model(str(tmp / "int8"), model_filename="model.pdmodel", params_filename="model.pdiparams")
        predicted = _predict(tmp / "int8/model", feed, True, tmp / "opt")
        unquantized = _predict(tmp / "fp32/model", feed, False)
        shutil.copy(tmp / "opt/_optimized.pdmodel", directory / "model.pdmodel")
        shutil.copy(tmp / "opt/_optimized.pdiparams", directory / "model.pdiparams")
    program, _, fetch_vars = paddle.static.load_inference_model(str(directory / "model"), exe)
    ops = [op for op in program.global_block().ops if op.type not in ("feed", "fetch")]
    written = list(dict.fromkeys(name for op in ops for slot in op.output_names for name in op.output(slot)))
    values = exe.run(program, feed={"x": feed}, fetch_list=[*fetch_vars, *written])
    output = fetch_vars[0].name
    repeats = [exe.run(program, feed={"x": feed}, fetch_list=fetch_vars)[0] for _ in range(3)]
    pir, filled = _translated(program)
    core.serialize_pir_program(pir, str(directory / "program.json"), True, False, True)
    pir_run = _pir_run(pir, feed)
    np.savez_compressed(directory / "feed.npz", x=feed)
    # every op's outputs as the executor's rerun gives them, and the model's output as the Predictor gave it
    fetched = {name: value for name, value in zip(written, values[1:]) if value is not None}
    np.savez_compressed(directory / "expected.npz", **fetched, **{f"{output}@predictor": predicted})
    meta = {"case": case, "paddle_version": paddle.__version__, "output": output, "written": sorted(fetched),
            "unwritten": [name for name in written if name not in fetched],   # (oneDNN's layer_norm: Mean, Variance)
            "ops": [op.type for op in program.global_block().ops],
            "pir_ops": sorted({op.name() for op in pir.global_block().ops}),
            "translation_needed": filled,
            "executor_rerun_max_diff": float(np.abs(values[0] - predicted).max()),
            "executor_three_reruns_max_spread": float(np.nanmax(np.ptp(np.stack(repeats), axis=0))),
            "pir_run_max_diff": pir_run if isinstance(pir_run, str) else float(np.abs(pir_run - predicted).max()),
            "float32_model_max_diff": float(np.abs(unquantized - predicted).max()),
            "float32_model_max_abs": float(np.abs(unquantized).max())}
    (directory / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return (f"{meta['ops']} rerun {meta['executor_rerun_max_diff']:.1e} PIR {meta['pir_run_max_diff']} "
            f"vs float32 {meta['float32_model_max_diff']:.3f}")
