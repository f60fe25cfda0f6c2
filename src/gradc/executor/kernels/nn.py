"""Kernels of gradc.ops.nn: normalisation, dropout, embeddings.

The three norms share one fact: for xhat = (x - mean) * inv over some axes and g = dL/dxhat,
dL/dx = inv * (g - mean(g) - xhat * mean(g * xhat)) over the same axes (``norm_grad``). Batch norm's scale is
per channel, so its two means are its Bias and Scale grads over n times the scale, and its dx takes them.
Statistics use the biased variance, as Paddle does.
"""

from __future__ import annotations

import numpy as np

from ...bfloat16 import round_to_bfloat16
from ...limits import check_shape
from .. import paddle_random, randomness
from . import kernel
from .activation import in_float32
from .broadcast import reusable
from .channel_stats import by_sample, channel_dots, channel_sums, not_channel, per_channel
from .matmul import as_matrix
from .tensor import numpy_dtype


def moments(x, axes):
    mean = x.mean(axis=axes, keepdims=True)
    return mean, ((x - mean) ** 2).mean(axis=axes, keepdims=True)


def norm_grad(xhat, g, inv, axes):
    return inv * (g - g.mean(axis=axes, keepdims=True) - xhat * (g * xhat).mean(axis=axes, keepdims=True))


# ---------------------------------------------------------------- channel layout
def _channels_first(x, layout: str):
    """NHWC -> NCHW view (a 2-D [N, C] input is the same in both layouts)."""
    return np.moveaxis(x, -1, 1) if layout == "NHWC" else x


def _channels_back(x, layout: str):
    return np.moveaxis(x, 1, -1) if layout == "NHWC" else x


# ---------------------------------------------------------------- batch_norm
def _global_stats(k) -> bool:
    """Running stats normalise (and are left alone) in test mode, unless statistics are trainable."""
    return (k.attr("is_test") and not k.attr("trainable_statistics")) or k.attr("use_global_stats")


def _momentum(k) -> float:
    tensor = k.optional("MomentumTensor")
    return float(tensor.reshape(-1)[0]) if tensor is not None else k.attr("momentum")


def _affine(k, x):
    """Scale and Bias as per-channel arrays: ones and zeros where the op has none."""
    channels = x.shape[1]
    scale, bias = k.optional("Scale"), k.optional("Bias")
    return (np.ones(channels, x.dtype) if scale is None else scale), (np.zeros(channels, x.dtype) if bias is None
                                                                       else bias)


def _single_value(x) -> bool:
    """One value per channel: Paddle then passes X through unnormalised (and leaves the statistics)."""
    return x.size == x.shape[1]


def _scaled_shifted(x, scale, shift=None):
    """x * scale (+ shift), into x (a temporary of the caller's) where that keeps numpy's result dtype and shape."""
    scaled = np.multiply(x, scale, out=reusable(x, scale))
    return scaled if shift is None else np.add(scaled, shift, out=reusable(scaled, shift))


def _batch_moments(x):
    """Each channel's mean, x centred, and the biased variance: by channel_sums and channel_dots where BLAS takes x,
    else by numpy's means (float16 sums in float32 there)."""
    if by_sample(x) is None:
        axes = not_channel(x)
        mean = x.mean(axis=axes, keepdims=True)
        centred = x - mean
        return mean.reshape(-1), centred, (centred * centred).mean(axis=axes)
    count = x.size // x.shape[1]
    mean = channel_sums(x) / count
    centred = x - per_channel(mean, x)
    return mean, centred, channel_dots(centred, centred) / count


