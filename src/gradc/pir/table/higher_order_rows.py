"""Rows: Paddle 3's PIR second- and third-derivative ops gradc's legacy set gained since week 39, as
paddle.static.gradients of a gradient (a WGAN-GP penalty through BatchNorm, a PINN's third-order residual) writes
them in PIR static mode (Paddle 3's default): the double grads of sqrt, rsqrt, leaky_relu, abs, clip, pool2d, pad3d,
batch_norm and instance_norm, and the triple grads of sin, cos, sigmoid and pow."""

from __future__ import annotations

from . import row
from .grad_rows import POOL
from .nn_rows import BATCH_NORM

DDX_ONLY = "grad_out_grad:grad_out@GRAD"   # piecewise linear and linear ops: only the grad of dOut
SIN_TRIPLE = ("x:X grad_out_forward:grad_out_forward grad_x_grad_forward:grad_x_grad_forward grad_x_grad?:grad_x@GRAD "
              "grad_out_grad_grad?:grad_out_grad@GRAD",
              "x_grad:X@GRAD grad_out_forward_grad:grad_out_forward@GRAD "
              "grad_x_grad_forward_grad:grad_x_grad_forward@GRAD")

ROWS = [
    *(row(f"pd_op.{name}_double_grad", f"{name}_grad_grad", "out:Out grad_x:grad_x grad_x_grad:grad_x@GRAD",
          "out_grad:Out@GRAD grad_out_grad:grad_out@GRAD") for name in ("sqrt", "rsqrt")),
    row("pd_op.leaky_relu_double_grad", "leaky_relu_grad_grad", "x:X grad_x_grad:grad_x@GRAD", DDX_ONLY,
        "negative_slope=alpha:f64"),
    row("pd_op.abs_double_grad", "abs_double_grad", "x:X grad_x_grad:grad_x@GRAD", DDX_ONLY),
    row("pd_op.clip_double_grad", "clip_double_grad",
        "x:X grad_x_grad:grad_x@GRAD min>min:float@Min max>max:float@Max", DDX_ONLY),
    # average pooling and padding are linear: their double grads read ddX alone (pool2d's x is not needed)
    row("pd_op.pool2d_double_grad", "pool2d_double_grad", "x:- grad_x_grad:grad_x@GRAD kernel_size>ksize:ints",
        DDX_ONLY, POOL),
    row("pd_op.pad3d_double_grad", "pad3d_double_grad", "grad_x_grad:grad_x@GRAD paddings>paddings:ints@Paddings",
        DDX_ONLY, "mode:str pad_value=value:f64 data_format:str"),
    row("pd_op.batch_norm_double_grad", "batch_norm_grad_grad",
        "x:X scale?:Scale out_mean:Mean out_variance:Variance saved_mean:SavedMean saved_variance:SavedVariance "
        "grad_out:DY grad_x_grad?:DDX grad_scale_grad?:DDScale grad_bias_grad?:DDBias",
        "x_grad:DX scale_grad:DScale grad_out_grad:DDY", BATCH_NORM),
    row("pd_op.instance_norm_double_grad", "instance_norm_double_grad",
        "x:x scale?:scale saved_mean:saved_mean saved_variance:saved_variance grad_y:grad_y "
        "grad_x_grad?:grad_x@GRAD grad_scale_grad?:grad_scale@GRAD grad_bias_grad?:grad_bias@GRAD",
        "x_grad:x@GRAD scale_grad:scale@GRAD grad_y_grad:grad_y@GRAD", "epsilon:f32"),
    row("pd_op.sin_triple_grad", "sin_triple_grad", *SIN_TRIPLE),
    row("pd_op.cos_triple_grad", "cos_triple_grad", *SIN_TRIPLE),
    row("pd_op.sigmoid_triple_grad", "sigmoid_triple_grad",
        "out:Out fwd_grad_out:fwd_grad_out grad_grad_x:grad_grad_x grad_out_grad?:grad_out@GRAD "
        "grad_grad_out_grad?:grad_grad_out@GRAD",
        "out_grad:Out@GRAD fwd_grad_out_grad:fwd_grad_out@GRAD grad_grad_x_grad:grad_grad_x@GRAD"),
    row("pd_op.pow_triple_grad", "pow_triple_grad",
        "x:X grad_out:grad_out grad_grad_x:grad_grad_x grad_x_grad?:grad_x@GRAD grad_grad_out_grad?:grad_grad_out@GRAD",
        "x_grad:X@GRAD grad_out_grad:grad_out@GRAD grad_grad_x_grad:grad_grad_x@GRAD", "y=factor:f32"),
]
