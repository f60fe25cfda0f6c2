"""Normalisation, dropout and embedding ops: batch_norm, layer_norm, group_norm, dropout,
lookup_table_v2, lookup_table (v1), one_hot_v2.

Statistics outputs (running stats, saved mean/inverse std, Mask) are never differentiated: the
grad ops read them as constants of the forward pass.
"""

from __future__ import annotations

from ..ir import AttrType, VarType
from ..registry import NO_GRAD, GradOp, defop, grad_op, typed
from ..shapes import dims_match, numel


def _channel_axis(ctx, x) -> int:
    """Channels sit at axis 1 (NCHW) or last (NHWC); a 2-D input is [N, C] either way."""
    if not 2 <= len(x) <= 5:
        ctx.fail(f"X must have rank 2 to 5 (N, C, ...), got shape {x}")
    if ctx.attr("data_layout") not in ("NCHW", "NHWC", "AnyLayout"):
        ctx.fail(f"data_layout {ctx.attr('data_layout')!r} is not NCHW or NHWC")
    return len(x) - 1 if ctx.attr("data_layout") == "NHWC" else 1


def stats_dtype(dtype):
    """The dtype of a norm's statistics: float32 for a float16 or bfloat16 X, as Paddle declares them."""
    return VarType.FP32 if dtype in (VarType.FP16, VarType.BF16) else dtype


def _check_vector(ctx, slot: str, size: int) -> None:
    shape = ctx.shape(slot) if ctx.has(slot) else None
    if shape is not None and (len(shape) != 1 or not dims_match(shape[0], size)):
        ctx.fail(f"{slot} must be a vector of size {size}, got shape {shape}")


# ---------------------------------------------------------------- batch_norm
def _batch_norm_infer(ctx):
    x, dtype = ctx.shape("X"), ctx.dtype("X")
    channels = x[_channel_axis(ctx, x)]
    for slot in ("Scale", "Bias", "Mean", "Variance"):
        _check_vector(ctx, slot, channels)
    stats = ([channels], ctx.dtype("Scale") or stats_dtype(dtype))
    # Paddle: the saved statistics get no shape in test mode; the reserve space is a backend buffer whose
    # dtype varies (float32 in legacy programs, uint8 in PIR's)
    saved = stats if not ctx.attr("is_test") or ctx.attr("trainable_statistics") else (None, stats[1])
    return {"Y": (x, dtype), "MeanOut": stats, "VarianceOut": stats, "SavedMean": saved,
            "SavedVariance": saved, "ReserveSpace": ([-1], None)}


class _BatchNormGrad(GradOp):
    """Paddle's maker: in the global-statistics modes (use_global_stats or is_test) its batch_norm_grad also
    reads the running statistics under the forward's slot names Mean and Variance, and Paddle's kernel
    crashes without them. gradc's kernel reads MeanOut/VarianceOut, the same vars; Mean and Variance are
    not declared because Paddle's grad-op record (op_protos.json) was probed with the default attributes."""

    def __call__(self, g):
        ops = super().__call__(g)
        if g.attr("use_global_stats") or g.attr("is_test"):
            ops[0].inputs.update(Mean=list(g.O("MeanOut")), Variance=list(g.O("VarianceOut")))
        return ops


