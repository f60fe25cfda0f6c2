"""Whole models as a CUDA build of Paddle 3.3.1 saves them, made on a CPU build: the tool tells Paddle's Python API it
is a CUDA build (``as_cuda_build``: paddle.is_compiled_with_cuda and cudnn_version answer as a CUDA build's do, and
FLAGS_conv2d_disable_cudnn, which a CPU build does not define, reads False), so its layers write the ops a GPU
install writes (pd_op.linear_v2 for every nn.Linear, var / std / nansum, depthwise_conv2d for a depthwise Conv1D;
docs/gpu-build.md); Paddle's CPU executor runs all of them, so the numbers are Paddle's. For each model of MODELS,
into tests/data/paddle/gpu_build/<case>/:

- model.json.gz: the inference program paddle.jit.save writes (the layer in eval mode), and expected.npz its output;
- forward.json.gz (the training loss fetched as "loss") and train.json.gz: Paddle's training program (forward and the
  grad ops of paddle.autograd.ir_backward.grad), fetching the loss and "<var>@GRAD" of every parameter and float
  input; loss.npy and grads.npz Paddle's numbers (a gradient of over 2048 entries as its entries at drawn positions);
- feed.npz and meta.json (the PIR ops of each program, the gradients, the seed).

No parameter file is stored: every parameter (and running statistic) is set, by name, to tests/seeded_params.py's
values before Paddle runs, as the tests do for gradc. Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_gpu_build.py [case ...]
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import warnings
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base import core

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from paddle_pir_fixtures import write_backward  # noqa: E402
from paddle_pir_translated import op_names  # noqa: E402

from seeded_params import param_value, stored_grad  # noqa: E402

OUT = ROOT / "tests" / "data" / "paddle" / "gpu_build"
SEED = 2026


def as_cuda_build() -> None:
    """Paddle's Python API answers as in a CUDA build (its kernels stay the CPU build's)."""
    import paddle.nn.functional.conv as functional_conv
    import paddle.nn.layer.conv as layer_conv

    def cuda():
        return True
    paddle.is_compiled_with_cuda = paddle.device.is_compiled_with_cuda = core.is_compiled_with_cuda = cuda
    core.cudnn_version = lambda: 90100
    core.get_cuda_device_count = lambda: 0   # paddle.seed seeds each GPU's generator
    flags = paddle.get_flags

    def get_flags(names):
        names = [names] if isinstance(names, str) else names
        return {n: False if n == "FLAGS_conv2d_disable_cudnn" else flags(n)[n] for n in names}
    functional_conv.get_flags = layer_conv.get_flags = get_flags


class NormMlp(paddle.nn.Layer):
    """Linear layers between var / std normalisations, paddle.compat's linear (torch's weight layout) and a linear under
    FLAGS_use_accuracy_compatible_kernel (a transposed weight), and a nansum over the features."""

    def __init__(self):
        super().__init__()
        self.first, self.second, self.third = paddle.nn.Linear(6, 8), paddle.nn.Linear(8, 8), paddle.nn.Linear(8, 4)
        self.torch_weight = self.create_parameter([4, 8])
        self.torch_bias = self.create_parameter([4], is_bias=True)

    def forward(self, x):
        h = self.first(x)
        h = (h - h.mean(axis=1, keepdim=True)) / (paddle.std(h, axis=1, keepdim=True) + 1e-3)
        h = paddle.tanh(self.second(h)) * paddle.rsqrt(paddle.var(h, axis=-1, unbiased=False, keepdim=True) + 1.0)
        paddle.set_flags({"FLAGS_use_accuracy_compatible_kernel": True})
        out = self.third(h)
        paddle.set_flags({"FLAGS_use_accuracy_compatible_kernel": False})
        out = out + paddle.compat.nn.functional.linear(h, self.torch_weight, self.torch_bias)
        spread = paddle.var(out, axis=0, correction=2) + paddle.std(out)
        return out + spread + paddle.nansum(h, axis=1, keepdim=True) * 0.1


class VitLike(paddle.nn.Layer):
    """A patch embedding, two nn.TransformerEncoder layers and a classifier over the mean token."""

    def __init__(self):
        super().__init__()
        self.patches = paddle.nn.Conv2D(3, 16, 4, stride=4)
        layer = paddle.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0)
        self.encoder = paddle.nn.TransformerEncoder(layer, 2)
        self.head = paddle.nn.Linear(16, 10)

    def forward(self, x):
        tokens = self.patches(x).flatten(2).transpose([0, 2, 1])
        return self.head(self.encoder(tokens).mean(axis=1))


class TextRnn(paddle.nn.Layer):
    """Embedding, an LSTM and a bidirectional GRU, and a classifier of the last step."""

    def __init__(self):
        super().__init__()
        self.embedding = paddle.nn.Embedding(20, 8)
        self.lstm = paddle.nn.LSTM(8, 8)
        self.gru = paddle.nn.GRU(8, 6, direction="bidirect")
        self.head = paddle.nn.Linear(12, 10)

    def forward(self, ids):
        h, _ = self.lstm(self.embedding(ids))
        h, _ = self.gru(h)
        return self.head(h[:, -1])


class DepthwiseConv1d(paddle.nn.Layer):
    """A depthwise Conv1D (a CUDA build writes depthwise_conv2d, a CPU build conv2d), pooled, and a classifier."""

    def __init__(self):
        super().__init__()
        self.conv = paddle.nn.Conv1D(4, 8, 3, groups=4, padding=1)
        self.head = paddle.nn.Linear(8, 10)

    def forward(self, x):
        return self.head(F.relu(self.conv(x)).mean(axis=2))


def _vision(name: str, **options):
    """The model with its dropout rate 0 (the op stays; a training run is then deterministic)."""
    def make():
        model = getattr(paddle.vision.models, name)(num_classes=10, **options)
        for layer in model.sublayers():
            if isinstance(layer, paddle.nn.Dropout):
                layer.p = 0.0
        return model
    return make


def _gzipped(path: Path) -> None:
    """path.gz in its place (a PIR program's JSON shrinks tenfold)."""
    path.with_name(path.name + ".gz").write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    path.unlink()


IMAGE = [("x", [2, 3, 64, 64], "float32")]   # 2x2 cells at the last stage: batch norm over 8 values
MODELS = {   # case -> (the layer, its inputs (name, shape, dtype), description)
    "resnet18": (_vision("resnet18"), IMAGE, "paddle.vision.models.resnet18(num_classes=10), 64x64 images"),
    "mobilenet_v2": (_vision("mobilenet_v2", scale=0.25), IMAGE, "mobilenet_v2(scale=0.25, num_classes=10)"),
    "mobilenet_v3_small": (_vision("mobilenet_v3_small", scale=0.5), IMAGE,
                           "mobilenet_v3_small(scale=0.5, num_classes=10)"),
    "vit_like": (VitLike, [("x", [2, 3, 8, 8], "float32")], VitLike.__doc__),
    "text_rnn": (TextRnn, [("ids", [2, 5], "int64")], TextRnn.__doc__),
    "norm_mlp": (NormMlp, [("x", [5, 6], "float32")], NormMlp.__doc__),
    "depthwise_conv1d": (DepthwiseConv1d, [("x", [2, 4, 9], "float32")], DepthwiseConv1d.__doc__),
}


def _feed(case: str, rng) -> dict:
    """The inputs (ids below 20) and a class label per sample (norm_mlp has 4 classes, the others 10)."""
    inputs = MODELS[case][1]
    feed = {name: (rng.integers(0, 20, shape) if dtype == "int64" else rng.standard_normal(shape)).astype(dtype)
            for name, shape, dtype in inputs}
    feed["label"] = rng.integers(0, 4 if case == "norm_mlp" else 10, [inputs[0][1][0], 1]).astype("int64")
    return feed


def _seeded_scope(program, scope) -> None:
    """Every parameter (and running statistic) of the program set to its seeded value in ``scope``."""
    for op in program.global_block().ops:
        if op.name() == "builtin.parameter":
            name = op.attrs()["parameter_name"]
            shape = [int(d) for d in op.result(0).shape]
            scope.var(name).get_tensor().set(param_value(name, shape, SEED), paddle.CPUPlace())


def _run(program, feed: dict, fetches: list) -> list[np.ndarray]:
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        _seeded_scope(program, scope)
        return [np.array(v) for v in paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed,
                                                                                     fetch_list=fetches)]


