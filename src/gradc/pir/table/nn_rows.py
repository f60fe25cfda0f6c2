"""Rows: convolution, pooling, normalization, dropout, embedding and losses."""

from __future__ import annotations

from . import row
from .hooks import batch_norm_affine, rnn_byte_buffers, w_out_like_w, without_w_out

CONV = "strides:i32s paddings:i32s padding_algorithm:str dilations:i32s groups:i32 data_format:str"
RNN = "dropout_prob:f32 is_bidirec:bool input_size:i32 hidden_size:i32 num_layers:i32 mode:str seed:i32 is_test:bool"
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
    row("pd_op.instance_norm", "instance_norm", "x:X scale?:Scale bias?:Bias",
        "y:Y saved_mean:SavedMean saved_variance:SavedVariance", "epsilon:f32"),
    row("pd_op.spectral_norm", "spectral_norm", "weight:Weight u:U v:V", "out:Out", "dim:i32 power_iters:i32 eps:f32"),
    row("pd_op.embedding", "lookup_table_v2", "x:Ids weight:W", "out:Out", "padding_idx:i64 sparse=-:bool"),
    row("pd_op.bilinear", "bilinear_tensor_product", "x:X y:Y weight:Weight bias?:Bias"),
    # the fused recurrent op; PIR also hands it the dropout state buffer it updates in place, which legacy
    # programs only name as the DropoutState output
    row("pd_op.rnn", "rnn",
        "x:Input pre_state:PreState* weight_list:WeightList* sequence_length?:SequenceLength dropout_state_in:-",
        "out:Out dropout_state_out:DropoutState&dropout_state_in state:State* reserve:Reserve", RNN,
        hook=rnn_byte_buffers),
    # losses
    row("pd_op.cross_entropy_with_softmax", "softmax_with_cross_entropy", "input:Logits label:Label",
        "softmax:Softmax loss:Loss", "soft_label:bool use_softmax:bool numeric_stable_mode:bool ignore_index:i32 "
                                     "axis:i32"),
    row("pd_op.bce_loss", "bce_loss", "input:X label:Label"),
    row("pd_op.sigmoid_cross_entropy_with_logits", "sigmoid_cross_entropy_with_logits",
        "x:X label:Label pos_weight?:pos_weight", "out:Out", "normalize:bool ignore_index:i32"),
    row("pd_op.kldiv_loss", "kldiv_loss", "x:X label:Target", "out:Loss", "reduction:str log_target:bool"),
    row("pd_op.huber_loss", "huber_loss", "input:X label:Y", "out:Out residual:Residual", "delta:f32"),
    row("pd_op.nll_loss", "nll_loss", "input:X label:Label weight?:Weight", "out:Out total_weight:Total_weight",
        "ignore_index:i64 reduction:str"),
    row("pd_op.label_smooth", "label_smooth", "label:X prior_dist?:PriorDist", "out:Out", "epsilon:f32"),
    row("pd_op.hsigmoid_loss", "hierarchical_sigmoid", "x:X label:Label w:W bias?:Bias path?:PathTable code?:PathCode",
        "out:Out pre_out:PreOut w_out:W_Out", "num_classes:i32 is_sparse:bool", hook=w_out_like_w,
        back=without_w_out),
    row("pd_op.warpctc", "warpctc", "logits:Logits label:Label logits_length?:LogitsLength labels_length?:LabelLength",
        "loss:Loss warpctcgrad:WarpCTCGrad", "blank:i32 norm_by_times:bool"),
    row("pd_op.warprnnt", "warprnnt", "input:input label:label input_lengths:input_lengths label_lengths:label_lengths",
        "loss:loss warprnntgrad:warprnntgrad", "blank:i32 fastemit_lambda:f32"),
]
