"""Rows: the activation layers of paddle.nn, with their options."""

import paddle
from paddle import nn

from .spec import evaluated, f, table

ROWS = table(
    "activation",
    ("celu", lambda x: nn.CELU(alpha=0.7)(x), f(2, 5)),
    ("elu", lambda x: nn.ELU(alpha=0.8)(x), f(2, 5)),
    ("gelu", lambda x: nn.GELU()(x), f(2, 5)),
    ("gelu_tanh", lambda x: nn.GELU(approximate=True)(x), f(2, 5)),
    ("glu", lambda x: nn.GLU(axis=1)(x), f(2, 6, 3)),
    ("hardshrink", lambda x: nn.Hardshrink(0.3)(x), f(2, 5)),
    ("hardsigmoid", lambda x: nn.Hardsigmoid()(x), f(3, 5)),
    ("hardswish", lambda x: nn.Hardswish()(x), f(3, 5)),
    ("hardtanh", lambda x: nn.Hardtanh(-0.5, 0.7)(x), f(2, 5)),
    ("leaky_relu", lambda x: nn.LeakyReLU(0.1)(x), f(2, 5)),
    ("log_sigmoid", lambda x: nn.LogSigmoid()(x), f(2, 5)),
    ("log_softmax", lambda x: nn.LogSoftmax()(x), f(2, 5)),
    ("log_softmax_axis1", lambda x: nn.LogSoftmax(axis=1)(x), f(2, 4, 3)),
    ("maxout", lambda x: nn.Maxout(groups=2)(x), f(2, 4, 3, 3)),
    ("maxout_axis_last", lambda x: nn.Maxout(groups=3, axis=-1)(x), f(2, 3, 3, 6)),
    ("mish", lambda x: nn.Mish()(x), f(2, 5)),
    ("prelu_all", lambda x: nn.PReLU()(x), f(2, 3, 4, 4)),
    ("prelu_channel", lambda x: nn.PReLU(3, 0.2)(x), f(2, 3, 4, 4)),
    ("prelu_channel_nhwc", lambda x: nn.PReLU(3, 0.2, data_format="NHWC")(x), f(2, 4, 4, 3)),
    ("prelu_element", lambda x: paddle.static.nn.prelu(x, "element"), f(2, 3, 2, 2)),
    ("relu", lambda x: nn.ReLU()(x), f(2, 5)),
    ("relu6", lambda x: nn.ReLU6()(x * 4), f(2, 5)),
    ("rrelu_eval", lambda x: evaluated(nn.RReLU(0.1, 0.3))(x), f(2, 5)),
    ("rrelu_train", lambda x: nn.RReLU(0.1, 0.3)(x), f(2, 5)),
    ("selu", lambda x: nn.SELU()(x), f(2, 5)),
    ("silu", lambda x: nn.SiLU()(x), f(2, 5)),
    ("sigmoid", lambda x: nn.Sigmoid()(x), f(2, 5)),
    ("softmax", lambda x: nn.Softmax()(x), f(2, 5)),
    ("softmax_axis0", lambda x: nn.Softmax(axis=0)(x), f(3, 4)),
    ("softmax2d", lambda x: nn.Softmax2D()(x), f(2, 3, 2, 2)),
    ("softplus", lambda x: nn.Softplus(beta=2.0, threshold=3.0)(x), f(2, 5)),
    ("softshrink", lambda x: nn.Softshrink(0.3)(x), f(2, 5)),
    ("softsign", lambda x: nn.Softsign()(x), f(2, 5)),
    ("swish", lambda x: nn.Swish()(x), f(2, 5)),
    ("tanh", lambda x: nn.Tanh()(x), f(2, 5)),
    ("tanhshrink", lambda x: nn.Tanhshrink()(x), f(2, 5)),
    ("thresholded_relu", lambda x: nn.ThresholdedReLU(0.4)(x), f(2, 5)),
    ("thresholded_relu_value", lambda x: nn.ThresholdedReLU(0.4, 0.1)(x), f(2, 5)),
)
