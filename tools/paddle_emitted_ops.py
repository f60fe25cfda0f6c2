"""The legacy op types Paddle's own layers, losses, optimizers, clipping, regularizers, RNNs, control
flow and vision models emit: each case builds a small static program (startup and main), appends the
backward pass or the optimizer, and records every op type in every block. Needs paddlepaddle 3.x with
FLAGS_enable_pir_api=0; used by tools/paddle_op_protos.py.
"""

from __future__ import annotations

import traceback

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
import paddle.vision.models as models
import paddle_legacy_shim
from paddle.base.backward import append_backward

paddle.enable_static()
SHIMMED = paddle_legacy_shim.install()


def data(name, shape, dtype="float32"):
    v = paddle.static.data(name, shape, dtype)
    v.stop_gradient = dtype != "float32"
    return v


def x(*shape):
    return data("x", list(shape))


def labels(shape, classes=4):
    return data("label", list(shape), "int64") if classes else data("label", list(shape))


def layer(make, *shape):
    return lambda: make()(x(*shape))


ACTIVATIONS = ["CELU", "ELU", "GELU", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
               "LogSigmoid", "LogSoftmax", "Mish", "PReLU", "RReLU", "ReLU", "ReLU6", "SELU", "Sigmoid", "SiLU",
               "Softmax", "Softmax2D", "Softplus", "Softshrink", "Softsign", "Swish", "Tanh", "Tanhshrink",
               "ThresholdedReLU", "Dropout", "Dropout2D", "AlphaDropout", "FeatureAlphaDropout", "Identity",
               "Flatten"]