def inference(case: str, out: Path, feed: dict) -> list[str]:
    """model.json by paddle.jit.save of the layer in eval mode, expected.npz its output."""
    make, inputs, _ = MODELS[case]
    paddle.disable_static()
    paddle.seed(SEED)
    layer = make()
    layer.eval()
    spec = [paddle.static.InputSpec([None, *shape[1:]], dtype, name) for name, shape, dtype in inputs]
    paddle.jit.save(paddle.jit.to_static(layer, input_spec=spec, full_graph=True), str(out / "model"))
    (out / "model.pdiparams").unlink()   # the parameters are seeded
    paddle.enable_static()
    program = paddle.static.Program()
    core.deserialize_pir_program(str(out / "model.json"), program)
    fetches = [op.operand_source(0) for op in program.global_block().ops if op.name() == "pd_op.fetch"]
    (expected,) = _run(program, {name: feed[name] for name, _, _ in inputs}, fetches)
    np.savez(out / "expected.npz", out=expected)
    _gzipped(out / "model.json")
    return op_names(program)


def _training_program(case: str, feed: dict, with_grads: bool):
    """The layer in training mode and its cross-entropy loss over the feed's labels (and with_grads, Paddle's grads
    of the parameters and float inputs): (program, loss, [(name, grad)])."""
    make, inputs, _ = MODELS[case]
    paddle.enable_static()
    paddle.seed(SEED)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        values = [paddle.static.data(name, shape, dtype) for name, shape, dtype in inputs]
        for value in values:
            value.stop_gradient = value.dtype == paddle.int64
        label = paddle.static.data("label", list(feed["label"].shape), "int64")
        loss = paddle.mean(F.cross_entropy(make()(*values), label))
        if not with_grads:
            paddle._pir_ops.fetch(loss, "loss", 0).persistable = True
            return main, loss, []
        params = [p for p in main.global_block().all_parameters() if not p.stop_gradient]
        floats = [v for v in values if not v.stop_gradient]
        grads = paddle.autograd.ir_backward.grad(loss, params + floats)
    names = [p.name for p in params] + [name for (name, _, dtype) in inputs if dtype != "int64"]
    return main, loss, [(n, g) for n, g in zip(names, grads) if g is not None]


