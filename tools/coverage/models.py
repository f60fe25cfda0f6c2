"""Rows: paddle.vision.models, trained (batch norm in training mode). Small models whole, the others
through their own building blocks at tiny widths (a 0.25-wide MobileNetV3 already holds 120k
parameters); models_full.py has every builder's full-size program, without numbers."""

import importlib

from paddle import nn
from paddle.vision.models import VGG, LeNet
from paddle.vision.models.resnet import BasicBlock, BottleneckBlock
from paddle.vision.models.vgg import make_layers

from .spec import f, table

# paddle.vision.models.<name> is the builder function, which hides the module of the same name
alexnet, densenet, googlenet, inceptionv3, mobilenetv1, mobilenetv2, mobilenetv3, shufflenetv2, squeezenet = (
    importlib.import_module(f"paddle.vision.models.{name}")
    for name in ("alexnet", "densenet", "googlenet", "inceptionv3", "mobilenetv1", "mobilenetv2", "mobilenetv3",
                 "shufflenetv2", "squeezenet"))


def downsample(inplanes: int, planes: int, stride: int):
    """ResNet's projection shortcut: 1x1 conv and batch norm."""
    return nn.Sequential(nn.Conv2D(inplanes, planes, 1, stride=stride, bias_attr=False), nn.BatchNorm2D(planes))


def tiny_resnet():
    """ResNet's own BasicBlocks stacked as ResNet stacks them (stride-2 stages with projection shortcuts)
    under a conv stem and a pooled linear head: a deep train-mode batch-norm net at width 4-16."""
    return nn.Sequential(nn.Conv2D(3, 4, 3, padding=1, bias_attr=False), nn.BatchNorm2D(4), nn.ReLU(),
                         BasicBlock(4, 4), BasicBlock(4, 8, 2, downsample(4, 8, 2)), BasicBlock(8, 8),
                         BasicBlock(8, 16, 2, downsample(8, 16, 2)), BasicBlock(16, 16),
                         nn.AdaptiveAvgPool2D(1), nn.Flatten(), nn.Linear(16, 3))


def tiny_vgg(batch_norm: bool):
    """VGG's own make_layers with a two-stage config; num_classes=0 keeps VGG without its 4096-wide head."""
    return VGG(make_layers([4, "M", 8, "M"], batch_norm=batch_norm), num_classes=0)


WHOLE = table(
    "model",
    ("lenet", lambda img: LeNet(num_classes=3)(img), f(2, 1, 28, 28)),
    ("resnet_tiny", lambda img: tiny_resnet()(img), f(4, 3, 8, 8)),
    ("vgg_tiny", lambda img: tiny_vgg(False)(img), f(2, 3, 8, 8)),
    ("vgg_tiny_bn", lambda img: tiny_vgg(True)(img), f(2, 3, 8, 8)),
)

BLOCKS = table(
    "model block",
    ("alexnet_conv_pool", lambda x: alexnet.ConvPoolLayer(3, 4, 3, 1, 1, stdv=0.2, act="relu")(x), f(2, 3, 7, 7)),
    ("resnet_basic_block", lambda x: BasicBlock(4, 4)(x), f(2, 4, 4, 4)),
    ("resnet_basic_block_downsample", lambda x: BasicBlock(4, 8, 2, downsample(4, 8, 2))(x), f(2, 4, 5, 5)),
    ("resnet_bottleneck_block", lambda x: BottleneckBlock(16, 4)(x), f(2, 16, 3, 3)),
    ("resnext_bottleneck_block", lambda x: BottleneckBlock(8, 4, 2, downsample(8, 16, 2), groups=2)(x),
     f(2, 8, 4, 4)),
    ("wide_resnet_bottleneck_block", lambda x: BottleneckBlock(16, 4, base_width=128)(x), f(2, 16, 3, 3)),
    ("mobilenet_v1_depthwise_separable", lambda x: mobilenetv1.DepthwiseSeparable(4, 4, 8, 4, 2, 1.0)(x),
     f(2, 4, 5, 5)),
    ("mobilenet_v2_inverted_residual", lambda x: mobilenetv2.InvertedResidual(4, 4, 1, 2)(x), f(2, 4, 4, 4)),
    ("mobilenet_v2_inverted_residual_stride2", lambda x: mobilenetv2.InvertedResidual(4, 6, 2, 3)(x),
     f(2, 4, 5, 5)),
    ("mobilenet_v3_inverted_residual_se_hardswish",
     lambda x: mobilenetv3.InvertedResidual(4, 8, 4, 3, 1, True, nn.Hardswish, nn.BatchNorm2D)(x), f(2, 4, 4, 4)),
    ("mobilenet_v3_inverted_residual_relu_stride2",
     lambda x: mobilenetv3.InvertedResidual(4, 8, 6, 5, 2, False, nn.ReLU, nn.BatchNorm2D)(x), f(2, 4, 5, 5)),
    ("shufflenet_v2_inverted_residual", lambda x: shufflenetv2.InvertedResidual(8, 8, 1)(x), f(2, 8, 3, 3)),
    ("shufflenet_v2_inverted_residual_ds_swish",
     lambda x: shufflenetv2.InvertedResidualDS(4, 8, 2, nn.Swish)(x), f(2, 4, 5, 5)),
    ("squeezenet_fire", lambda x: squeezenet.MakeFire(4, 2, 4, 4)(x), f(2, 4, 4, 4)),
    ("densenet_dense_block", lambda x: densenet.DenseBlock(4, 2, 2, 2, 0.0, name="block")(x), f(2, 4, 3, 3)),
    ("densenet_dense_layer_dropout", lambda x: densenet.DenseLayer(4, 2, 2, 0.3)(x), f(2, 4, 3, 3)),
    ("densenet_transition", lambda x: densenet.TransitionLayer(4, 2)(x), f(2, 4, 4, 4)),
    ("googlenet_inception", lambda x: googlenet.Inception(4, 10, 2, 2, 3, 2, 3, 2)(x), f(2, 4, 5, 5)),
    ("inception_v3_inception_c", lambda x: inceptionv3.InceptionC(4, 2)(x), f(2, 4, 3, 3)),
)

ROWS = WHOLE + BLOCKS
