"""Rows: elementwise math, activations, reductions, comparisons and logic."""

from __future__ import annotations

from . import row
from .hooks import reduce_all, reduce_all_back

AXIS = {"axis": -1}   # PIR broadcasts numpy-style: legacy elementwise ops with axis -1
ALL_AXES = {"hook": reduce_all, "back": reduce_all_back}

ROWS = [
    row("pd_op.add", "elementwise_add", "x:X y:Y", fixed=AXIS),
    row("pd_op.subtract", "elementwise_sub", "x:X y:Y", fixed=AXIS),
    row("pd_op.multiply", "elementwise_mul", "x:X y:Y", fixed=AXIS),
    row("pd_op.divide", "elementwise_div", "x:X y:Y", fixed=AXIS),
    row("pd_op.maximum", "elementwise_max", "x:X y:Y", fixed=AXIS),
    row("pd_op.minimum", "elementwise_min", "x:X y:Y", fixed=AXIS),
    row("pd_op.elementwise_pow", "elementwise_pow", "x:X y:Y", fixed=AXIS),
    row("pd_op.remainder", "elementwise_mod", "x:X y:Y", fixed=AXIS),
    row("pd_op.floor_divide", "elementwise_floordiv", "x:X y:Y", fixed=AXIS),
    row("pd_op.matmul", "matmul_v2", "x:X y:Y", "out:Out", "transpose_x=trans_x:bool transpose_y=trans_y:bool"),
    row("pd_op.bmm", "bmm", "x:X y:Y"),
    row("pd_op.scale", "scale", "x:X scale>scale:float", "out:Out", "bias:f32 bias_after_scale:bool"),
    row("pd_op.add_n", "sum", "inputs:X*"),
    row("pd_op.abs", "abs", "x:X"),
    row("pd_op.exp", "exp", "x:X"),
    row("pd_op.log", "log", "x:X"),
    row("pd_op.sqrt", "sqrt", "x:X"),
    row("pd_op.rsqrt", "rsqrt", "x:X"),
    row("pd_op.square", "square", "x:X"),
    row("pd_op.sign", "sign", "x:X"),
    row("pd_op.pow", "pow", "x:X", "out:Out", "y=factor:f32"),
    row("pd_op.clip", "clip", "x:X min>min:float max>max:float"),
    row("pd_op.cumsum", "cumsum", "x:X axis>axis:int", "out:Out", "flatten:bool exclusive:bool reverse:bool"),
    row("pd_op.where", "where", "condition:Condition x:X y:Y"),
    # activations
    row("pd_op.relu", "relu", "x:X"),
    row("pd_op.relu6", "relu6", "x:X"),
    row("pd_op.sigmoid", "sigmoid", "x:X"),
    row("pd_op.tanh", "tanh", "x:X"),
    row("pd_op.silu", "silu", "x:X"),
    row("pd_op.swish", "swish", "x:X"),
    row("pd_op.hardswish", "hard_swish", "x:X"),
    row("pd_op.gelu", "gelu", "x:X", "out:Out", "approximate:bool"),
    row("pd_op.elu", "elu", "x:X", "out:Out", "alpha:f32"),
    row("pd_op.leaky_relu", "leaky_relu", "x:X", "out:Out", "negative_slope=alpha:f64"),
    row("pd_op.softplus", "softplus", "x:X", "out:Out", "beta:f64 threshold:f64"),
    row("pd_op.hardsigmoid", "hard_sigmoid", "x:X", "out:Out", "slope:f32 offset:f32"),
    row("pd_op.softmax", "softmax", "x:X", "out:Out", "axis:i32"),
    row("pd_op.log_softmax", "log_softmax", "x:X", "out:Out", "axis:i32"),
    # reductions: an empty PIR axis list means every axis
    row("pd_op.mean", "reduce_mean", "x:X axis>dim:ints", "out:Out", "keepdim=keep_dim:bool", **ALL_AXES),
    row("pd_op.sum", "reduce_sum", "x:X axis>dim:ints", "out:Out", "dtype=out_dtype:dtype keepdim=keep_dim:bool",
        **ALL_AXES),
    row("pd_op.max", "reduce_max", "x:X axis>dim:ints", "out:Out", "keepdim=keep_dim:bool", **ALL_AXES),
    row("pd_op.min", "reduce_min", "x:X axis>dim:ints", "out:Out", "keepdim=keep_dim:bool", **ALL_AXES),
    row("pd_op.prod", "reduce_prod", "x:X axis>dim:ints", "out:Out", "keepdim=keep_dim:bool reduce_all:bool",
        **ALL_AXES),
    row("pd_op.mean_all", "mean", "x:X"),
    row("pd_op.argmax", "arg_max", "x:X axis>axis:long", "out:Out", "keepdims:bool flatten:bool dtype:dtype=int64"),
    row("pd_op.argmin", "arg_min", "x:X axis>axis:long", "out:Out", "keepdims:bool flatten:bool dtype:dtype=int64"),
    row("pd_op.p_norm", "p_norm", "x:X", "out:Out", "porder:f32 axis:i32 epsilon:f32 keepdim:bool asvector:bool"),
    # comparisons and logic
    row("pd_op.equal", "equal", "x:X y:Y", fixed=AXIS),
    row("pd_op.not_equal", "not_equal", "x:X y:Y", fixed=AXIS),
    row("pd_op.less_than", "less_than", "x:X y:Y", fixed=AXIS),
    row("pd_op.less_equal", "less_equal", "x:X y:Y", fixed=AXIS),
    row("pd_op.greater_than", "greater_than", "x:X y:Y", fixed=AXIS),
    row("pd_op.greater_equal", "greater_equal", "x:X y:Y", fixed=AXIS),
    row("pd_op.logical_and", "logical_and", "x:X y:Y"),
    row("pd_op.logical_or", "logical_or", "x:X y:Y"),
    row("pd_op.logical_xor", "logical_xor", "x:X y:Y"),
    row("pd_op.logical_not", "logical_not", "x:X"),
]
