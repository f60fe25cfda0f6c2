"""Every family of paddle.vision.models as a tiny classifier for the training fixtures
(tools/paddle_vision_training.py): the model class itself where its widths can be made small (LeNet, VGG,
MobileNetV3), else the model's own building blocks under a stem and a pooled linear head. In MODELS dropout is off
(an eval-mode layer or rate 0); DROPOUT_MODELS are the families that have a dropout, with it on at the model's own
rate and mode, where it sits in the model (gradc draws Paddle's masks when seeded as Paddle is)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from paddle import nn
from paddle.vision.models import VGG, LeNet
from paddle.vision.models.mobilenetv3 import InvertedResidualConfig, MobileNetV3
from paddle.vision.models.resnet import BottleneckBlock
from paddle.vision.models.vgg import make_layers
from paddle.vision.ops import ConvNormActivation

from .models import (
    alexnet,
    densenet,
    downsample,
    googlenet,
    inceptionv3,
    mobilenetv1,
    mobilenetv2,
    shufflenetv2,
    squeezenet,
    tiny_resnet,
)

CLASSES = 3


@dataclass(frozen=True)
class Model:
    build: Callable[[], nn.Layer]
    image: tuple[int, ...]     # the batch's shape: [N, C, H, W]
    about: str
    learning_rate: float = 1e-3
    dropout: float = 0.0       # the rate of the model's dropout layers (on in training)


@contextmanager
def in_dtype(dtype: str):
    """DenseNet's layers are the legacy nn.BatchNorm, whose parameters are float32 unless told: built in float64,
    they follow the model's dtype, as every other layer does."""
    legacy = densenet.BatchNorm
    densenet.BatchNorm = partial(legacy, dtype=dtype)
    try:
        yield
    finally:
        densenet.BatchNorm = legacy


def head(channels: int) -> list[nn.Layer]:
    return [nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(channels, CLASSES)]


def stem(channels: int, stride: int = 1) -> nn.Layer:
    return ConvNormActivation(3, channels, 3, stride=stride)


def tiny_vgg(batch_norm: bool) -> nn.Layer:
    """VGG itself without its 4096-wide classifier: its features and 7x7 average pool, then a linear layer."""
    return nn.Sequential(VGG(make_layers([4, "M", 8, "M"], batch_norm=batch_norm), num_classes=0), nn.Flatten(),
                         nn.Linear(8 * 7 * 7, CLASSES))


def tiny_bottleneck_resnet(groups: int = 1, base_width: int = 64) -> nn.Layer:
    """ResNet's BottleneckBlocks (expansion 4) as ResNet stacks them; groups > 1 is ResNeXt, a wider
    base_width is Wide ResNet."""
    return nn.Sequential(stem(8), BottleneckBlock(8, 2, groups=groups, base_width=base_width,
                                                  downsample=downsample(8, 8, 1)),
                         BottleneckBlock(8, 4, 2, downsample(8, 16, 2), groups=groups, base_width=base_width),
                         *head(16))


def tiny_mobilenet_v3(dropout: bool = False) -> nn.Layer:
    """MobileNetV3 itself with a two-block config (one with squeeze-excitation); its classifier's dropout (0.2)
    off unless asked for."""
    config = [InvertedResidualConfig(8, 3, 16, 8, True, "relu", 2), InvertedResidualConfig(8, 5, 24, 8, False,
                                                                                             "hardswish", 1)]
    model = MobileNetV3(config, last_channel=16, num_classes=CLASSES)
    if not dropout:
        model.classifier[2].eval()
    return model


def tiny_squeezenet(dropout: float = 0.0) -> nn.Layer:
    """Fire modules under SqueezeNet's stem, with its head: (dropout,) a 1x1 conv to the classes, relu, average
    pool."""
    drop = [downscaled(dropout)] if dropout else []
    return nn.Sequential(nn.Conv2D(3, 8, 3, stride=2), nn.ReLU(), nn.MaxPool2D(3, 2, ceil_mode=True),
                         squeezenet.MakeFire(8, 4, 4, 4), squeezenet.MakeFire(8, 4, 8, 8), *drop,
                         nn.Conv2D(16, CLASSES, 1), nn.ReLU(), nn.AdaptiveAvgPool2D(1), nn.Flatten())


def downscaled(rate: float) -> nn.Layer:
    """The dropout of AlexNet, SqueezeNet, GoogLeNet, InceptionV3 and DenseNet: scaled down at inference, not up in
    training."""
    return nn.Dropout(rate, mode="downscale_in_infer")


