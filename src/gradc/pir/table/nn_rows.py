"""Rows: convolution, pooling, normalization, dropout, embedding and losses."""

from __future__ import annotations

from . import row
from .hooks import batch_norm_affine

CONV = "strides:i32s paddings:i32s padding_algorithm:str dilations:i32s groups:i32 data_format:str"
BATCH_NORM = ("is_test:bool momentum:f32 epsilon:f32 data_format=data_layout:str use_global_stats:bool "
              "trainable_statistics:bool")

ROWS = [
    row("pd_op.conv2d", "conv2d", "input:Input filter:Filter", "out:Output", CONV),
    row("pd_op.depthwise_conv2d", "depthwise_conv2d", "input:Input filter:Filter", "out:Output", CONV),
    row("pd_op.conv2d_transpose", "conv2d_transpose", "x:Input filter:Filter output_size>output_size:ints",
        "out:Output", "strides:i32s paddings:i32s output_padding:i32s padding_algorithm:str groups:i32 "
                      "dilations:i32s data_format:str"),
    row("pd_op.pool2d", "pool2d", "x:X kernel_size>ksize:ints", "out:Out",
        "strides:i64s paddings:i64s ceil_mode:bool exclusive:bool data_format:str pooling_type:str "
        "global_pooling:bool adaptive:bool padding_algorithm:str"),
    # the running mean and variance are updated in place, as legacy MeanOut / VarianceOut are
    row("pd_op.batch_norm_", "batch_norm", "x:X mean:Mean variance:Variance scale?:Scale bias?:Bias",
        "out:Y mean_out:MeanOut&mean variance_out:VarianceOut&variance saved_mean:SavedMean "
        "saved_variance:SavedVariance reserve_space:ReserveSpace", BATCH_NORM, hook=batch_norm_affine),
    row("pd_op.layer_norm", "layer_norm", "x:X scale?:Scale bias?:Bias", "out:Y mean:Mean variance:Variance",
        "epsilon:f32 begin_norm_axis:i32"),
    row("pd_op.group_norm", "group_norm", "x:X scale?:Scale bias?:Bias", "y:Y mean:Mean variance:Variance",
        "epsilon:f64 groups:i32 data_format=data_layout:str"),
    row("pd_op.dropout", "dropout", "x:X seed_tensor?:Seed p>dropout_prob:float", "out:Out mask:Mask",
        "is_test:bool mode=dropout_implementation:str seed:i32 fix_seed:bool"),
    row("pd_op.embedding", "lookup_table_v2", "x:Ids weight:W", "out:Out", "padding_idx:i64 sparse=-:bool"),
    # losses
    row("pd_op.cross_entropy_with_softmax", "softmax_with_cross_entropy", "input:Logits label:Label",
        "softmax:Softmax loss:Loss", "soft_label:bool use_softmax:bool numeric_stable_mode:bool ignore_index:i32 "
                                     "axis:i32"),
    row("pd_op.bce_loss", "bce_loss", "input:X label:Label"),
    row("pd_op.sigmoid_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
        "x:X label:Label pos_weight?:pos_weight", "out:Out", "normalize:bool ignore_index:i32"),
    row("pd_op.kldiv_loss", "kldiv_loss", "x:X label:Target", "out:Loss", "reduction:str log_target:bool"),
    row("pd_op.huber_loss", "huber_loss", "input:X label:Y", "out:Out residual:Residual", "delta:f32"),
]
