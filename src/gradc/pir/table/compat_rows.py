"""Rows: ops of Paddle 3's PIR-only API branches (gradc.ops.compat): paddle.compat's max / min with indices and
slogdet_v2, F.embedding with scale_grad_by_freq, paddle.amp.debugging's nan/inf check markers; F.interpolate with
antialias (gradc.ops.interp_antialias); and SyncBatchNorm's sync_batch_norm_, which gradc's executor (one process)
runs as batch_norm."""

from __future__ import annotations

from ...ir import AttrType
from . import row
from .nn_rows import BATCH_NORM

WITH_INDEX = "x:x values:values indices:indices values_grad:values@GRAD"
AA_INPUTS = "x:x out_size?:out_size size_tensor?:size_tensor* scale_tensor?:scale_tensor"
AA = "data_format:str out_d:i32 out_h:i32 out_w:i32 scale:f64s interp_method:str align_corners:bool align_mode:i32"
BATCH_NORM_GRAD = ("momentum:f32 epsilon:f32 data_format=data_layout:str is_test:bool use_global_stats:bool "
                   "trainable_statistics:bool")


def running_stats(legacy, op, ctx) -> None:
    """PIR's sync_batch_norm_grad reads no running statistics; batch_norm_grad reads them (with global statistics):
    those its forward updated, found by the SavedMean it wrote."""
    saved = legacy.input("SavedMean")[0]
    forward = next((fwd for fwd in reversed(ctx.block.ops)
                    if fwd.type == "batch_norm" and fwd.output("SavedMean") == [saved]), None)
    if forward is None:
        raise ctx.fail(op, f"no sync_batch_norm_ before it writes its saved mean {saved}")
    legacy.inputs["MeanOut"], legacy.inputs["VarianceOut"] = forward.output("MeanOut"), forward.output("VarianceOut")


def integral_dim(legacy, op, ctx) -> None:
    """Paddle types the grad op's dim float32 (its forward's int64): the legacy op keeps it an integer."""
    legacy.set_attr("dim", int(legacy.attrs.get("dim", 0)), AttrType.LONG)


ROWS = [
    row("pd_op.max_with_index", "max_with_index", "x:x", "values:values indices:indices",
        "dim:i64 keepdim:bool flatten:bool"),
    row("pd_op.min_with_index", "min_with_index", "x:x", "values:values indices:indices",
        "dim:i64 keepdim:bool flatten:bool"),
    row("pd_op.max_with_index_grad", "max_with_index_grad", WITH_INDEX, "x_grad:x@GRAD", "dim:f32 keepdim:bool",
        hook=integral_dim),
    row("pd_op.min_with_index_grad", "min_with_index_grad", WITH_INDEX, "x_grad:x@GRAD", "dim:f32 keepdim:bool",
        hook=integral_dim),
    row("pd_op.slogdet_v2", "slogdet_v2", "x:x", "sign:sign logdet:logdet"),
    row("pd_op.slogdet_v2_grad", "slogdet_v2_grad",
        "x:x sign:sign logdet:logdet sign_grad:sign@GRAD logdet_grad:logdet@GRAD", "x_grad:x@GRAD"),
    row("pd_op.embedding_with_scaled_gradient", "embedding_with_scaled_gradient", "x:x weight:weight", "out:out",
        "padding_idx:i64"),
    row("pd_op.embedding_with_scaled_gradient_grad", "embedding_with_scaled_gradient_grad",
        "x:x weight:weight out_grad:out@GRAD", "weight_grad:weight@GRAD", "padding_idx:i64"),
    row("pd_op.enable_check_model_nan_inf", "enable_check_model_nan_inf", "x:x", "out:out", "flag:i32"),
    row("pd_op.disable_check_model_nan_inf", "disable_check_model_nan_inf", "x:x", "out:out", "flag:i32"),
    row("pd_op.enable_check_model_nan_inf_grad", "enable_check_model_nan_inf_grad", "out_grad:out@GRAD",
        "x_grad:x@GRAD", "unsetflag:i32"),
    row("pd_op.disable_check_model_nan_inf_grad", "disable_check_model_nan_inf_grad", "out_grad:out@GRAD",
        "x_grad:x@GRAD", "unsetflag:i32"),
    row("pd_op.interp_antialias", "interp_antialias", AA_INPUTS, "output:output", AA),
    row("pd_op.interp_antialias_grad", "interp_antialias_grad", AA_INPUTS + " output_grad:output@GRAD",
        "x_grad:x@GRAD", AA),
    # one process: the batch's statistics are the global batch's; export writes batch_norm_ (its row comes first)
    row("pd_op.sync_batch_norm_", "batch_norm", "x:X mean:Mean variance:Variance scale:Scale bias:Bias",
        "out:Y mean_out:MeanOut&mean variance_out:VarianceOut&variance saved_mean:SavedMean "
        "saved_variance:SavedVariance reserve_space:ReserveSpace", BATCH_NORM),
    row("pd_op.sync_batch_norm_grad", "batch_norm_grad",
        "x:X scale:Scale bias:Bias saved_mean:SavedMean saved_variance:SavedVariance reserve_space?:ReserveSpace "
        "out_grad:Y@GRAD ~MeanOut ~VarianceOut", "x_grad:X@GRAD scale_grad:Scale@GRAD bias_grad:Bias@GRAD",
        BATCH_NORM_GRAD, hook=running_stats),
]