@kernel("batch_norm")
def batch_norm(k):
    layout, eps = k.attr("data_layout"), k.attr("epsilon")
    x = _channels_first(k.x("X"), layout)
    scale, bias = _affine(k, x)
    running_mean, running_var = k.x("Mean"), k.x("Variance")
    mean_out, var_out = running_mean, running_var
    if _global_stats(k):
        mean, var = running_mean, running_var
        centred = x - per_channel(mean, x)
    elif _single_value(x):
        zeros = np.zeros(x.shape[1], x.dtype)
        return {"Y": k.x("X").copy(), "MeanOut": mean_out, "VarianceOut": var_out, "SavedMean": zeros,
                "SavedVariance": zeros, "ReserveSpace": np.empty(0, x.dtype)}
    else:
        mean, centred, var = _batch_moments(x)   # centred kept for y
        m = _momentum(k)
        mean_out, var_out = m * running_mean + (1 - m) * mean, m * running_var + (1 - m) * var
    inv = 1 / np.sqrt(var + eps)
    y = _scaled_shifted(centred, per_channel(inv * scale, x), per_channel(bias, x))
    if k.attr("fuse_with_relu"):   # oneDNN's batch_norm_act_fuse_pass folds the relu after it in here
        y = np.maximum(y, 0)
    return {"Y": _channels_back(y, layout), "MeanOut": mean_out, "VarianceOut": var_out,
            "SavedMean": mean, "SavedVariance": inv, "ReserveSpace": np.empty(0, x.dtype)}


@kernel("batch_norm_grad")
def batch_norm_grad(k):
    """The grad of the forward's mode: Paddle's kernel takes is_test alone as global statistics, which
    is wrong with trainable_statistics (the forward normalised with the batch's)."""
    layout = k.attr("data_layout")
    x = _channels_first(k.x("X"), layout)
    dy = _channels_first(k.x("Y@GRAD"), layout)
    global_stats = _global_stats(k)
    if global_stats:  # the stats are constants: y is affine in x
        mean, inv = k.x("MeanOut"), 1 / np.sqrt(k.x("VarianceOut") + k.attr("epsilon"))
    elif _single_value(x):  # y = x
        return k.grads({"X@GRAD": lambda: k.x("Y@GRAD").copy(), "Scale@GRAD": lambda: np.zeros_like(k.x("Scale")),
                        "Bias@GRAD": lambda: np.zeros_like(k.x("Bias"))})
    else:
        mean, inv = k.x("SavedMean"), k.x("SavedVariance")
    scale, inv = per_channel(_affine(k, x)[0], x), per_channel(inv, x)
    xhat = _scaled_shifted(x - per_channel(mean, x), inv)
    if k.attr("fuse_with_relu"):   # the relu folded into the forward passes no gradient where y was cut to 0
        dy = np.where(_scaled_shifted(xhat, scale, per_channel(_affine(k, x)[1], x)) > 0, dy, 0)
    if global_stats:
        return k.grads({"X@GRAD": lambda: _channels_back(dy * scale * inv, layout),
                        "Scale@GRAD": lambda: channel_dots(dy, xhat), "Bias@GRAD": lambda: channel_sums(dy)})
    # norm_grad with g = dy * scale: the means of g and g * xhat are scale times those of dy and dy * xhat, whose
    # sums are the Bias and Scale grads; so dx = scale * inv * (dy - sum(dy) / n - xhat * sum(dy * xhat) / n),
    # in 4 passes after the sums (norm_grad's 10)
    dbias, dscale = channel_sums(dy), channel_dots(dy, xhat)

    def dx():
        count = x.size // x.shape[1]
        fitted = _scaled_shifted(xhat, per_channel(dscale / count, x), per_channel(dbias / count, x))
        return _channels_back(_scaled_shifted(np.subtract(dy, fitted, out=reusable(fitted, dy)), scale * inv), layout)

    return k.grads({"X@GRAD": dx, "Scale@GRAD": lambda: dscale, "Bias@GRAD": lambda: dbias})


# ---------------------------------------------------------------- layer_norm
def _scale_shift(xhat, scale, bias):
    y = xhat if scale is None else xhat * scale
    return y if bias is None else y + bias


