"""Write the PIR programs Paddle 3.3.1's oneDNN passes produce (tests/data/paddle/onednn_pir): onednn_op.* ops.

Each case is a small PIR program built from Paddle's layers (FLAGS_enable_pir_api on, the 3.3.1 default), saved with
save_inference_model (model.json), then run by a Predictor with enable_mkldnn, enable_new_ir and IR optimization on and
enable_save_optim_model, which writes the rewritten program as _optimized.json. Run with Paddle 3.3.1 (tests never
import Paddle):

    nice /work/paddle-venv/bin/python tools/paddle_onednn_pir.py [CASE...]

Per case it writes model.json / model.pdiparams (the optimized program and its parameters), feed.npz, expected.npz
(the Predictor's outputs on the optimized program), unoptimized.npz (paddle.static.Executor's run of the program
before the passes, which must agree) and meta.json (the onednn_op types the program holds). With oneDNN on, the PIR
Predictor's outputs are readable (without it, 3.3.1's are not: docs/inference-optimized.md). The parameters (and
batch norm's statistics) are drawn at random, so the folded batch norm and the weights matter.

A conv2d followed by leaky_relu (or another activation with an attribute) crashes the 3.3.1 Predictor in
conv_activation_mkldnn_fuse_pass (a segfault building onednn_op.fused_conv2d: pir::FloatAttribute::data), so the
cases keep to relu after a convolution.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "tests/data/paddle/onednn_pir"


def convnet(paddle):
    """conv + batch norm + relu, a conv with a residual add, transpose + reshape, a scaled matmul, softmax, a linear
    layer + gelu, layer norm, scale and sigmoid."""
    F = paddle.nn.functional
    x = paddle.static.data("x", [-1, 3, 6, 6], "float32")
    norm = paddle.nn.BatchNorm2D(4)
    norm.eval()   # its running statistics, as the inference program uses them
    h = F.relu(norm(paddle.nn.Conv2D(3, 4, 3, padding=1)(x)))
    h = paddle.nn.Conv2D(4, 4, 3, padding=1)(h) + h
    h = paddle.reshape(paddle.transpose(h, [0, 2, 3, 1]), [-1, 36, 4])
    m = F.softmax(paddle.matmul(h, paddle.transpose(h, [0, 2, 1])) * 0.5, -1)
    o = paddle.nn.LayerNorm(5)(F.gelu(paddle.nn.Linear(4, 5)(paddle.matmul(m, h))))
    return {"x": (x, [2, 3, 6, 6])}, F.sigmoid(o * 2.0 + 1.0)


def elementwise(paddle):
    """Elementwise ops with activations (a divide + relu 3.3.1 leaves unfused), softplus + relu6, squeeze +
    transpose, transpose + reshape after a matmul, a linear layer + relu, concat, leaky_relu, hardswish, abs,
    swish and clip."""
    F = paddle.nn.functional
    x = paddle.static.data("x", [-1, 4, 6], "float32")
    y = paddle.static.data("y", [-1, 4, 6], "float32")
    a, b = F.relu(x + y), F.tanh(x * y) + F.relu(x / (y * y + 1.0))
    d = F.relu6(F.softplus(F.sigmoid(a - b), beta=2.0))
    e = paddle.transpose(paddle.squeeze(paddle.unsqueeze(d, 1), 1), [0, 2, 1])
    m = paddle.reshape(paddle.transpose(paddle.matmul(e, paddle.transpose(e, [0, 2, 1])), [0, 2, 1]), [-1, 36])
    f = F.relu(paddle.nn.Linear(36, 8)(m * 0.05))
    g = paddle.concat([f, F.leaky_relu(f, 0.2)], axis=1)
    out = paddle.clip(F.swish(F.hardswish(g) / (paddle.abs(g) + 1.0)), -0.1, 0.6)
    return {"x": (x, [2, 4, 6]), "y": (y, [2, 4, 6])}, out


def inplace(paddle):
    """The in-place ops (paddle._C_ops.X_, which write pd_op.X_) the oneDNN dialect has a form of: relu_, tanh_,
    sigmoid_, leaky_relu_, exp_, sqrt_, scale_, elu_, reshape_, clip_, abs_, subtract_, multiply_, divide_, add_,
    softmax_, round_, transpose_, squeeze_ and flatten_ after a Linear layer."""
    C = paddle._C_ops
    x = paddle.static.data("x", [-1, 4, 6], "float32")
    y = paddle.static.data("y", [-1, 4, 6], "float32")
    h = C.tanh_(C.relu_(paddle.nn.Linear(6, 6)(x) * 1.0) + y)
    h = C.leaky_relu_(C.sigmoid_(h * 1.0) - 0.5, 0.1)
    h = C.elu_(C.scale_(C.sqrt_(C.exp_(h * 0.5)), 2.0, 0.0, True) - 1.5, 1.0)
    e = C.abs_(C.clip_(C.reshape_(h * 1.0, [-1, 24]), -1.0, 1.5) - 0.3)
    e = C.multiply_(C.subtract_(e, paddle.full([1], 0.1)), paddle.full([1], 2.0))
    e = C.add_(C.divide_(e, paddle.full([1], 3.0)), paddle.full([1], 0.5))
    e = C.round_(C.softmax_(e, -1) * 100.0, 0)
    f = C.squeeze_(paddle.unsqueeze(C.transpose_(paddle.reshape(e, [-1, 4, 6]), [0, 2, 1]), 1), [1])
    return {"x": (x, [2, 4, 6]), "y": (y, [2, 4, 6])}, C.flatten_(f * 1.0, 1, 2)


CASES = {"convnet": convnet, "elementwise": elementwise, "inplace": inplace}


def predict(where: Path, feeds: dict, cache: Path) -> dict:
    from paddle.inference import Config, create_predictor
    config = Config(str(where / "model.json"), str(where / "model.pdiparams"))
    config.disable_gpu()
    config.enable_mkldnn()
    config.enable_new_ir(True)
    config.switch_ir_optim(True)
    config.set_optim_cache_dir(str(cache))
    config.enable_save_optim_model(True)
    predictor = create_predictor(config)
    for name, value in feeds.items():
        predictor.get_input_handle(name).copy_from_cpu(value)
    predictor.run()
    return {name: predictor.get_output_handle(name).copy_to_cpu() for name in predictor.get_output_names()}


def write_case(paddle, name: str) -> None:
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        inputs, out = CASES[name](paddle)
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    rng = np.random.RandomState(7)
    scope = paddle.static.global_scope()
    for var_name in sorted(scope.local_var_names()):   # batch norm's statistics too, so its folding shows
        tensor = scope.find_var(var_name).get_tensor()
        low = 0.5 if var_name.startswith("batch_norm") and var_name.endswith(".w_2") else -1.0   # a variance
        tensor.set(rng.uniform(low, 1.5, np.array(tensor).shape).astype("float32"), paddle.CPUPlace())
    feeds = {n: rng.uniform(-1, 1, shape).astype("float32") for n, (_, shape) in inputs.items()}
    reference = executor.run(main, feed=feeds, fetch_list=[out])[0]
    case = OUT / name
    case.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        feed_vars = [var for var, _ in inputs.values()]
        paddle.static.save_inference_model(str(tmp / "model"), feed_vars, [out], executor, program=main)
        expected = predict(tmp, feeds, tmp / "opt")
        shutil.copy(tmp / "opt/_optimized.json", case / "model.json")
        shutil.copy(tmp / "opt/_optimized.pdiparams", case / "model.pdiparams")
    program = json.loads((case / "model.json").read_text())
    types = sorted({op["#"] for op in program["program"]["regions"][0]["blocks"][0]["ops"]
                    if op["#"].startswith("onednn_op.")})
    np.savez(case / "feed.npz", **feeds)
    np.savez(case / "expected.npz", **expected)
    np.savez(case / "unoptimized.npz", **{key: reference for key in expected})
    (case / "meta.json").write_text(json.dumps({"onednn_ops": types, "outputs": sorted(expected)}, indent=1) + "\n")
    worst = max(float(np.max(np.abs(value - reference))) for value in expected.values())
    print(f"{name}: {' '.join(types)}; optimized vs unoptimized max |diff| {worst:.2e}")


def main(names: list[str]) -> None:
    import paddle
    paddle.enable_static()
    for name in names or list(CASES):
        write_case(paddle, name)


if __name__ == "__main__":
    main(sys.argv[1:])
