"""Normalisation layers: batch norm in every mode (train and eval, 2-D to 5-D inputs, channels last, global
statistics, trainable statistics in eval mode, a momentum tensor), instance norm with and without affine,
layer and group norm without affine, spectral norm, the legacy lrn op and LocalResponseNorm. Running
statistics are compared after the run."""

import paddle
import paddle.nn as nn
import paddle.nn.functional as F
from paddle.base.layer_helper import LayerHelper

from . import Case, data


def bn(name, layer, shape, eval_mode=False, **options):
    def build():
        module = layer(shape[-1] if options.get("data_format", "NC")[1] != "C" else shape[1], **options)
        if eval_mode:
            module.eval()
        return [module(data("x", *shape))]
    return Case(name, build)


def lrn(shape, data_format, **attrs):
    """The legacy lrn op, appended directly (no 3.3.1 Python API emits it; saved fluid programs hold it)."""
    x = data("x", *shape)
    helper = LayerHelper("lrn")
    out, mid = (helper.create_variable_for_type_inference("float32") for _ in range(2))
    helper.append_op(type="lrn", inputs={"X": x}, outputs={"Out": out, "MidOut": mid},
                     attrs={"data_format": data_format, **attrs})
    return [out]


def momentum_tensor():
    momentum = data("momentum", grad=False, dtype="float32", value=[0.7])
    return [paddle.static.nn.batch_norm(data("x", 3, 2, 4), momentum=momentum)]


CASES = [
    bn("batch_norm1d_2d_input", nn.BatchNorm1D, (4, 3), momentum=0.8),
    bn("batch_norm1d_ncl", nn.BatchNorm1D, (3, 2, 4)),
    bn("batch_norm1d_nlc", nn.BatchNorm1D, (3, 4, 2), data_format="NLC", epsilon=1e-3),
    bn("batch_norm2d", nn.BatchNorm2D, (2, 3, 3, 2)),
    bn("batch_norm2d_eval", nn.BatchNorm2D, (2, 3, 2, 2), eval_mode=True),
    bn("batch_norm2d_nhwc", nn.BatchNorm2D, (2, 2, 3, 3), data_format="NHWC"),
    bn("batch_norm2d_global_stats", nn.BatchNorm2D, (2, 3, 2, 2), use_global_stats=True),
    bn("batch_norm2d_eval_trainable_statistics", nn.BatchNorm2D, (2, 3, 2, 2), eval_mode=True,
       use_global_stats=False),
    bn("batch_norm3d", nn.BatchNorm3D, (2, 2, 2, 3, 2)),
    bn("batch_norm3d_ndhwc_eval", nn.BatchNorm3D, (2, 2, 2, 3, 2), eval_mode=True, data_format="NDHWC"),
    Case("batch_norm_legacy_trainable_statistics", lambda: [
        nn.BatchNorm(3, is_test=True, trainable_statistics=True, dtype="float64")(data("x", 2, 3, 2, 2))]),
    Case("batch_norm_momentum_tensor", momentum_tensor),
    Case("batch_norm_functional_global_stats", lambda: [F.batch_norm(
        data("x", 3, 2, 2), data("mean", grad=False, value=[0.5, -0.2]), data("var", 2, kind="positive", grad=False),
        data("w", 2), data("b", 2), training=True, use_global_stats=True)]),
    Case("instance_norm1d", lambda: [nn.InstanceNorm1D(3)(data("x", 2, 3, 5))]),
    Case("instance_norm2d_no_affine", lambda: [nn.InstanceNorm2D(2, weight_attr=False, bias_attr=False)(
        data("x", 2, 2, 3, 3))]),
    Case("instance_norm3d", lambda: [nn.InstanceNorm3D(2, epsilon=1e-3)(data("x", 1, 2, 2, 3, 2))]),
    Case("layer_norm_no_affine", lambda: [nn.LayerNorm([3, 4], weight_attr=False, bias_attr=False)(
        data("x", 2, 3, 4))]),
    Case("group_norm_no_affine", lambda: [nn.GroupNorm(2, 4, weight_attr=False, bias_attr=False)(
        data("x", 2, 4, 3))]),
    Case("spectral_norm", lambda: [nn.SpectralNorm([4, 3], power_iters=40, dtype="float64")(data("x", 4, 3))]),
    Case("spectral_norm_dim1", lambda: [nn.SpectralNorm([2, 3, 2, 2], dim=1, power_iters=1, dtype="float64")(
        data("x", 2, 3, 2, 2))]),
    Case("lrn", lambda: lrn((2, 6, 2, 3), "NCHW", n=5, k=1.0, alpha=0.1, beta=0.75), dtype="float32",
         note="Paddle registers lrn_grad for float32 only"),
    Case("lrn_nhwc", lambda: lrn((1, 2, 3, 4), "NHWC", n=3, k=2.0, alpha=0.5, beta=0.6), dtype="float32"),
    Case("local_response_norm", lambda: [nn.LocalResponseNorm(3)(data("x", 2, 4, 2, 3))], dtype="float32",
         note="LocalResponseNorm accepts float16/float32 only"),
    Case("local_response_norm_3d_input", lambda: [nn.LocalResponseNorm(5, alpha=0.01)(data("x", 2, 6, 3))],
         dtype="float32"),
    Case("local_response_norm_5d_ndhwc", lambda: [nn.LocalResponseNorm(3, data_format="NDHWC")(
        data("x", 1, 2, 2, 3, 4))], dtype="float32"),
]
