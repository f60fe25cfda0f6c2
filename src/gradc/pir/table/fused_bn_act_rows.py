"""Rows: the batch norm + relu fusions of Paddle's GPU training passes (gradc.ops.fused_bn_act), with the operand,
result and attribute names of Paddle 3.3.1's op definitions. The in-place variants update the running mean and
variance in their operands' vars."""

from __future__ import annotations

from . import row

ATTRS = "momentum:f32 epsilon:f32 act_type:str"
STATS = "saved_mean:SavedMean saved_variance:SavedVariance reserve_space:ReserveSpace"
IN_PLACE = f"out:Y mean_out:MeanOut&mean variance_out:VarianceOut&variance {STATS}"
OUT_OF_PLACE = f"out:Y mean_out:MeanOut variance_out:VarianceOut {STATS}"
NORM = "scale:Scale bias:Bias mean:Mean variance:Variance"
GRAD_READS = ("x:X scale:Scale bias:Bias out:Y saved_mean:SavedMean saved_variance:SavedVariance "
              "reserve_space?:ReserveSpace out_grad:Y@GRAD")

ROWS = [
    # export writes the in-place form, as a training program holds it (its row comes first)
    row("pd_op.fused_batch_norm_act_", "fused_batch_norm_act", f"x:X {NORM}", IN_PLACE, ATTRS),
    row("pd_op.fused_batch_norm_act", "fused_batch_norm_act", f"x:X {NORM}", OUT_OF_PLACE, ATTRS),
    row("pd_op.fused_batch_norm_act_grad", "fused_batch_norm_act_grad", GRAD_READS,
        "x_grad:X@GRAD scale_grad:Scale@GRAD bias_grad:Bias@GRAD", ATTRS),
    row("pd_op.fused_bn_add_activation_", "fused_bn_add_activation", f"x:X z:Z {NORM}", IN_PLACE, ATTRS),
    row("pd_op.fused_bn_add_activation", "fused_bn_add_activation", f"x:X z:Z {NORM}", OUT_OF_PLACE, ATTRS),
    row("pd_op.fused_bn_add_activation_grad", "fused_bn_add_activation_grad", GRAD_READS,
        "x_grad:X@GRAD z_grad:Z@GRAD scale_grad:Scale@GRAD bias_grad:Bias@GRAD", ATTRS),
]
