"""Rows: paddle.compat (Paddle 3's torch-compatible functions), paddle.compat.nn and paddle.compat.nn.functional,
and API branches that write ops only PIR mode has: F.embedding with scale_grad_by_freq
(embedding_with_scaled_gradient), F.interpolate with antialias (interp_antialias) and paddle.amp.debugging's layer
check, whose decorator (check_layer_numerics) refuses a static value: its rows call the ops as the decorator does;
paddle.incubate.layers.search_pyramid_hash (pyramid_hash).
paddle.compat's max and min along a dim write max_with_index / min_with_index, which have GPU kernels only:
their rows record Paddle's CPU error (tools/paddle_compat_gpu_only.py writes their programs).
paddle.compat.seed (the RNG's seed) builds no op."""

import paddle
import paddle.compat as C
import paddle.compat.nn as CN
import paddle.compat.nn.functional as CF
import paddle.nn.functional as F
from paddle import _C_ops
from paddle.incubate.layers.nn import search_pyramid_hash

from .spec import Input, f, given, table


def _pyramid_hash(ids, training: bool, rate: float, seed: int):
    """search_pyramid_hash without bloom filters; its white and black lists are made (the layer needs them) and
    unused. Its rows, one per kept n-gram, are summed: how many depends on the draws."""
    out = search_pyramid_hash(ids, num_emb=6, space_len=40, pyramid_layer=3, rand_len=2, drop_out_percent=rate,
                              is_training=training, use_filter=False, white_list_len=1, black_list_len=1,
                              seed=seed, lr=0.1)
    return paddle.sum(out, axis=0)


def _sentences(*lengths: int) -> Input:
    """int32 ids in [0, 30), a sequence per length (one LoD level), as search_pyramid_hash takes them."""
    return Input((sum(lengths), 1), "ints", 30, grad=False, int_dtype="int32", lengths=lengths)


def _checked_tanh(x):
    """enable_check_model_nan_inf(x, 1) -> the layer -> disable_check_model_nan_inf(out, 0), as
    paddle.amp.debugging.check_layer_numerics wraps a forward."""
    return _C_ops.disable_check_model_nan_inf(paddle.tanh(_C_ops.enable_check_model_nan_inf(x, 1)) * 2.0, 0)


def _first_values(result):
    return result[0]


