"""Rows without numbers: every builder of paddle.vision.models at its real size, trained with a
1000-class head. Their parameters are far too big for a fixture, so only the programs and op lists
are kept: gradc must compile them to Paddle's parameter gradients."""

from paddle.vision import models

from .spec import f, table

IMAGE = f(2, 3, 224, 224)

ROWS = table(
    "model (program only)",
    *((name, lambda img, name=name: models.__dict__[name]()(img), IMAGE)
      for name in ("alexnet", "vgg11", "vgg16", "resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2",
                   "mobilenet_v1", "mobilenet_v2", "mobilenet_v3_small", "mobilenet_v3_large", "shufflenet_v2_x0_25",
                   "shufflenet_v2_swish", "squeezenet1_0", "squeezenet1_1", "densenet121", "googlenet")),
    ("vgg11_bn", lambda img: models.vgg11(batch_norm=True)(img), IMAGE),
    ("inception_v3", lambda img: models.inception_v3()(img), f(2, 3, 299, 299)),
    numbers=False,
)
