"""Export small networks as Paddle's and PaddleSlim's dygraph compression tools leave them, with their initial
weights (seed 0), for tools/real_models.py to check gradc against Paddle on. Needs paddlepaddle 3.3.1 and a
PaddleSlim checkout (its paddleslim/) with the packages its modules import (pyzmq, pyyaml, tqdm, matplotlib, scipy,
...):

    /path/to/paddle/python tools/paddleslim_export.py PADDLESLIM_DIR OUT_DIR [TOOL:NET ...]

TOOL is one of TOOLS (paddle.quantization's QAT, its convert, its PTQ; PaddleSlim's dygraph QAT with its
save_quantized_model, paddle.quantization's QAT with PaddleSlim's channel-wise and PACT quanters, PaddleSlim's
L1NormFilterPruner; quant_post_static, PaddleSlim's post-training quantization of a saved static inference model,
which it loads and saves as a legacy program: run that one with FLAGS_enable_pir_api=0), NET one of NETS. QAT and
PTQ models see CALIBRATION batches in training mode first (the fake quanters' moving averages, the observers' abs
max), then are saved by paddle.jit.save (PIR: inference.json + inference.pdiparams) in a process of their own into
OUT_DIR/<tool>__<net>/. Without entries, SMALLEST. One line per entry: OK, or FAIL and why.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
from suite_export import main

# MobileNetV2 at 64 x 64: a batch of one still has 2 x 2 positions at its last batch norms (one, at 32, has no spread)
NETS = {"convnet": [3, 16, 16], "mlp": [16], "transformer": [6, 16], "mobilenet": [3, 64, 64]}
TOOLS = ["qat", "qat_convert", "ptq", "slim_qat", "slim_quanters", "prune", "quant_post_static"]
SMALLEST = [f"{tool}:{net}" for tool in TOOLS for net in NETS
            if tool != "prune" or net in ("convnet", "mobilenet")]   # the pruner's filters are convolutions
CALIBRATION = 3
# PaddleSlim's QAT save, its quanters, its pruner's tracing and quant_post_static build legacy static programs
# (LayerHelper's append_op, Operation.input_arg_names): under PIR they fail, so these save legacy programs (.pdmodel)
LEGACY = ("slim_qat", "slim_quanters", "prune", "quant_post_static")


def _net(name: str):
    import paddle
    from paddle import nn
    if name == "convnet":
        return nn.Sequential(nn.Conv2D(3, 8, 3, padding=1, bias_attr=False), nn.BatchNorm2D(8), nn.ReLU(),
                             nn.MaxPool2D(2), nn.Conv2D(8, 8, 3, padding=1, groups=8), nn.ReLU(),
                             nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(8, 10))
    if name == "mlp":
        return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 10))
    if name == "transformer":
        return nn.Sequential(nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0), nn.Flatten(), nn.Linear(96, 10))
    return paddle.vision.models.mobilenet_v2(scale=0.25, num_classes=10)


def _calibrate(model, shape: list[int], training: bool = True) -> None:
    import paddle
    model.train(training)
    for _ in range(CALIBRATION):
        model(paddle.rand([2, *shape]) * 2 - 1)
    model.eval()


def _quantized(tool: str, model, shape: list[int]):
    """The model as ``tool`` leaves it for saving."""
    from paddle.quantization import PTQ, QAT, QuantConfig
    from paddle.quantization.observers import AbsmaxObserver
    from paddle.quantization.quanters import FakeQuanterWithAbsMaxObserver
    if tool in ("qat", "qat_convert"):
        from paddle.quantization.quanters.abs_max import FakeQuanterWithAbsMaxObserverLayer as Layer
        # 3.3.1's convert makes a LinearQuanter of the quanter's zero points, which this quanter gives as None, and
        # LinearQuanter's default for None is None again (paddle.to_tensor(None) fails): zeros as the quanter's
        Layer.zero_points = lambda self: self._scale * 0
        quanter = FakeQuanterWithAbsMaxObserver(moving_rate=0.9)
        qat = QAT(QuantConfig(activation=quanter, weight=quanter))
        model = qat.quantize(model, inplace=True)
        _calibrate(model, shape)
        return qat.convert(model, inplace=True) if tool == "qat_convert" else model
    if tool == "slim_quanters":
        from paddleslim.quant.quanters import FakeQuanterChannelWiseAbsMaxObserver, PACTQuanter
        config = QuantConfig(activation=PACTQuanter(quanter=FakeQuanterWithAbsMaxObserver()),
                             weight=FakeQuanterChannelWiseAbsMaxObserver())
        model = QAT(config).quantize(model, inplace=True)
        _calibrate(model, shape)
        return model
    ptq = PTQ(QuantConfig(activation=AbsmaxObserver(), weight=AbsmaxObserver()))
    model.eval()   # PTQ refuses a model in training mode; its observers see the batches in eval mode
    model = ptq.quantize(model, inplace=True)
    _calibrate(model, shape, training=False)
    return ptq.convert(model, inplace=True)


def _export(out_dir: Path, entry: str) -> str:
    tool, net = entry.split(":")
    if tool in LEGACY:
        os.environ["FLAGS_enable_pir_api"] = "0"   # read when paddle is imported
    import paddle
    paddle.seed(0)
    shape, model = NETS[net], _net(net)
    # 3.3.1's LinearQuanter makes a persistable of its input's shape under PIR, which a free batch dim makes -1
    batch = 1 if tool in ("qat_convert", "ptq") else None
    spec = [paddle.static.InputSpec([batch, *shape], "float32", "x")]
    out = out_dir / f"{tool}__{net}"
    if tool == "quant_post_static":
        return _post_static(model, spec, out)
    if tool == "slim_qat":
        from paddleslim import QAT as SlimQAT
        quanter = SlimQAT({"weight_quantize_type": "channel_wise_abs_max"})
        model = quanter.quantize(model)
        _calibrate(model, shape)
        _legacy_static()
        quanter.save_quantized_model(model, str(out / "inference"), input_spec=spec)
        return "OK"
    if tool == "prune":
        from paddle.base.dygraph import base
        from paddleslim.dygraph import L1NormFilterPruner
        base._to_static_mode_guard_ = base.to_static_mode_guard   # PaddleSlim's name for it before Paddle 3
        pruner = L1NormFilterPruner(model, [1, *shape])
        convs = [p.name for p in model.parameters() if len(p.shape) == 4 and p.shape[1] > 1][:2]   # not depthwise
        pruner.prune_vars(dict.fromkeys(convs, 0.5), [0])
        model.eval()
    else:
        model = _quantized(tool, model, shape)
    if tool in LEGACY:
        _legacy_static()
    else:   # the eager model's output, which the saved program should give (legacy kernels run eagerly)
        x = paddle.rand([1, *shape]) * 2 - 1
        out.mkdir(parents=True, exist_ok=True)
        np.savez(out / "eager.npz", x=x.numpy(), out=model(x).numpy())
    paddle.jit.save(paddle.jit.to_static(model, input_spec=spec, full_graph=True), str(out / "inference"))
    return "OK"


def check_eager(out_dir: Path) -> None:
    """gradc's run of each saved PIR program on the input of its eager.npz, against the eager model's output."""
    from real_models_inputs import fed_vars

    import gradc
    from gradc.io.pdiparams import read_params
    for reference in sorted(out_dir.glob("*/eager.npz")):
        path, values = reference.parent / "inference.json", np.load(reference)
        program, scope = gradc.load(path), gradc.Scope()
        for name, value in read_params(path.with_suffix(".pdiparams"), program).items():
            scope[name] = value
        block = program.global_block
        fetch = [op.input("X")[0] for op in block.ops if op.type == "fetch"]
        (got,) = gradc.Executor().run(program, {fed_vars(block)[0].name: values["x"]}, fetch[:1], scope)
        distance = float(np.abs(got - values["out"]).max() / np.abs(values["out"]).max())
        print(reference.parent.name, f"{distance:.2e}", flush=True)


def _legacy_static() -> None:
    """Once the eager calibration is done: 3.3.1's paddle.matmul, ... (the transformer's) have no legacy static path
    of their own (tools/paddle_legacy_shim.py gives them one, for static mode only)."""
    from paddle_legacy_shim import install
    install()


def _post_static(model, spec, out: Path) -> str:
    """PaddleSlim's quant_post_static of the float model's static inference program, calibrated on random batches."""
    import numpy as np
    import paddle
    from paddleslim.quant import quant_post_static
    model.eval()
    _legacy_static()
    paddle.jit.save(model, str(out / "float" / "model"), input_spec=spec)
    paddle.enable_static()
    rng = np.random.default_rng(0)
    shape = spec[0].shape[1:]
    batches = [{"x": rng.uniform(-1, 1, [2, *shape]).astype("float32")} for _ in range(CALIBRATION)]
    # 3.3.1's PostTrainingQuantization takes only a data_loader (PaddleSlim passes its generators as well)
    quant_post_static(paddle.static.Executor(paddle.CPUPlace()), str(out / "float"), str(out / "quantized"),
                      data_loader=lambda: iter(batches), model_filename="model.pdmodel",
                      params_filename="model.pdiparams", batch_nums=CALIBRATION, onnx_format=True)
    return "OK"


if __name__ == "__main__":
    if sys.argv[1] == "gradc":
        check_eager(Path(sys.argv[2]))
    else:
        main(__file__, _export, SMALLEST, timeout=600)