# MeanOut/VarianceOut are the Mean/Variance vars, updated in place; the grad reads them (Paddle's
# slot names) for the global-stats mode, SavedMean/SavedVariance (= 1/sqrt(var + eps)) otherwise.
defop("batch_norm", ["X", "Scale?", "Bias?", "Mean", "Variance", "MomentumTensor?"],
      ["Y", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace?!"],
      attrs={"momentum": 0.9, "epsilon": 1e-5, "is_test": False, "use_global_stats": False,
             "trainable_statistics": False, "data_layout": "NCHW", "fuse_with_relu": False},
      no_grad_inputs=["Mean", "Variance", "MomentumTensor"],
      no_grad_outputs=["MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace"],
      infer=_batch_norm_infer,
      grad=_BatchNormGrad(("X", "Scale", "Bias", "MeanOut", "VarianceOut", "SavedMean", "SavedVariance",
                           "ReserveSpace")))


# ---------------------------------------------------------------- layer_norm
def _layer_norm_infer(ctx):
    x, dtype = ctx.shape("X"), ctx.dtype("X")
    axis = ctx.attr("begin_norm_axis")
    if not 0 < axis < len(x):
        ctx.fail(f"begin_norm_axis {axis} is out of range for X of rank {len(x)}")
    for slot in ("Scale", "Bias"):
        _check_vector(ctx, slot, numel(x[axis:]))
    stats = (x[:axis], stats_dtype(dtype))
    return {"Y": (x, dtype), "Mean": stats, "Variance": stats}


defop("layer_norm", ["X", "Scale?", "Bias?"], ["Y", "Mean", "Variance"],
      attrs={"epsilon": 1e-5, "begin_norm_axis": 1, "is_test": False},
      no_grad_outputs=["Mean", "Variance"], infer=_layer_norm_infer,
      grad=grad_op("X", "Scale", "Bias", "Mean", "Variance"))


# ---------------------------------------------------------------- group_norm
def _group_norm_infer(ctx):
    x, dtype = ctx.shape("X"), ctx.dtype("X")
    channels, groups = x[_channel_axis(ctx, x)], ctx.attr("groups")
    if groups < 1 or (channels >= 0 and channels % groups):
        ctx.fail(f"groups={groups} must be >= 1 and divide the {channels} channels")
    for slot in ("Scale", "Bias"):
        _check_vector(ctx, slot, channels)
    stats = ([x[0], groups], stats_dtype(dtype))
    return {"Y": (x, dtype), "Mean": stats, "Variance": stats}


defop("group_norm", ["X", "Scale?", "Bias?"], ["Y", "Mean", "Variance"],
      attrs={"epsilon": 1e-5, "groups": -1, "data_layout": "NCHW"},
      no_grad_outputs=["Mean", "Variance"], infer=_group_norm_infer,
      grad=grad_op("X", "Scale", "Bias", "Y", "Mean", "Variance"))


# ---------------------------------------------------------------- dropout
# The grad reads the Mask (uint8), not X, so the same units are dropped forward and backward.
def _dropout_infer(ctx):
    if not 0 <= ctx.attr("dropout_prob") <= 1:
        ctx.fail(f"dropout_prob {ctx.attr('dropout_prob')} is not in [0, 1]")
    if ctx.attr("dropout_implementation") not in ("downgrade_in_infer", "upscale_in_train"):
        ctx.fail(f"dropout_implementation {ctx.attr('dropout_implementation')!r} is not 'downgrade_in_infer' or "
                 f"'upscale_in_train'")
    return {"Out": (ctx.shape("X"), ctx.dtype("X")), "Mask": (ctx.shape("X"), VarType.UINT8)}


defop("dropout", ["X", "Seed?"], ["Out", "Mask!"],
      attrs={"dropout_prob": 0.5, "is_test": False, "fix_seed": False, "seed": 0,
             "dropout_implementation": "downgrade_in_infer"},
      no_grad_inputs=["Seed"], no_grad_outputs=["Mask"], infer=_dropout_infer, grad=grad_op("Mask"),
      tensor_attrs=["dropout_prob"])


# ---------------------------------------------------------------- embeddings
def _row_dtype(ctx) -> int:
    """W's dtype, but for an int8 table's rows declared float32: PaddleSlim's quant_embedding declares them so (and
    dequantizes them next), and they hold the codes exactly."""
    names = ctx.op.outputs.get("Out") or [None]
    declared = ctx.block.find_var(names[0]) if names[0] else None
    if ctx.dtype("W") == VarType.INT8 and declared is not None and declared.dtype == VarType.FP32:
        return VarType.FP32
    return ctx.dtype("W")


def _lookup_infer(ctx):
    w = ctx.shape("W")
    if len(w) != 2:
        ctx.fail(f"W must be a 2-D table, got shape {w}")
    return {"Out": (ctx.shape("Ids") + [w[1]], _row_dtype(ctx))}


defop("lookup_table_v2", ["W", "Ids"],
      attrs={"padding_idx": typed(-1, AttrType.LONG), "is_sparse": False, "is_distributed": False},
      no_grad_inputs=["Ids"], infer=_lookup_infer, grad=grad_op("W", "Ids"))


def _lookup_v1_infer(ctx):
    """v1 (fluid 1.x's embedding): Ids end in a dim of 1, which the output drops."""
    ids = ctx.shape("Ids")
    if not ids or ids[-1] not in (1, -1):
        ctx.fail(f"the last dim of Ids must be 1, got shape {ids}")
    w = ctx.shape("W")
    if len(w) != 2:
        ctx.fail(f"W must be a 2-D table, got shape {w}")
    return {"Out": (ids[:-1] + [w[1]], _row_dtype(ctx))}


# the parameter-server attributes (epmap, table_names, ...) are Paddle's; gradc runs the table locally
defop("lookup_table", ["W", "Ids"],
      attrs={"padding_idx": typed(-1, AttrType.LONG), "is_sparse": False, "is_distributed": False, "is_test": False,
             "remote_prefetch": False, "grad_inplace": False, "entry": "none", "entry_config": "",
             "table_class": "none", "trainer_id": 0, "epmap": typed([], AttrType.STRINGS),
             "table_names": typed([], AttrType.STRINGS), "height_sections": typed([], AttrType.LONGS)},
      no_grad_inputs=["Ids"], infer=_lookup_v1_infer, grad=grad_op("W", "Ids"))


def _one_hot_infer(ctx):
    depth = -1 if ctx.has("depth_tensor") else ctx.attr("depth")
    return {"Out": (ctx.shape("X") + [depth], VarType(ctx.attr("dtype")))}


defop("one_hot_v2", ["X", "depth_tensor?"],
      attrs={"depth": -1, "dtype": int(VarType.FP32), "allow_out_of_range": False},
      infer=_one_hot_infer, grad=NO_GRAD)