def layer_cases():
    cases = {f"nn.{n}": layer(getattr(nn, n), 2, 4, 6, 6) for n in ACTIVATIONS}
    cases.update({
        "nn.LocalResponseNorm": layer(lambda: nn.LocalResponseNorm(3), 2, 4, 6, 6),
        "nn.GLU": layer(nn.GLU, 2, 4, 6), "nn.Maxout": layer(lambda: nn.Maxout(2), 2, 4, 6, 6),
        "nn.Dropout3D": layer(nn.Dropout3D, 2, 4, 3, 3, 3),
        "nn.Linear": layer(lambda: nn.Linear(6, 3), 2, 6),
        "nn.Bilinear": lambda: nn.Bilinear(3, 4, 5)(x(2, 3), data("y", [2, 4])),
        "nn.Embedding": lambda: nn.Embedding(10, 4, padding_idx=0)(data("ids", [2, 3], "int64")),
        "nn.Conv1D": layer(lambda: nn.Conv1D(4, 4, 3, padding=1), 2, 4, 8),
        "nn.Conv1DTranspose": layer(lambda: nn.Conv1DTranspose(4, 4, 3), 2, 4, 8),
        "nn.Conv2D": layer(lambda: nn.Conv2D(4, 4, 3, groups=2), 2, 4, 6, 6),
        "nn.Conv2D depthwise": layer(lambda: nn.Conv2D(4, 4, 3, groups=4), 2, 4, 6, 6),
        "nn.Conv2DTranspose": layer(lambda: nn.Conv2DTranspose(4, 4, 3, stride=2), 2, 4, 6, 6),
        "nn.Conv3D": layer(lambda: nn.Conv3D(4, 4, 3), 2, 4, 4, 4, 4),
        "nn.Conv3DTranspose": layer(lambda: nn.Conv3DTranspose(4, 4, 3), 2, 4, 4, 4, 4),
        "nn.BatchNorm": layer(lambda: nn.BatchNorm(4), 2, 4, 6, 6),
        "nn.BatchNorm1D": layer(lambda: nn.BatchNorm1D(4), 2, 4, 8),
        "nn.BatchNorm2D": layer(lambda: nn.BatchNorm2D(4), 2, 4, 6, 6),
        "nn.BatchNorm3D": layer(lambda: nn.BatchNorm3D(4), 2, 4, 3, 3, 3),
        "nn.SyncBatchNorm": layer(lambda: nn.SyncBatchNorm(4), 2, 4, 6, 6),
        "nn.InstanceNorm1D": layer(lambda: nn.InstanceNorm1D(4), 2, 4, 8),
        "nn.InstanceNorm2D": layer(lambda: nn.InstanceNorm2D(4), 2, 4, 6, 6),
        "nn.InstanceNorm3D": layer(lambda: nn.InstanceNorm3D(4), 2, 4, 3, 3, 3),
        "nn.LayerNorm": layer(lambda: nn.LayerNorm(6), 2, 4, 6),
        "nn.GroupNorm": layer(lambda: nn.GroupNorm(2, 4), 2, 4, 6, 6),
        "nn.SpectralNorm": layer(lambda: nn.SpectralNorm([4, 6]), 4, 6),
        "nn.ChannelShuffle": layer(lambda: nn.ChannelShuffle(2), 2, 4, 6, 6),
        "nn.PixelShuffle": layer(lambda: nn.PixelShuffle(2), 2, 4, 6, 6),
        "nn.PixelUnshuffle": layer(lambda: nn.PixelUnshuffle(2), 2, 4, 6, 6),
        "nn.Unflatten": layer(lambda: nn.Unflatten(1, [2, 2]), 2, 4, 6),
        "nn.Fold": layer(lambda: nn.Fold([4, 4], 2), 2, 8, 9),
        "nn.Unfold": layer(lambda: nn.Unfold(2), 2, 4, 6, 6),
        "nn.CosineSimilarity": lambda: nn.CosineSimilarity()(x(2, 6), data("y", [2, 6])),
        "nn.PairwiseDistance": lambda: nn.PairwiseDistance()(x(2, 6), data("y", [2, 6])),
        "nn.MultiHeadAttention": layer(lambda: nn.MultiHeadAttention(8, 2), 2, 5, 8),
        "nn.TransformerEncoderLayer": layer(lambda: nn.TransformerEncoderLayer(8, 2, 16), 2, 5, 8),
        "nn.TransformerDecoderLayer": lambda: nn.TransformerDecoderLayer(8, 2, 16)(x(2, 5, 8), data("m", [2, 5, 8])),
        "nn.Transformer": lambda: nn.Transformer(8, 2, 1, 1, 16)(x(2, 5, 8), data("t", [2, 5, 8])),
    })
    for d, shape in ((1, (2, 4, 8)), (2, (2, 4, 6, 6)), (3, (2, 4, 4, 4, 4))):
        for n in ("AdaptiveAvgPool", "AdaptiveMaxPool", "AvgPool", "MaxPool"):
            cases[f"nn.{n}{d}D"] = layer(lambda c=f"{n}{d}D": getattr(nn, c)(2), *shape)
        for mode in ("constant", "reflect", "replicate", "circular"):
            cases[f"nn.Pad{d}D {mode}"] = layer(lambda d=d, m=mode: getattr(nn, f"Pad{d}D")(1, mode=m), *shape)
        cases[f"nn.MaxUnPool{d}D"] = lambda d=d, s=shape: getattr(nn, f"MaxUnPool{d}D")(2)(
            *getattr(F, f"max_pool{d}d")(x(*s), 2, return_mask=True))
    for n in ("LPPool1D", "LPPool2D"):
        cases[f"nn.{n}"] = layer(lambda c=n: getattr(nn, c)(2, 2), 2, 4, 6, *((6,) if "2D" in n else ()))
    cases["nn.FractionalMaxPool2D"] = layer(lambda: nn.FractionalMaxPool2D(3), 2, 4, 6, 6)
    cases["nn.FractionalMaxPool3D"] = layer(lambda: nn.FractionalMaxPool3D(3), 2, 4, 6, 6, 6)
    for mode, shape in (("nearest", (2, 4, 6, 6)), ("bilinear", (2, 4, 6, 6)), ("bicubic", (2, 4, 6, 6)),
                        ("linear", (2, 4, 6)), ("trilinear", (2, 4, 3, 3, 3))):
        cases[f"nn.Upsample {mode}"] = layer(lambda m=mode: nn.Upsample(scale_factor=2, mode=m), *shape)
    return cases


def rnn_cases():
    def seq():
        return x(2, 5, 4)

    return {
        "nn.LSTM": lambda: nn.LSTM(4, 6)(seq())[0],
        "nn.GRU bidirectional": lambda: nn.GRU(4, 6, direction="bidirect")(seq())[0],
        "nn.SimpleRNN 2 layers": lambda: nn.SimpleRNN(4, 6, num_layers=2)(seq())[0],
        "nn.RNN(LSTMCell)": lambda: nn.RNN(nn.LSTMCell(4, 6))(seq())[0],
        "nn.RNN(SimpleRNNCell)": lambda: nn.RNN(nn.SimpleRNNCell(4, 6))(seq())[0],
        "nn.BiRNN(GRUCell)": lambda: nn.BiRNN(nn.GRUCell(4, 6), nn.GRUCell(4, 6))(seq())[0],
    }