@kernel("layer_norm")
def layer_norm(k):
    x, axis = k.x("X"), k.attr("begin_norm_axis")
    x2 = as_matrix(in_float32(x), axis)
    mean, var = moments(x2, 1)
    y = _scale_shift((x2 - mean) / np.sqrt(var + k.attr("epsilon")), k.optional("Scale"), k.optional("Bias"))
    stats = x.shape[:axis]
    return {"Y": y.reshape(x.shape), "Mean": mean.reshape(stats), "Variance": var.reshape(stats)}


@kernel("layer_norm_grad")
def layer_norm_grad(k):
    x, axis, scale = k.x("X"), k.attr("begin_norm_axis"), k.optional("Scale")
    x2, dy = as_matrix(in_float32(x), axis), as_matrix(in_float32(k.x("Y@GRAD")), axis)
    inv = 1 / np.sqrt(k.x("Variance").reshape(-1, 1) + k.attr("epsilon"))
    xhat = (x2 - k.x("Mean").reshape(-1, 1)) * inv
    return k.grads({"X@GRAD": lambda: norm_grad(xhat, dy if scale is None else dy * scale, inv, 1).reshape(x.shape),
                    "Scale@GRAD": lambda: (dy * xhat).sum(axis=0), "Bias@GRAD": lambda: dy.sum(axis=0)})


# ---------------------------------------------------------------- group_norm
def _groups(k, x):
    """Channels-first x as [N, groups, channels_per_group * spatial]."""
    groups = k.attr("groups")
    if groups < 1 or x.shape[1] % groups:
        raise ValueError(f"groups={groups} must be >= 1 and divide the {x.shape[1]} channels")
    return x.reshape(x.shape[0], groups, -1)


@kernel("group_norm")
def group_norm(k):
    layout = k.attr("data_layout")
    x = _channels_first(k.x("X"), layout)
    xg = _groups(k, x)
    mean, var = moments(xg, 2)
    xhat = ((xg - mean) / np.sqrt(var + k.attr("epsilon"))).reshape(x.shape)
    scale, bias = (None if v is None else per_channel(v, x) for v in (k.optional("Scale"), k.optional("Bias")))
    y = _scale_shift(xhat, scale, bias)
    return {"Y": _channels_back(y, layout), "Mean": mean[..., 0], "Variance": var[..., 0]}


@kernel("group_norm_grad")
def group_norm_grad(k):
    layout, scale = k.attr("data_layout"), k.optional("Scale")
    x = _channels_first(k.x("X"), layout)
    dy = _channels_first(k.x("Y@GRAD"), layout)
    inv = 1 / np.sqrt(k.x("Variance")[..., None] + k.attr("epsilon"))
    xhat = (_groups(k, x) - k.x("Mean")[..., None]) * inv
    axes = not_channel(x)

    def dx():
        g = dy if scale is None else dy * per_channel(scale, x)
        return _channels_back(norm_grad(xhat, _groups(k, g), inv, 2).reshape(x.shape), layout)

    return k.grads({"X@GRAD": dx, "Scale@GRAD": lambda: (dy * xhat.reshape(x.shape)).sum(axis=axes),
                    "Bias@GRAD": lambda: dy.sum(axis=axes)})


# ---------------------------------------------------------------- dropout
def _upscale(k) -> bool:
    return k.attr("dropout_implementation") == "upscale_in_train"


def _kept(k):
    """1 - p as Paddle's kernels take it: 1.0f - p in float32 whatever the dtype (p is a float attribute), in bfloat16
    where the op writes bfloat16."""
    kept = np.float32(1) - np.float32(k.attr("dropout_prob"))
    return round_to_bfloat16(kept) if k.bfloat16 else kept


def _train_scaled(k, values):
    """Kept values as training scales them: divided by that 1 - p in the values' type (everything is dropped when
    p == 1)."""
    if not _upscale(k):
        return values
    return values * 0 if k.attr("dropout_prob") >= 1 else values / values.dtype.type(_kept(k))


