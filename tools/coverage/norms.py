"""Rows: batch, instance, layer, group, local response and spectral normalisation."""

import paddle
from paddle import nn

from .spec import evaluated, f, table


def spectral_norm(x, **options):
    """SpectralNorm normalises a weight tensor: here the fed x, which gets the gradient."""
    return nn.SpectralNorm(x.shape, dtype=paddle.get_default_dtype(), **options)(x)


ROWS = table(
    "norm",
    ("batch_norm_legacy", lambda x: nn.BatchNorm(3)(x), f(4, 3, 3, 3)),
    ("batch_norm_legacy_act", lambda x: nn.BatchNorm(3, act="relu")(x), f(4, 3, 3, 3)),
    ("batch_norm_legacy_is_test", lambda x: nn.BatchNorm(3, is_test=True)(x), f(4, 3, 3, 3)),
    ("batch_norm_legacy_global_stats", lambda x: nn.BatchNorm(3, use_global_stats=True)(x), f(4, 3, 3, 3)),
    ("batch_norm1d_2d_input", lambda x: nn.BatchNorm1D(3)(x), f(5, 3)),
    ("batch_norm1d_3d_input", lambda x: nn.BatchNorm1D(3)(x), f(4, 3, 5)),
    ("batch_norm1d_nlc", lambda x: nn.BatchNorm1D(3, data_format="NLC")(x), f(4, 5, 3)),
    ("batch_norm2d", lambda x: nn.BatchNorm2D(3, momentum=0.8, epsilon=1e-3)(x), f(4, 3, 3, 3)),
    ("batch_norm2d_eval", lambda x: evaluated(nn.BatchNorm2D(3))(x), f(4, 3, 3, 3)),
    ("batch_norm2d_nhwc", lambda x: nn.BatchNorm2D(3, data_format="NHWC")(x), f(4, 3, 3, 3)),
    ("batch_norm2d_global_stats", lambda x: nn.BatchNorm2D(3, use_global_stats=True)(x), f(4, 3, 3, 3)),
    ("batch_norm2d_no_affine", lambda x: nn.BatchNorm2D(3, weight_attr=False, bias_attr=False)(x), f(4, 3, 3, 3)),
    ("batch_norm3d", lambda x: nn.BatchNorm3D(2)(x), f(3, 2, 2, 3, 3)),
    ("batch_norm3d_eval", lambda x: evaluated(nn.BatchNorm3D(2))(x), f(3, 2, 2, 3, 3)),
    ("sync_batch_norm", lambda x: nn.SyncBatchNorm(3)(x), f(4, 3, 3, 3)),
    ("instance_norm1d", lambda x: nn.InstanceNorm1D(3)(x), f(2, 3, 6)),
    ("instance_norm2d", lambda x: nn.InstanceNorm2D(3)(x), f(2, 3, 4, 4)),
    ("instance_norm2d_no_affine",
     lambda x: nn.InstanceNorm2D(3, weight_attr=False, bias_attr=False)(x), f(2, 3, 4, 4)),
    ("instance_norm3d", lambda x: nn.InstanceNorm3D(2, epsilon=1e-3)(x), f(2, 2, 3, 3, 3)),
    ("layer_norm", lambda x: nn.LayerNorm(6)(x), f(3, 6)),
    ("layer_norm_2axes", lambda x: nn.LayerNorm([3, 4], epsilon=1e-3)(x), f(2, 3, 4)),
    ("layer_norm_no_affine", lambda x: nn.LayerNorm(4, weight_attr=False, bias_attr=False)(x), f(2, 3, 4)),
    ("group_norm", lambda x: nn.GroupNorm(2, 4)(x), f(2, 4, 3, 3)),
    ("group_norm_nhwc", lambda x: nn.GroupNorm(3, 6, data_format="NHWC")(x), f(2, 3, 3, 6)),
    ("group_norm_1d", lambda x: nn.GroupNorm(2, 4, data_format="NCL")(x), f(2, 4, 5)),
    ("group_norm_no_bias", lambda x: nn.GroupNorm(2, 4, bias_attr=False)(x), f(2, 4, 3, 3)),
    ("group_norm_no_scale", lambda x: nn.GroupNorm(2, 4, weight_attr=False)(x), f(2, 4, 3, 3)),
    ("group_norm_no_affine", lambda x: nn.GroupNorm(2, 4, weight_attr=False, bias_attr=False)(x), f(2, 4, 3, 3)),
    ("group_norm_3d", lambda x: nn.GroupNorm(1, 2, data_format="NCDHW")(x), f(2, 2, 2, 3, 3)),
    ("local_response_norm", lambda x: nn.LocalResponseNorm(3)(x), f(2, 5, 3, 3)),
    ("local_response_norm_nhwc",
     lambda x: nn.LocalResponseNorm(3, alpha=0.1, beta=0.5, k=2.0, data_format="NHWC")(x), f(2, 3, 3, 5)),
    ("local_response_norm_1d", lambda x: nn.LocalResponseNorm(2, alpha=0.05, data_format="NCL")(x), f(2, 4, 5)),
    ("local_response_norm_3d", lambda x: nn.LocalResponseNorm(3, data_format="NCDHW")(x), f(1, 4, 2, 3, 3)),
    ("spectral_norm", lambda x: spectral_norm(x), f(4, 3)),
    ("spectral_norm_dim1_iters", lambda x: spectral_norm(x, dim=1, power_iters=3), f(3, 4, 2)),
)