def loss_cases():
    def pair(make, shape=(4, 5), label=None):
        return lambda: make()(x(*shape), label() if label else data("y", list(shape)))

    def probs(shape=(4, 5)):
        return F.sigmoid(x(*shape))

    def cls():
        return labels([4])

    return {
        "nn.BCELoss": lambda: nn.BCELoss()(probs(), data("y", [4, 5])),
        "nn.BCEWithLogitsLoss": pair(lambda: nn.BCEWithLogitsLoss(pos_weight=paddle.ones([5]))),
        "nn.CrossEntropyLoss": pair(nn.CrossEntropyLoss, label=lambda: labels([4, 1])),
        "nn.CrossEntropyLoss soft_label": pair(lambda: nn.CrossEntropyLoss(soft_label=True)),
        "nn.CrossEntropyLoss weight, no softmax": lambda: nn.CrossEntropyLoss(
            weight=paddle.ones([5]), use_softmax=False)(F.softmax(x(4, 5)), labels([4])),
        "nn.CTCLoss": lambda: nn.CTCLoss()(x(6, 2, 5), data("label", [2, 3], "int32"), paddle.full([2], 6, "int64"),
                                           paddle.full([2], 3, "int64")),
        "nn.CosineEmbeddingLoss": lambda: nn.CosineEmbeddingLoss()(x(4, 5), data("y", [4, 5]), labels([4])),
        "nn.GaussianNLLLoss": lambda: nn.GaussianNLLLoss()(x(4, 5), data("y", [4, 5]), F.softplus(data("v", [4, 5]))),
        "nn.HSigmoidLoss": lambda: nn.HSigmoidLoss(5, 6)(x(4, 5), labels([4, 1])),
        "nn.HingeEmbeddingLoss": pair(nn.HingeEmbeddingLoss),
        "nn.KLDivLoss": pair(nn.KLDivLoss),
        "nn.L1Loss": pair(nn.L1Loss),
        "nn.MSELoss": pair(nn.MSELoss),
        "nn.MarginRankingLoss": lambda: nn.MarginRankingLoss()(x(4), data("y", [4]), data("z", [4])),
        "nn.MultiLabelMarginLoss": lambda: nn.MultiLabelMarginLoss()(x(4, 5), labels([4, 5])),
        "nn.MultiLabelSoftMarginLoss": pair(nn.MultiLabelSoftMarginLoss),
        "nn.MultiMarginLoss": lambda: nn.MultiMarginLoss()(x(4, 5), cls()),
        "nn.NLLLoss": lambda: nn.NLLLoss()(F.log_softmax(x(4, 5)), cls()),
        "nn.PoissonNLLLoss": pair(nn.PoissonNLLLoss),
        "nn.RNNTLoss": lambda: nn.RNNTLoss()(x(2, 4, 3, 5), data("l", [2, 2], "int32"),
                                             paddle.full([2], 4, "int32"), paddle.full([2], 2, "int32")),
        "nn.SmoothL1Loss": pair(nn.SmoothL1Loss),
        "nn.SoftMarginLoss": pair(nn.SoftMarginLoss),
        "nn.TripletMarginLoss": lambda: nn.TripletMarginLoss()(x(4, 5), data("p", [4, 5]), data("n", [4, 5])),
        "nn.TripletMarginWithDistanceLoss": lambda: nn.TripletMarginWithDistanceLoss()(
            x(4, 5), data("p", [4, 5]), data("n", [4, 5])),
        "nn.AdaptiveLogSoftmaxWithLoss": lambda: nn.AdaptiveLogSoftmaxWithLoss(5, 8, [4])(x(4, 5), cls())[1],
        "F.softmax_with_cross_entropy": lambda: F.softmax_with_cross_entropy(x(4, 5), labels([4, 1])),
        "F.dice_loss": lambda: F.dice_loss(F.softmax(x(4, 5)), labels([4, 1])),
        "F.log_loss": lambda: F.log_loss(probs((4, 1)), data("y", [4, 1])),
        "F.npair_loss": lambda: F.npair_loss(x(4, 5), data("p", [4, 5]), data("l", [4])),
        "F.sigmoid_focal_loss": pair(lambda: F.sigmoid_focal_loss),
        "F.square_error_cost": pair(lambda: paddle.nn.functional.square_error_cost),
    }


def optimizer_cases():
    def mlp():
        return paddle.mean(nn.Linear(6, 1)(F.relu(nn.Linear(4, 6)(x(3, 4)))))

    opts = {n: getattr(paddle.optimizer, n) for n in
            ("ASGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "Lamb", "Momentum", "NAdam", "RAdam",
             "RMSProp", "Rprop", "SGD")}
    cases = {f"optimizer.{n}": (mlp, lambda c=c: c(learning_rate=0.1)) for n, c in opts.items()}
    cases["optimizer.Adam amsgrad"] = (mlp, lambda: paddle.optimizer.Adam(0.1, amsgrad=True))
    cases["optimizer.Momentum nesterov"] = (mlp, lambda: paddle.optimizer.Momentum(0.1, use_nesterov=True))
    cases["optimizer.lr.StepDecay"] = (mlp, lambda: paddle.optimizer.SGD(paddle.optimizer.lr.StepDecay(0.1, 2)))
    for clip in ("ClipGradByValue", "ClipGradByNorm", "ClipGradByGlobalNorm"):
        make = getattr(nn, clip)
        cases[f"nn.{clip}"] = (mlp, lambda m=make: paddle.optimizer.SGD(0.1, grad_clip=m(1.0)))
    for decay in ("L1Decay", "L2Decay"):
        make = getattr(paddle.regularizer, decay)
        cases[f"regularizer.{decay}"] = (mlp, lambda m=make: paddle.optimizer.Momentum(0.1, weight_decay=m(0.01)))
    return cases