COMPAT = table(
    "compat",
    ("compat_max_dim", lambda x: C.max(x, dim=1).values, f(3, 4)),
    ("compat_min_dim_keepdim", lambda x: C.min(x, 0, keepdim=True).values, f(3, 4)),
    ("compat_max_all", lambda x: C.max(x), f(3, 4)),
    ("compat_min_other", lambda x, y: C.min(x, y), f(3, 4), f(3, 4)),
    ("compat_slogdet", lambda x: list(C.slogdet(x)), f(3, 3)),
    ("compat_slogdet_batch", lambda x: C.slogdet(x).logabsdet, f(2, 4, 4)),
    ("compat_sort", lambda x: C.sort(x, dim=0, descending=True).values, f(4, 3)),
    ("compat_sort_stable", lambda x: C.sort(x, stable=True).values, f(3, 5)),
    ("compat_split", lambda x: list(C.split(x, [1, 3], dim=1)), f(2, 4)),
    ("compat_split_size", lambda x: list(C.split(x, 2)), f(5, 2)),
    ("compat_unique", lambda x, i: x * C.unique(i, return_counts=True)[1].astype("float32").sum(), f(3),
     given([2, 1, 2, 0, 1, 2], "int64")),
    ("compat_median_dim", lambda x: _first_values(C.median(x, dim=1)), f(3, 5)),
    ("compat_median", lambda x: C.median(x), f(3, 5)),
    ("compat_nanmedian_dim", lambda x: _first_values(C.nanmedian(x, dim=0, keepdim=True)), f(4, 3)),
    ("compat_equal", lambda x, y: x * paddle.cast(C.equal(y, y), "float32"), f(2, 3), f(2, 3)),
    ("compat_F_pad", lambda x: CF.pad(x, [1, 2], value=0.5), f(2, 3, 4)),
    ("compat_F_softmax", lambda x: CF.softmax(x, dim=0), f(3, 4)),
    ("compat_F_linear", lambda x, w, b: CF.linear(x, w, b), f(2, 3), f(4, 3), f(4)),
    ("compat_F_unfold", lambda x: CF.unfold(x, 2, stride=1), f(1, 2, 3, 3)),
    ("compat_F_scaled_dot_product_attention", lambda q, k, v: CF.scaled_dot_product_attention(q, k, v),
     f(1, 2, 3, 4), f(1, 2, 3, 4), f(1, 2, 3, 4)),
    ("compat_Linear", lambda x: CN.Linear(3, 2)(x), f(4, 3)),
    ("compat_Softmax", lambda x: CN.Softmax(dim=1)(x), f(2, 3)),
    ("compat_Unfold", lambda x: CN.Unfold(2, padding=1)(x), f(1, 1, 3, 3)),
    ("compat_AvgPool1D", lambda x: CN.AvgPool1D(2)(x), f(1, 2, 5)),
    ("compat_AvgPool2D_divisor", lambda x: CN.AvgPool2D(2, stride=1, divisor_override=3)(x), f(1, 1, 3, 3)),
    ("compat_AvgPool3D", lambda x: CN.AvgPool3D(2, padding=1, count_include_pad=False)(x), f(1, 1, 3, 3, 3)),
    ("compat_AvgPool1d_2d_3d", lambda x: CN.AvgPool1d(2)(x[0]) .sum() + CN.AvgPool2d(2)(x).sum()
     + CN.AvgPool3d(2)(x[None]).sum(), f(1, 2, 4, 4)),
    ("compat_MultiheadAttention", lambda x: CN.MultiheadAttention(4, 2, batch_first=True)(x, x, x)[0],
     f(2, 3, 4)),
)

BRANCHES = table(
    "compat",
    ("embedding_scale_grad_by_freq", lambda i, w: F.embedding(i, w, scale_grad_by_freq=True),
     given([[1, 3, 1], [2, 1, 3]], "int64"), f(5, 3)),
    ("embedding_scale_grad_by_freq_padding", lambda i, w: F.embedding(i, w, padding_idx=2, scale_grad_by_freq=True),
     given([[2, 3, 2, 0], [3, 3, 1, 2]], "int64"), f(4, 3)),
    ("interpolate_antialias_bilinear", lambda x: F.interpolate(x, size=[3, 3], mode="bilinear", antialias=True),
     f(1, 2, 5, 5)),
    ("interpolate_antialias_bicubic", lambda x: F.interpolate(x, scale_factor=0.5, mode="bicubic", antialias=True),
     f(1, 1, 6, 4)),
    ("interpolate_antialias_align_corners", lambda x: F.interpolate(x, size=[4, 2], mode="bilinear",
                                                                     align_corners=True, antialias=True),
     f(1, 2, 5, 7)),
    ("interpolate_antialias_nhwc_upscale", lambda x: F.interpolate(x, size=[5, 6], mode="bicubic", antialias=True,
                                                                    data_format="NHWC"), f(2, 3, 4, 2)),
    ("check_model_nan_inf", _checked_tanh, f(3, 4)),
    ("search_pyramid_hash", lambda x, ids: x * _pyramid_hash(ids, False, 0.5, 1), f(6), _sentences(3, 2, 1)),
    ("search_pyramid_hash_training", lambda x, ids: x * _pyramid_hash(ids, True, 0.4, 7), f(6),
     _sentences(4, 1, 3, 5)),
    ("sync_batch_norm_converted", lambda x: paddle.nn.SyncBatchNorm.convert_sync_batchnorm(
        paddle.nn.Sequential(paddle.nn.Conv2D(2, 3, 1), paddle.nn.BatchNorm2D(3)))(x), f(2, 2, 3, 3)),
)

ROWS = COMPAT + BRANCHES