def alexnet_classifier(features: int, width: int = 16) -> list[nn.Layer]:
    """AlexNet's classifier at a tiny width: dropout 0.5, fc6, relu, dropout 0.5, fc7, relu, fc8."""
    return [nn.Flatten(), downscaled(0.5), nn.Linear(features, width), nn.ReLU(), downscaled(0.5),
            nn.Linear(width, width), nn.ReLU(), nn.Linear(width, CLASSES)]


def vgg_classifier(batch_norm: bool, width: int = 16) -> nn.Layer:
    """VGG's features and its classifier at a tiny width: linear, relu, dropout 0.5 (upscaled in training), twice."""
    return nn.Sequential(VGG(make_layers([4, "M", 8, "M"], batch_norm=batch_norm), num_classes=0), nn.Flatten(),
                         nn.Linear(8 * 7 * 7, width), nn.ReLU(), nn.Dropout(), nn.Linear(width, width), nn.ReLU(),
                         nn.Dropout(), nn.Linear(width, CLASSES))


class GoogLeNetHeads(nn.Layer):
    """An Inception module with GoogLeNet's main head (pool, dropout 0.4, linear) and an auxiliary head (pool, conv,
    linear, relu, dropout 0.7, linear) on the same features, their logits summed: two dropouts in parallel
    branches, whose draw order is the program's."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(googlenet.ConvLayer(3, 8, 3), nn.MaxPool2D(3, 2, 1),
                                      googlenet.Inception(8, 8, 4, 4, 4, 2, 4, 4))
        self.main = nn.Sequential(nn.AdaptiveAvgPool2D(1), downscaled(0.4), nn.Flatten(), nn.Linear(16, CLASSES))
        self.aux = nn.Sequential(nn.AvgPool2D(2, 2), googlenet.ConvLayer(16, 8, 1), nn.Flatten(), nn.Linear(32, 16),
                                 nn.ReLU(), downscaled(0.7), nn.Linear(16, CLASSES))

    def forward(self, x):
        x = self.features(x)
        return self.main(x) + self.aux(x)


MODELS = {
    "lenet": Model(lambda: LeNet(num_classes=CLASSES), (2, 1, 28, 28), "LeNet itself", 1e-4),  # 61k weights, no norm
    "alexnet": Model(lambda: nn.Sequential(alexnet.ConvPoolLayer(3, 8, 3, 1, 1, stdv=0.2, act="relu"),
                                           alexnet.ConvPoolLayer(8, 8, 3, 1, 1, stdv=0.2, act="relu"),
                                           nn.Flatten(), nn.Linear(8 * 3 * 3, CLASSES)),
                     (2, 3, 16, 16), "AlexNet's ConvPoolLayers"),
    "vgg": Model(lambda: tiny_vgg(False), (2, 3, 8, 8), "VGG with make_layers([4, M, 8, M])"),
    "vgg_bn": Model(lambda: tiny_vgg(True), (2, 3, 8, 8), "VGG with batch norm"),
    "resnet_basic": Model(tiny_resnet, (4, 3, 8, 8), "ResNet's BasicBlocks, three stages"),
    "resnet_bottleneck": Model(tiny_bottleneck_resnet, (4, 3, 8, 8), "ResNet's BottleneckBlocks"),
    "resnext": Model(lambda: tiny_bottleneck_resnet(groups=2, base_width=32), (4, 3, 8, 8),
                     "ResNeXt: grouped BottleneckBlocks"),
    "wide_resnet": Model(lambda: tiny_bottleneck_resnet(base_width=128), (4, 3, 8, 8),
                         "Wide ResNet: BottleneckBlocks of base width 128"),
    "mobilenet_v1": Model(lambda: nn.Sequential(stem(8, 2), mobilenetv1.DepthwiseSeparable(8, 8, 16, 8, 1, 1.0),
                                                mobilenetv1.DepthwiseSeparable(16, 16, 16, 16, 2, 1.0), *head(16)),
                          (4, 3, 8, 8), "MobileNetV1's DepthwiseSeparable blocks"),
    "mobilenet_v2": Model(lambda: nn.Sequential(stem(8, 2), mobilenetv2.InvertedResidual(8, 8, 1, 2),
                                                mobilenetv2.InvertedResidual(8, 12, 2, 3), *head(12)),
                          (4, 3, 8, 8), "MobileNetV2's InvertedResiduals (residual and stride 2)"),
    "mobilenet_v3": Model(tiny_mobilenet_v3, (4, 3, 8, 8), "MobileNetV3 itself, a two-block config"),
    "shufflenet_v2": Model(lambda: nn.Sequential(stem(8), shufflenetv2.InvertedResidualDS(8, 16, 2),
                                                 shufflenetv2.InvertedResidual(16, 16, 1, nn.Swish), *head(16)),
                           (4, 3, 8, 8), "ShuffleNetV2's InvertedResidualDS and InvertedResidual (swish)"),
    "squeezenet": Model(tiny_squeezenet, (2, 3, 16, 16), "SqueezeNet's Fire modules and head"),
    "densenet": Model(lambda: nn.Sequential(densenet.ConvBNLayer(3, 8, 3, pad=1),
                                            densenet.DenseBlock(8, 2, 2, 4, 0.0, name="block"),
                                            densenet.TransitionLayer(16, 8), nn.BatchNorm2D(8), nn.ReLU(), *head(8)),
                      (4, 3, 8, 8), "DenseNet's DenseBlock and TransitionLayer"),
    "googlenet": Model(lambda: nn.Sequential(googlenet.ConvLayer(3, 8, 3), nn.MaxPool2D(3, 2, 1),
                                             googlenet.Inception(8, 8, 4, 4, 4, 2, 4, 4), *head(16)),
                       (2, 3, 8, 8), "GoogLeNet's Inception module"),
    "inception_v3": Model(lambda: nn.Sequential(ConvNormActivation(3, 4, 3, stride=2, padding=0),
                                                inceptionv3.InceptionC(4, 2), *head(768)),
                          (2, 3, 7, 7), "InceptionV3's InceptionC"),
}

DROPOUT_MODELS = {
    "alexnet_dropout": Model(lambda: nn.Sequential(alexnet.ConvPoolLayer(3, 8, 3, 1, 1, stdv=0.2, act="relu"),
                                                   alexnet.ConvPoolLayer(8, 8, 3, 1, 1, stdv=0.2, act="relu"),
                                                   *alexnet_classifier(8 * 3 * 3)),
                             (2, 3, 16, 16), "AlexNet's ConvPoolLayers and its classifier's two dropouts", dropout=0.5),
    "vgg_dropout": Model(lambda: vgg_classifier(False), (2, 3, 8, 8), "VGG with its classifier's two dropouts",
                         dropout=0.5),
    "vgg_bn_dropout": Model(lambda: vgg_classifier(True), (2, 3, 8, 8), "VGG with batch norm and its classifier's "
                            "two dropouts", dropout=0.5),
    "mobilenet_v2_dropout": Model(lambda: nn.Sequential(stem(8, 2), mobilenetv2.InvertedResidual(8, 8, 1, 2),
                                                        mobilenetv2.InvertedResidual(8, 12, 2, 3),
                                                        nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Dropout(0.2),
                                                        nn.Linear(12, CLASSES)),
                                  (4, 3, 8, 8), "MobileNetV2's InvertedResiduals and classifier (dropout 0.2)",
                                  dropout=0.2),
    "mobilenet_v3_dropout": Model(lambda: tiny_mobilenet_v3(dropout=True), (4, 3, 8, 8),
                                  "MobileNetV3 itself, its classifier's dropout 0.2 on", dropout=0.2),
    "squeezenet_dropout": Model(lambda: tiny_squeezenet(0.5), (2, 3, 16, 16), "SqueezeNet's Fire modules and head "
                                "with its dropout 0.5", dropout=0.5),
    "densenet_dropout": Model(lambda: nn.Sequential(densenet.ConvBNLayer(3, 8, 3, pad=1),
                                                    densenet.DenseBlock(8, 2, 2, 4, 0.2, name="block"),
                                                    densenet.TransitionLayer(16, 8), nn.BatchNorm2D(8), nn.ReLU(),
                                                    *head(8)),
                              (4, 3, 8, 8), "DenseNet's DenseBlock with its dropout argument (default 0) at 0.2",
                              dropout=0.2),
    "googlenet_dropout": Model(GoogLeNetHeads, (2, 3, 8, 8), "GoogLeNet's Inception, main head (dropout 0.4) and "
                               "an auxiliary head (dropout 0.7)", dropout=0.4),
    "inception_v3_dropout": Model(lambda: nn.Sequential(ConvNormActivation(3, 4, 3, stride=2, padding=0),
                                                        inceptionv3.InceptionC(4, 2), nn.AdaptiveAvgPool2D(1),
                                                        nn.Flatten(), downscaled(0.2), nn.Linear(768, CLASSES)),
                                  (2, 3, 7, 7), "InceptionV3's InceptionC and head (dropout 0.2)", dropout=0.2),
}