def control_flow_cases():
    def while_with_arrays():
        i = paddle.full([1], 0, "int64")
        arr = paddle.tensor.array_write(x(2, 3), i)

        def body(i, arr):
            prev = paddle.tensor.array_read(arr, i)
            arr = paddle.tensor.array_write(F.tanh(prev) * 2.0, i + 1, array=arr)
            return i + 1, arr

        i, arr = paddle.static.nn.while_loop(lambda i, arr: i < 3, body, [i, arr])
        return paddle.tensor.array_read(arr, i)

    def cond():
        v = x(2, 3)
        return paddle.static.nn.cond(paddle.mean(v) > 0, lambda: F.relu(v), lambda: v * 3.0)

    def switch_case():
        v = x(2, 3)
        return paddle.static.nn.switch_case(paddle.full([1], 1, "int32"), {0: lambda: v + 1.0, 1: lambda: F.relu(v)})

    return {"static.nn.while_loop + array_write/array_read": while_with_arrays, "static.nn.cond": cond,
            "static.nn.switch_case": switch_case}


def model_cases():
    small = {"LeNet": (models.LeNet, [2, 1, 28, 28]), "AlexNet": (models.alexnet, [1, 3, 224, 224]),
             "ResNet18": (models.resnet18, [1, 3, 64, 64]), "ResNet50": (models.resnet50, [1, 3, 64, 64]),
             "VGG11 bn": (lambda: models.vgg11(batch_norm=True), [1, 3, 224, 224]),
             "MobileNetV1": (lambda: models.mobilenet_v1(scale=0.25), [1, 3, 64, 64]),
             "MobileNetV2": (lambda: models.mobilenet_v2(scale=0.25), [1, 3, 64, 64]),
             "MobileNetV3Small": (lambda: models.mobilenet_v3_small(scale=0.5), [1, 3, 64, 64]),
             "MobileNetV3Large": (lambda: models.mobilenet_v3_large(scale=0.5), [1, 3, 64, 64]),
             "ShuffleNetV2": (models.shufflenet_v2_x0_25, [1, 3, 64, 64]),
             "ShuffleNetV2 swish": (models.shufflenet_v2_swish, [1, 3, 64, 64]),
             "SqueezeNet": (models.squeezenet1_1, [1, 3, 64, 64]),
             "DenseNet121": (models.densenet121, [1, 3, 64, 64]),
             "GoogLeNet": (models.googlenet, [1, 3, 224, 224]),
             "InceptionV3": (models.inception_v3, [1, 3, 299, 299])}
    return {f"vision.models.{n}": (lambda m=m, s=s: _first(m()(x(*s)))) for n, (m, s) in small.items()}


def _first(out):
    return out[0] if isinstance(out, (list, tuple)) else out


def program_op_types(*programs) -> set[str]:
    return {op.type for p in programs for b in p.blocks for op in b.ops}


def run_case(build, make_optimizer=None) -> set[str]:
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        out = _first(build())
        loss = paddle.mean(out) if out.shape != [] else out
        if make_optimizer:
            make_optimizer().minimize(loss)
        else:
            append_backward(loss)
    return program_op_types(main, startup)


def collect(log=print) -> tuple[dict[str, list[str]], dict[str, str]]:
    """source -> op types it emits (forward, backward, optimizer, startup); source -> error text."""
    plain = {**layer_cases(), **rnn_cases(), **loss_cases(), **control_flow_cases(), **model_cases()}
    cases = {name: (build, None) for name, build in plain.items()} | optimizer_cases()
    emitted, failed = {}, {}
    for name, (build, make_optimizer) in cases.items():
        try:
            emitted[name] = sorted(run_case(build, make_optimizer))
        except Exception as e:  # noqa: BLE001 - a layer Paddle cannot build in legacy mode is reported, not fatal
            failed[name] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"
            log(f"  {name}: {failed[name]}\n{traceback.format_exc(limit=-2)}")
    return emitted, failed


if __name__ == "__main__":
    found, errors = collect()
    for source, types in found.items():
        print(f"{source}: {' '.join(types)}")
    print(f"{len(found)} built, {len(errors)} failed")