def _test_scaled(k, values):
    """Values as inference scales them: by that 1 - p in the values' type where training did not."""
    return values if _upscale(k) else values * values.dtype.type(_kept(k))


def _draws(k, shape) -> np.ndarray:
    """Paddle's uniform draws in [0, 1): of the op's seed (the Seed tensor wins over the seed attr, which counts only
    with fix_seed), else of the global engine."""
    seed = k.optional("Seed")
    seed = int(seed.reshape(-1)[0]) if seed is not None else k.attr("seed") if k.attr("fix_seed") else None
    return paddle_random.canonical(randomness.engine(seed), int(np.prod(shape))).reshape(shape)


@kernel("dropout")
def dropout(k):
    x = k.x("X")
    if k.attr("is_test"):  # nothing is dropped: the mask is all ones
        return {"Out": _test_scaled(k, x), "Mask": np.ones(x.shape, np.uint8)}
    mask = (_draws(k, x.shape) >= np.float32(k.attr("dropout_prob"))).astype(np.uint8)
    return {"Out": _train_scaled(k, x * mask), "Mask": mask}


@kernel("dropout_grad")
def dropout_grad(k):
    dout = k.x("Out@GRAD")
    if k.attr("is_test"):
        return {"X@GRAD": _test_scaled(k, dout)}
    return {"X@GRAD": _train_scaled(k, dout * k.x("Mask"))}


# ---------------------------------------------------------------- embeddings
def padding_of(ids: np.ndarray, padding_idx: int) -> np.ndarray:
    """Where ids are the padding id; -1 is Paddle's kNoPadding, which no id matches (an id of -1 is out of range)."""
    return ids == padding_idx if padding_idx != -1 else np.zeros(ids.shape, bool)


def _ids(k, rows: int):
    """Ids as int64, checked against the table (padding ids need not be valid rows)."""
    ids = k.x("Ids").astype(np.int64)
    bad = ((ids < 0) | (ids >= rows)) & ~padding_of(ids, k.attr("padding_idx"))
    if bad.any():
        raise ValueError(f"id {ids[bad][0]} is out of range for a table of {rows} rows")
    return ids


@kernel("lookup_table_v2", "lookup_table")
def lookup_table_v2(k):
    w = k.x("W")
    ids = _ids(k, w.shape[0])
    if k.op.type == "lookup_table":   # v1: Ids end in a dim of 1, which the output drops
        ids = ids.reshape(ids.shape[:-1])
    padding = padding_of(ids, k.attr("padding_idx"))
    out = w[np.where(padding, 0, ids)]
    out[padding] = 0
    return {"Out": out}


@kernel("lookup_table_v2_grad", "lookup_table_grad")
def lookup_table_v2_grad(k):
    w, dout = k.x("W"), k.x("Out@GRAD")
    ids = _ids(k, w.shape[0]).reshape(-1)
    rows = dout.reshape(ids.size, w.shape[1])
    keep = ~padding_of(ids, k.attr("padding_idx"))
    dw = np.zeros(w.shape, dout.dtype)
    np.add.at(dw, ids[keep], rows[keep])
    return {"W@GRAD": dw}


@kernel("one_hot_v2")
def one_hot_v2(k):
    x = k.x("X").astype(np.int64)
    depth = int(k.x("depth_tensor").reshape(-1)[0]) if k.has("depth_tensor") else k.attr("depth")
    bad = (x < 0) | (x >= depth)
    if bad.any() and not k.attr("allow_out_of_range"):
        raise ValueError(f"index {x[bad][0]} is out of range for depth {depth}")
    dtype = numpy_dtype(k.attr("dtype"))
    check_shape([*x.shape, depth], dtype, "the one-hot tensor")
    return {"Out": (x[..., None] == np.arange(depth)).astype(dtype)}
