"""Rows: gradient ops (`pd_op.<op>_grad` <-> legacy `<type>_grad`), for PIR training programs in both
directions. A grad the program does not need is a NULL-typed PIR result and an empty legacy slot."""

from __future__ import annotations

from . import row
from .hooks import batch_norm_affine, transpose_grad_xshape
from .nn_rows import BATCH_NORM, CONV

AXIS = {"axis": -1}
POOL = ("strides:i64s paddings:i64s ceil_mode:bool exclusive:bool data_format:str pooling_type:str "
        "global_pooling:bool adaptive:bool padding_algorithm:str")
UNARY = "x:X out_grad:Out@GRAD"      # grads that read the forward input
BY_OUT = "out:Out out_grad:Out@GRAD"  # grads that read the forward output
X_GRAD = "x_grad:X@GRAD"
XY_GRADS = "x_grad:X@GRAD y_grad:Y@GRAD"
REDUCE = "keepdim=keep_dim:bool reduce_all:bool"

ROWS = [
    row("pd_op.add_grad", "elementwise_add_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS, "axis:i32=-1"),
    row("pd_op.subtract_grad", "elementwise_sub_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS, "axis:i32=-1"),
    row("pd_op.multiply_grad", "elementwise_mul_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS, "axis:i32=-1"),
    row("pd_op.divide_grad", "elementwise_div_grad", "x:X y:Y out:Out out_grad:Out@GRAD", XY_GRADS, "axis:i32=-1"),
    row("pd_op.maximum_grad", "elementwise_max_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS, fixed=AXIS),
    row("pd_op.minimum_grad", "elementwise_min_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS, fixed=AXIS),
    row("pd_op.elementwise_pow_grad", "elementwise_pow_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS, fixed=AXIS),
    row("pd_op.matmul_grad", "matmul_v2_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS,
        "transpose_x=trans_x:bool transpose_y=trans_y:bool"),
    row("pd_op.bmm_grad", "bmm_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS),
    row("pd_op.where_grad", "where_grad", "condition:Condition x:X y:Y out_grad:Out@GRAD", XY_GRADS),
    row("pd_op.abs_grad", "abs_grad", UNARY, X_GRAD),
    row("pd_op.log_grad", "log_grad", UNARY, X_GRAD),
    row("pd_op.square_grad", "square_grad", UNARY, X_GRAD),
    row("pd_op.swish_grad", "swish_grad", UNARY, X_GRAD),
    row("pd_op.hardswish_grad", "hard_swish_grad", UNARY, X_GRAD),
    row("pd_op.gelu_grad", "gelu_grad", UNARY, X_GRAD, "approximate:bool"),
    row("pd_op.leaky_relu_grad", "leaky_relu_grad", UNARY, X_GRAD, "negative_slope=alpha:f64"),
    row("pd_op.softplus_grad", "softplus_grad", UNARY, X_GRAD, "beta:f64 threshold:f64"),
    row("pd_op.pow_grad", "pow_grad", UNARY, X_GRAD, "y=factor:f32"),
    row("pd_op.exp_grad", "exp_grad", BY_OUT, X_GRAD),
    row("pd_op.relu_grad", "relu_grad", BY_OUT, X_GRAD),
    row("pd_op.relu6_grad", "relu6_grad", BY_OUT, X_GRAD),
    row("pd_op.sigmoid_grad", "sigmoid_grad", BY_OUT, X_GRAD),
    row("pd_op.tanh_grad", "tanh_grad", BY_OUT, X_GRAD),
    row("pd_op.sqrt_grad", "sqrt_grad", BY_OUT, X_GRAD),
    row("pd_op.rsqrt_grad", "rsqrt_grad", BY_OUT, X_GRAD),
    row("pd_op.softmax_grad", "softmax_grad", BY_OUT, X_GRAD, "axis:i32"),
    row("pd_op.log_softmax_grad", "log_softmax_grad", BY_OUT, X_GRAD, "axis:i32"),
    row("pd_op.hardsigmoid_grad", "hard_sigmoid_grad", BY_OUT, X_GRAD, "slope:f32 offset:f32"),
    row("pd_op.elu_grad", "elu_grad", "x:X out:Out out_grad:Out@GRAD", X_GRAD, "alpha:f32"),
    row("pd_op.silu_grad", "silu_grad", "x:X out:Out out_grad:Out@GRAD", X_GRAD),
    row("pd_op.clip_grad", "clip_grad", "x:X out_grad:Out@GRAD min>min:float max>max:float", X_GRAD),
    row("pd_op.cumsum_grad", "cumsum_grad", "x:X out_grad:Out@GRAD axis>axis:int", X_GRAD,
        "flatten:bool exclusive:bool reverse:bool"),
    # reductions
    row("pd_op.mean_grad", "reduce_mean_grad", "x:X out_grad:Out@GRAD axis>dim:ints", X_GRAD, REDUCE),
    row("pd_op.sum_grad", "reduce_sum_grad", "x:X out_grad:Out@GRAD axis>dim:ints", X_GRAD, REDUCE),
    row("pd_op.max_grad", "reduce_max_grad", "x:X out:Out out_grad:Out@GRAD axis>dim:ints", X_GRAD, REDUCE),
    row("pd_op.min_grad", "reduce_min_grad", "x:X out:Out out_grad:Out@GRAD axis>dim:ints", X_GRAD, REDUCE),
    row("pd_op.prod_grad", "reduce_prod_grad", "x:X out:Out out_grad:Out@GRAD axis>dim:ints", X_GRAD, REDUCE),
    row("pd_op.mean_all_grad", "mean_grad", UNARY, X_GRAD),
    row("pd_op.p_norm_grad", "p_norm_grad", "x:X out:Out out_grad:Out@GRAD", X_GRAD,
        "porder:f32 axis:i32 epsilon:f32 keepdim:bool asvector:bool"),
    # shapes: legacy grads of reshape-like ops read XShape where PIR reads the forward input
    row("pd_op.reshape_grad", "reshape2_grad", "x:XShape out_grad:Out@GRAD", X_GRAD),
    row("pd_op.flatten_grad", "flatten_contiguous_range_grad", "x:XShape out_grad:Out@GRAD", X_GRAD),
    row("pd_op.squeeze_grad", "squeeze2_grad", "x:XShape out_grad:Out@GRAD axis>axes:ints", X_GRAD),
    row("pd_op.unsqueeze_grad", "unsqueeze2_grad", "x:XShape out_grad:Out@GRAD axis>axes:ints", X_GRAD),
    row("pd_op.transpose_grad", "transpose2_grad", "out_grad:Out@GRAD ~XShape", X_GRAD, "perm=axis:i32s",
        hook=transpose_grad_xshape),
    row("pd_op.concat_grad", "concat_grad", "x:X* out_grad:Out@GRAD axis>axis:int", "x_grad:X@GRAD*"),
    row("pd_op.stack_grad", "stack_grad", "x:X* out_grad:Y@GRAD", "x_grad:X@GRAD*", "axis:i32"),
    row("pd_op.unstack_grad", "unstack_grad", "out_grad:Y@GRAD*", X_GRAD, "axis:i32"),
    row("pd_op.slice_grad", "slice_grad", "input:Input out_grad:Out@GRAD starts>starts:ints ends>ends:ints",
        "input_grad:Input@GRAD", "axes:i64s infer_flags:i64s decrease_axis:i64s"),
    row("pd_op.strided_slice_grad", "strided_slice_grad",
        "x:Input out_grad:Out@GRAD starts>starts:ints ends>ends:ints strides>strides:ints", "x_grad:Input@GRAD",
        "axes:i32s"),
    row("pd_op.tile_grad", "tile_grad", "x:X out_grad:Out@GRAD repeat_times>repeat_times:ints", X_GRAD),
    row("pd_op.expand_grad", "expand_v2_grad", "x:X out_grad:Out@GRAD shape>shape:ints", X_GRAD),
    row("pd_op.expand_as_grad", "expand_as_v2_grad", UNARY, X_GRAD, "target_shape:i64s"),
    row("pd_op.gather_grad", "gather_grad", "x:X index:Index out_grad:Out@GRAD axis>axis:int", X_GRAD),
    row("pd_op.gather_nd_grad", "gather_nd_grad", "x:X index:Index out_grad:Out@GRAD", X_GRAD),
    row("pd_op.scatter_grad", "scatter_grad", "index:Ids updates:Updates out_grad:Out@GRAD",
        "x_grad:X@GRAD updates_grad:Updates@GRAD", "overwrite:bool"),
    row("pd_op.pad3d_grad", "pad3d_grad", "x:X out_grad:Out@GRAD paddings>paddings:ints", X_GRAD,
        "mode:str pad_value=value:f64 data_format:str"),
    row("pd_op.topk_grad", "top_k_v2_grad", "x:X indices:Indices out_grad:Out@GRAD k>k:int", X_GRAD,
        "axis:i32 largest:bool sorted:bool"),
    # nn
    row("pd_op.conv2d_grad", "conv2d_grad", "input:Input filter:Filter out_grad:Output@GRAD",
        "input_grad:Input@GRAD filter_grad:Filter@GRAD", CONV),
    row("pd_op.depthwise_conv2d_grad", "depthwise_conv2d_grad", "input:Input filter:Filter out_grad:Output@GRAD",
        "input_grad:Input@GRAD filter_grad:Filter@GRAD", CONV),
    row("pd_op.conv2d_transpose_grad", "conv2d_transpose_grad",
        "x:Input filter:Filter out_grad:Output@GRAD output_size>output_size:ints",
        "x_grad:Input@GRAD filter_grad:Filter@GRAD", "strides:i32s paddings:i32s output_padding:i32s "
                                                     "padding_algorithm:str groups:i32 dilations:i32s data_format:str"),
    row("pd_op.pool2d_grad", "pool2d_grad", "x:X out:Out out_grad:Out@GRAD kernel_size>ksize:ints", X_GRAD, POOL),
    row("pd_op.batch_norm_grad", "batch_norm_grad",
        "x:X scale?:Scale bias?:Bias mean_out:MeanOut variance_out:VarianceOut saved_mean:SavedMean "
        "saved_variance:SavedVariance reserve_space?:ReserveSpace out_grad:Y@GRAD ~Mean ~Variance",  # ~: copies
        "x_grad:X@GRAD scale_grad:Scale@GRAD bias_grad:Bias@GRAD", BATCH_NORM, hook=batch_norm_affine),
    row("pd_op.layer_norm_grad", "layer_norm_grad",
        "x:X scale?:Scale bias?:Bias mean:Mean variance:Variance out_grad:Y@GRAD",
        "x_grad:X@GRAD scale_grad:Scale@GRAD bias_grad:Bias@GRAD", "epsilon:f32 begin_norm_axis:i32"),
    row("pd_op.group_norm_grad", "group_norm_grad",
        "x:X scale?:Scale bias?:Bias y:Y mean:Mean variance:Variance y_grad:Y@GRAD",
        "x_grad:X@GRAD scale_grad:Scale@GRAD bias_grad:Bias@GRAD",
        "epsilon:f64 groups:i32 data_format=data_layout:str"),
    row("pd_op.dropout_grad", "dropout_grad", "mask:Mask out_grad:Out@GRAD p>dropout_prob:float", X_GRAD,
        "is_test:bool mode=dropout_implementation:str"),
    row("pd_op.embedding_grad", "lookup_table_v2_grad", "x:Ids weight:W out_grad:Out@GRAD", "weight_grad:W@GRAD",
        "padding_idx:i64"),
    # losses
    row("pd_op.cross_entropy_with_softmax_grad", "softmax_with_cross_entropy_grad",
        "label:Label softmax:Softmax loss_grad:Loss@GRAD", "input_grad:Logits@GRAD",
        "soft_label:bool use_softmax:bool numeric_stable_mode:bool ignore_index:i32 axis:i32"),
    row("pd_op.bce_loss_grad", "bce_loss_grad", "input:X label:Label out_grad:Out@GRAD", "input_grad:X@GRAD"),
    row("pd_op.sigmoid_cross_entropy_with_logits_grad", "sigmoid_cross_entropy_with_logits_grad",
        "x:X label:Label pos_weight?:pos_weight out_grad:Out@GRAD", X_GRAD, "normalize:bool ignore_index:i32"),
    row("pd_op.kldiv_loss_grad", "kldiv_loss_grad", "x:X label:Target out_grad:Loss@GRAD", X_GRAD,
        "reduction:str log_target:bool"),
    row("pd_op.huber_loss_grad", "huber_loss_grad", "residual:Residual out_grad:Out@GRAD",
        "input_grad:X@GRAD label_grad:Y@GRAD", "delta:f32"),
]
