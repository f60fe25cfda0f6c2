"""Rows: the PIR ops of the tensor_api family: trigonometry, triangles, tensor-API functions of
indices and counts, losses, draws, and their grads."""

from __future__ import annotations

from . import row
from .grad_rows import UNARY, X_GRAD
from .hooks import arange_dtype, arange_dtype_back, is_lower, is_upper, repeats_tensor, unique_types
from .math_rows import ALL_AXES

SHIFTS = "shifts>shifts:ints@ShiftsTensor"
LOWER = {"fixed": {"lower": True}, "when": is_lower}
UPPER = {"fixed": {"lower": False}, "when": is_upper}
PUT_ALONG = "axis=Axis:i32 reduce=Reduce:str include_self=Include_self:bool"
LRN = "n:i32 k:f32 alpha:f32 beta:f32 data_format:str"
UNIQUE = "return_index:bool return_inverse:bool return_counts:bool axis:i32s dtype:dtype is_sorted:bool"

ROWS = [
    row("pd_op.sin", "sin", "x:X"),
    row("pd_op.cos", "cos", "x:X"),
    row("pd_op.tril", "tril_triu", "x:X", "out:Out", "diagonal:i32", **LOWER),
    row("pd_op.any", "reduce_any", "x:X", "out:Out", "axis=dim:i64s keepdim=keep_dim:bool", **ALL_AXES),
    row("pd_op.diag", "diag_v2", "x:X", "out:Out", "offset:i32 padding_value:f32"),
    row("pd_op.roll", "roll", f"x:X {SHIFTS}", "out:Out", "axis:i64s"),
    row("pd_op.unbind", "unbind", "input:X", "out:Out*", "axis:i32"),
    row("pd_op.meshgrid", "meshgrid", "inputs:X*", "out:Out*"),
    row("pd_op.repeat_interleave_with_tensor_index", "repeat_interleave", "x:X repeats:RepeatsTensor", "out:Out",
        "axis=dim:i32 output_size:i64", when=repeats_tensor),
    row("pd_op.repeat_interleave", "repeat_interleave", "x:X", "out:Out",
        "repeats=Repeats:i32 axis=dim:i32 output_size:i64"),
    row("pd_op.kthvalue", "kthvalue", "x:X", "out:Out indices:Indices", "k:i64 axis:i32 keepdim:bool"),
    row("pd_op.masked_select", "masked_select", "x:X mask:Mask", "out:Y"),
    row("pd_op.put_along_axis", "put_along_axis", "arr:Input indices:Index values:Value", "out:Result", PUT_ALONG),
    row("pd_op.index_add", "index_add", "x:X index:Index add_value:AddValue", "out:Out", "axis:i32"),
    row("pd_op.lrn", "lrn", "x:X", "out:Out mid_out:MidOut", LRN),   # Paddle's translator writes it
    # indices and counts
    row("pd_op.bincount", "bincount", "x:X weights?:Weights minlength>minlength:int"),
    row("pd_op.searchsorted", "searchsorted", "sorted_sequence:SortedSequence values:Values", "out:Out",
        "out_int32:bool right:bool"),
    row("pd_op.unique", "unique", "x:X", "out:Out indices:Indices inverse:Index counts:Counts", UNIQUE,
        hook=unique_types),
    row("pd_op.gather_tree", "gather_tree", "ids:Ids parents:Parents"),
    row("pd_op.shard_index", "shard_index", "input:X", "out:Out",
        "index_num:i32 nshards:i32 shard_id:i32 ignore_value:i32"),
    row("pd_op.accuracy", "accuracy", "x:Out indices:Indices label:Label",
        "accuracy:Accuracy correct:Correct total:Total"),
    row("pd_op.linspace", "linspace", "start:Start stop:Stop number:Num", "out:Out", "dtype:dtype place=-:place"),
    row("pd_op.arange", "range", "start:Start end:End step:Step", "out:Out", "dtype=-:dtype place=-:place",
        hook=arange_dtype, back=arange_dtype_back),
    # losses and draws
    row("pd_op.identity_loss", "identity_loss", "x:X", "out:Out", "reduction:i32"),
    row("pd_op.log_loss", "log_loss", "input:Predicted label:Labels", "out:Loss", "epsilon:f32"),
    row("pd_op.pad", "pad", "x:X pad_value>pad_value:float", "out:Out", "paddings:i32s"),
    row("pd_op.randint", "randint", "shape>shape:ints@ShapeTensor,ShapeTensorList", "out:Out",
        "low:i32 high:i32 dtype:dtype place=-:place", fixed={"seed": 0}),   # PIR draws from the global seed
    row("pd_op.randperm", "randperm", "", "out:Out", "n:i32 dtype:dtype place=-:place"),
    row("pd_op.gumbel_softmax", "gumbel_softmax", "x:X", "out:Out", "temperature:f32 hard:bool axis:i32"),
    row("pd_op.fused_softmax_mask", "fused_softmax_mask", "x:X mask:Mask", "out:Out"),
    row("pd_op.fused_softmax_mask_upper_triangle", "fused_softmax_mask_upper_triangle", "X:X", "Out:Out"),
    # grads
    row("pd_op.fused_softmax_mask_grad", "fused_softmax_mask_grad", "softmax:Softmax out_grad:Out@GRAD", X_GRAD),
    # Paddle's PIR op keeps the legacy op's capitalised names
    row("pd_op.fused_softmax_mask_upper_triangle_grad", "fused_softmax_mask_upper_triangle_grad",
        "Out:Out Out_grad:Out@GRAD", "X_grad:X@GRAD"),
    row("pd_op.sin_grad", "sin_grad", UNARY, X_GRAD),
    row("pd_op.cos_grad", "cos_grad", UNARY, X_GRAD),
    row("pd_op.tril_grad", "tril_triu_grad", "out_grad:Out@GRAD", X_GRAD, "diagonal:i32", **LOWER),
    row("pd_op.triu_grad", "tril_triu_grad", "out_grad:Out@GRAD", X_GRAD, "diagonal:i32", **UPPER),
    row("pd_op.diag_grad", "diag_v2_grad", UNARY, X_GRAD, "offset:i32"),
    row("pd_op.roll_grad", "roll_grad", f"x:X out_grad:Out@GRAD {SHIFTS}", X_GRAD, "axis:i64s"),
    row("pd_op.meshgrid_grad", "meshgrid_grad", "inputs:X* out_grad:Out@GRAD*", "inputs_grad:X@GRAD*"),
    row("pd_op.repeat_interleave_with_tensor_index_grad", "repeat_interleave_grad",
        "x:X repeats:RepeatsTensor out_grad:Out@GRAD", X_GRAD, "axis=dim:i32 output_size:i64", when=repeats_tensor),
    row("pd_op.repeat_interleave_grad", "repeat_interleave_grad", UNARY, X_GRAD,
        "repeats=Repeats:i32 axis=dim:i32 output_size:i64"),
    row("pd_op.kthvalue_grad", "kthvalue_grad", "x:X indices:Indices out_grad:Out@GRAD", X_GRAD,
        "k:i64 axis:i32 keepdim:bool"),
    row("pd_op.masked_select_grad", "masked_select_grad", "x:X mask:Mask out_grad:Y@GRAD", X_GRAD),
    row("pd_op.put_along_axis_grad", "put_along_axis_grad",
        "arr:Input indices:Index values:Value out:Result out_grad:Result@GRAD",
        "arr_grad:Input@GRAD values_grad:Value@GRAD", PUT_ALONG),
    row("pd_op.index_add_grad", "index_add_grad", "index:Index add_value:AddValue out_grad:Out@GRAD",
        "x_grad:X@GRAD add_value_grad:AddValue@GRAD", "axis:i32"),
    row("pd_op.lrn_grad", "lrn_grad", "x:X out:Out mid_out:MidOut out_grad:Out@GRAD", X_GRAD, LRN),
    row("pd_op.identity_loss_grad", "identity_loss_grad", UNARY, X_GRAD, "reduction:i32"),
    row("pd_op.log_loss_grad", "log_loss_grad", "input:Predicted label:Labels out_grad:Loss@GRAD",
        "input_grad:Predicted@GRAD", "epsilon:f32"),
    row("pd_op.label_smooth_grad", "label_smooth_grad", "out_grad:Out@GRAD", "label_grad:X@GRAD", "epsilon:f32"),
    # PIR's pad_grad also reads x, which the legacy op does not name (export: export_legacy.pad_grad)
    row("pd_op.pad_grad", "pad_grad", "x:- out_grad:Out@GRAD pad_value>pad_value:float", X_GRAD, "paddings:i32s"),
    row("pd_op.squared_l2_norm_grad", "squared_l2_norm_grad", UNARY, X_GRAD),
    row("pd_op.relu_double_grad", "relu_grad_grad", "out:Out grad_x_grad:grad_x@GRAD", "grad_out_grad:grad_out@GRAD"),
    # Paddle's own second derivatives (gradc.ops.double_grad): a loss that differentiates a gradient
    row("pd_op.tanh_double_grad", "tanh_grad_grad", "out:Out grad_out:grad_out grad_x_grad:grad_x@GRAD",
        "out_grad:Out@GRAD grad_out_grad:grad_out@GRAD"),
    row("pd_op.sigmoid_double_grad", "sigmoid_grad_grad", "out:Out fwd_grad_out:grad_out grad_x_grad:grad_x@GRAD",
        "out_grad:Out@GRAD fwd_grad_out_grad:grad_out@GRAD"),
    row("pd_op.matmul_double_grad", "matmul_v2_grad_grad",
        "x:X y:Y grad_out:grad_out grad_x_grad?:grad_x@GRAD grad_y_grad?:grad_y@GRAD",
        "x_grad:X@GRAD y_grad:Y@GRAD grad_out_grad:grad_out@GRAD", "transpose_x=trans_x:bool transpose_y=trans_y:bool"),
    row("pd_op.add_double_grad", "elementwise_add_grad_grad", "y:Y grad_out:DOut grad_x_grad?:DDX grad_y_grad?:DDY",
        "grad_out_grad:DDOut", "axis:i32=-1"),
    # MAML's second derivatives in PIR: the inner loss's MSE (paddle.static.gradients, then minimize)
    row("pd_op.subtract_double_grad", "elementwise_sub_grad_grad",
        "y:Y grad_out:DOut grad_x_grad?:DDX grad_y_grad?:DDY", "grad_out_grad:DDOut", "axis:i32=-1"),
    row("pd_op.square_double_grad", "square_grad_grad", "x:X grad_out:grad_out grad_x_grad:grad_x@GRAD",
        "x_grad:X@GRAD grad_out_grad:grad_out@GRAD"),
    # an SDF's Eikonal loss (paddle.static.gradients of the field, then minimize) through its activation
    *(row(f"pd_op.{name}_double_grad", legacy, "x:X grad_out:grad_out grad_x_grad:grad_x@GRAD",
          "x_grad:X@GRAD grad_out_grad:grad_out@GRAD", attrs)
      for name, legacy, attrs in (("sin", "sin_double_grad", ""), ("cos", "cos_double_grad", ""),
                                  ("log", "log_grad_grad", ""),
                                  ("softplus", "softplus_double_grad", "beta:f64 threshold:f64"),
                                  ("elu", "elu_grad_grad", "alpha:f32"), ("celu", "celu_grad_grad", "alpha:f32"),
                                  ("pow", "pow_double_grad", "y=factor:f32"))),
    row("pd_op.multiply_double_grad", "elementwise_mul_grad_grad",
        "x:X y:Y grad_out:DOut grad_x_grad?:DDX grad_y_grad?:DDY", "x_grad:X@GRAD y_grad:Y@GRAD grad_out_grad:DDOut",
        "axis:i32=-1"),
    # third derivatives: a loss that differentiates a second derivative (paddle.incubate.autograd.jvp)
    row("pd_op.tanh_triple_grad", "tanh_triple_grad",
        "out:Out grad_out_forward:grad_out_forward grad_x_grad_forward:grad_x_grad_forward "
        "grad_out_new_grad?:grad_out_new@GRAD grad_out_grad_grad?:grad_out_grad@GRAD",
        "out_grad:Out@GRAD grad_out_forward_grad:grad_out_forward@GRAD "
        "grad_x_grad_forward_grad:grad_x_grad_forward@GRAD"),
    row("pd_op.multiply_triple_grad", "elementwise_mul_triple_grad",
        "x:X y:Y fwd_grad_out:DOut fwd_grad_grad_x?:DDX fwd_grad_grad_y?:DDY grad_x_grad?:D_DX grad_y_grad?:D_DY "
        "grad_grad_out_grad?:D_DDOut",
        "x_grad:D_X y_grad:D_Y fwd_grad_out_grad:D_DOut fwd_grad_grad_x_grad:D_DDX fwd_grad_grad_y_grad:D_DDY",
        "axis:i32=-1"),
    # Paddle's gumbel_softmax_grad leaves out 1/temperature: gradc's grad at temperature 1 says the same
    row("pd_op.gumbel_softmax_grad", "gumbel_softmax_grad", "out:Out out_grad:Out@GRAD", X_GRAD, "axis:i32",
        fixed={"temperature": 1.0}),
]