def training(case: str, out: Path, feed: dict) -> dict:
    """forward.json, train.json.gz (Paddle's grad ops), loss.npy and grads.npz."""
    forward, _, _ = _training_program(case, feed, with_grads=False)
    core.serialize_pir_program(forward, str(out / "forward.json"), True, False, True)
    _gzipped(out / "forward.json")
    main, loss, pairs = _training_program(case, feed, with_grads=True)
    backward_ops = write_backward(main, loss, pairs, out)
    (out / "backward.json.gz").rename(out / "train.json.gz")
    loss_value, *grad_values = _run(main, feed, [loss] + [g for _, g in pairs])
    np.save(out / "loss.npy", loss_value)
    stored = {f"{n}@GRAD": stored_grad(f"{n}@GRAD", g) for (n, _), g in zip(pairs, grad_values)}
    np.savez_compressed(out / "grads.npz", **stored)
    return {"pir_forward_ops": op_names(forward), "pir_train_ops": backward_ops, "loss": "loss",
            "grads": [f"{n}@GRAD" for n, _ in pairs]}


def write(case: str) -> str:
    out = OUT / case
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    feed = _feed(case, np.random.default_rng(SEED))
    np.savez(out / "feed.npz", **feed)
    with paddle.utils.unique_name.guard():
        meta = {"case": case, "description": MODELS[case][2], "paddle_version": paddle.__version__, "seed": SEED,
                "pir_inference_ops": inference(case, out, feed)}
    meta |= training(case, out, feed)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{sorted(set(meta['pir_inference_ops']) | set(meta['pir_train_ops']))}"


if __name__ == "__main__":
    warnings.filterwarnings("ignore")
    as_cuda_build()
    for name in sys.argv[1:] or MODELS:
        print(f"{name}: {write(name)}", flush=True)
    sys.exit(0)
