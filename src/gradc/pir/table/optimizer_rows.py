"""Rows for the optimizers' update ops as Paddle's PIR training programs write them (`Optimizer.minimize` in PIR
mode): in place on the parameter and its accumulators; Adam's beta1/beta2/epsilon are [1] operands. The list ops
(lars_momentum_, merged_momentum_, merged_adam_) take each slot as one vector operand (a builtin.combine) and give
vector results (taken apart by builtin.split). Gradient clipping's norms, and `scale_`, which Adamax's beta1_pow
update is in place. Dynamic loss scaling (check_finite_and_unscale_, update_loss_scaling_, and the memcpy of its flag
for Adam's skip_update), ASGD and ModelAverage's average_accumulates_ (ftrl, decayed_adagrad, dpsgd and
sparse_momentum have no PIR op in Paddle 3.3.1: its translator refuses them)."""

from __future__ import annotations

from . import row

ADAM_IN = ("param:Param grad:Grad learning_rate:LearningRate moment1:Moment1 moment2:Moment2 "
           "moment2_max?:Moment2Max beta1_pow:Beta1Pow beta2_pow:Beta2Pow master_param?:MasterParam "
           "skip_update?:SkipUpdate beta1>beta1:float@Beta1Tensor beta2>beta2:float@Beta2Tensor "
           "epsilon>epsilon:float@EpsilonTensor")
ADAM_OUT = ("param_out:ParamOut&param moment1_out:Moment1Out&moment1 moment2_out:Moment2Out&moment2 "
            "moment2_max_out:Moment2MaxOut&moment2_max beta1_pow_out:Beta1PowOut&beta1_pow "
            "beta2_pow_out:Beta2PowOut&beta2_pow master_param_out:MasterParamOut&master_param")
ADAM_ATTRS = ("lazy_mode:bool min_row_size_to_use_multithread:i64=1000 multi_precision:bool "
              "use_global_beta_pow:bool amsgrad:bool")

MASTER = "master_param?:MasterParam"
MASTER_OUT = "master_param_out:MasterParamOut&master_param"
MASTER_LOWER, MASTER_OUT_LOWER = "master_param?:master_param", "master_param_out:master_param_out&master_param"

AVERAGE_STATE = ("sum_1", "sum_2", "sum_3", "num_accumulates", "old_num_accumulates", "num_updates")

LIST_MOMENTUM_OUT = ("param_out:ParamOut*&param velocity_out:VelocityOut*&velocity "
                     "master_param_out:MasterParamOut*&master_param")


def _in_place(legacy, exporter) -> bool:
    return legacy.input("X") == legacy.output("Out")


ROWS = [
    row("pd_op.sgd_", "sgd", "param:Param learning_rate:LearningRate grad:Grad master_param?:MasterParam",
        "param_out:ParamOut&param master_param_out:MasterParamOut&master_param", "multi_precision:bool"),
    row("pd_op.momentum_", "momentum",
        "param:Param grad:Grad velocity:Velocity learning_rate:LearningRate master_param?:MasterParam",
        "param_out:ParamOut&param velocity_out:VelocityOut&velocity master_param_out:MasterParamOut&master_param",
        "mu:f32=0.9 use_nesterov:bool regularization_method:str regularization_coeff:f32 multi_precision:bool "
        "rescale_grad:f32=1"),
    row("pd_op.adam_", "adam", ADAM_IN, ADAM_OUT, ADAM_ATTRS),
    row("pd_op.adamw_", "adamw", ADAM_IN, ADAM_OUT, "lr_ratio:f32=1 coeff:f32=0.01 with_decay:bool " + ADAM_ATTRS),
    row("pd_op.adagrad_", "adagrad", f"param:Param grad:Grad moment:Moment learning_rate:LearningRate {MASTER}",
        f"param_out:ParamOut&param moment_out:MomentOut&moment {MASTER_OUT}", "epsilon:f32=1e-6 multi_precision:bool"),
    row("pd_op.adamax_", "adamax",
        f"param:Param grad:Grad learning_rate:LearningRate moment:Moment inf_norm:InfNorm beta1_pow:Beta1Pow {MASTER}",
        f"param_out:ParamOut&param moment_out:MomentOut&moment inf_norm_out:InfNormOut&inf_norm {MASTER_OUT}",
        "beta1:f32=0.9 beta2:f32=0.999 epsilon:f32=1e-8 multi_precision:bool"),
    row("pd_op.rmsprop_", "rmsprop", "param:Param mean_square:MeanSquare grad:Grad moment:Moment "
        f"learning_rate:LearningRate mean_grad?:MeanGrad {MASTER}",
        "param_out:ParamOut&param moment_out:MomentOut&moment "
        f"mean_square_out:MeanSquareOut&mean_square mean_grad_out:MeanGradOut&mean_grad {MASTER_OUT}",
        "epsilon:f32=1e-10 decay:f32=0.9 momentum:f32 centered:bool multi_precision:bool"),
    row("pd_op.adadelta_", "adadelta", "param:Param grad:Grad avg_squared_grad:AvgSquaredGrad "
        f"avg_squared_update:AvgSquaredUpdate learning_rate:LearningRate {MASTER}",
        "param_out:ParamOut&param moment_out:AvgSquaredGradOut&avg_squared_grad "
        f"inf_norm_out:AvgSquaredUpdateOut&avg_squared_update {MASTER_OUT}",
        "rho:f32=0.95 epsilon:f32=1e-6 multi_precision:bool"),
    row("pd_op.lamb_", "lamb", "param:Param grad:Grad learning_rate:LearningRate moment1:Moment1 moment2:Moment2 "
        f"beta1_pow:Beta1Pow beta2_pow:Beta2Pow {MASTER} skip_update?:SkipUpdate",
        "param_out:ParamOut&param moment1_out:Moment1Out&moment1 moment2_out:Moment2Out&moment2 "
        f"beta1_pow_out:Beta1PowOut&beta1_pow beta2_pow_out:Beta2PowOut&beta2_pow {MASTER_OUT}",
        "weight_decay:f32=0.01 beta1:f32=0.9 beta2:f32=0.999 epsilon:f32=1e-6 always_adapt:bool multi_precision:bool"),
    row("pd_op.nadam_", "nadam", "param:param grad:grad learning_rate:learning_rate "
        "momentum_decay_pow:momentum_decay_pow beta2_pow:beta2_pow mu_product:mu_product moment1:moment1 "
        f"moment2:moment2 {MASTER_LOWER}",
        "param_out:param_out&param momentum_decay_pow_out:momentum_decay_pow_out&momentum_decay_pow "
        "beta2_pow_out:beta2_pow_out&beta2_pow mu_product_out:mu_product_out&mu_product "
        f"moment1_out:moment1_out&moment1 moment2_out:moment2_out&moment2 {MASTER_OUT_LOWER}",
        "beta1:f32=0.9 beta2:f32=0.999 epsilon:f32=1e-8 momentum_decay:f32=0.004 multi_precision:bool"),
    row("pd_op.radam_", "radam", "param:param grad:grad learning_rate:learning_rate beta1_pow:beta1_pow "
        f"beta2_pow:beta2_pow rho:rho moment1:moment1 moment2:moment2 {MASTER_LOWER}",
        "param_out:param_out&param beta1_pow_out:beta1_pow_out&beta1_pow beta2_pow_out:beta2_pow_out&beta2_pow "
        f"rho_out:rho_out&rho moment1_out:moment1_out&moment1 moment2_out:moment2_out&moment2 {MASTER_OUT_LOWER}",
        "beta1:f32=0.9 beta2:f32=0.999 epsilon:f32=1e-8 multi_precision:bool"),
    row("pd_op.rprop_", "rprop", f"param:param grad:grad prev:prev learning_rate:learning_rate {MASTER_LOWER} "
        "learning_rate_range:learning_rate_range etas:etas", "param_out:param_out&param prev_out:prev_out&prev "
        f"learning_rate_out:learning_rate_out&learning_rate {MASTER_OUT_LOWER}", "multi_precision:bool"),
    row("pd_op.lars_momentum_", "lars_momentum",
        "param:Param* grad:Grad* velocity:Velocity* learning_rate:LearningRate* master_param?:MasterParam*",
        LIST_MOMENTUM_OUT, "mu:f32 lars_coeff:f32=0.001 lars_weight_decay:f32s epsilon:f32 multi_precision:bool "
        "rescale_grad:f32=1"),
    row("pd_op.merged_momentum_", "merged_momentum",
        "param:Param* grad:Grad* velocity:Velocity* learning_rate:LearningRate* master_param?:MasterParam*",
        LIST_MOMENTUM_OUT, "mu:f32=0.9 use_nesterov:bool regularization_method:strs regularization_coeff:f32s "
        "multi_precision:bool rescale_grad:f32=1"),
    row("pd_op.merged_adam_", "merged_adam",
        "param:Param* grad:Grad* learning_rate:LearningRate* moment1:Moment1* moment2:Moment2* "
        "moment2_max?:Moment2Max* beta1_pow:Beta1Pow* beta2_pow:Beta2Pow* master_param?:MasterParam* "
        "beta1>beta1:float beta2>beta2:float epsilon>epsilon:float",
        "param_out:ParamOut*&param moment1_out:Moment1Out*&moment1 moment2_out:Moment2Out*&moment2 "
        "moment2_max_out:Moment2MaxOut*&moment2_max beta1_pow_out:Beta1PowOut*&beta1_pow "
        "beta2_pow_out:Beta2PowOut*&beta2_pow master_param_out:MasterParamOut*&master_param",
        "multi_precision:bool use_global_beta_pow:bool amsgrad:bool"),
    row("pd_op.squared_l2_norm", "squared_l2_norm", "x:X"),
    row("pd_op.clip_by_norm", "clip_by_norm", "x:X", "out:Out", "max_norm:f32"),
    row("pd_op.scale_", "scale", "x:X scale>scale:float@ScaleTensor", "out:Out&x", "bias:f32 bias_after_scale:bool",
        when=_in_place),
    row("pd_op.check_finite_and_unscale_", "check_finite_and_unscale", "x:X* scale:Scale",
        "out:Out*&x found_infinite:FoundInfinite"),
    row("pd_op.update_loss_scaling_", "update_loss_scaling",
        "x:X* found_infinite:FoundInfinite prev_loss_scaling:PrevLossScaling in_good_steps:InGoodSteps "
        "in_bad_steps:InBadSteps stop_update>stop_update:bool@StopUpdate",
        "out:Out*&x loss_scaling:LossScaling&prev_loss_scaling out_good_steps:OutGoodSteps&in_good_steps "
        "out_bad_steps:OutBadSteps&in_bad_steps",
        "incr_every_n_steps:i32=1000 decr_every_n_nan_or_inf:i32=2 incr_ratio:f32=2 decr_ratio:f32=0.8"),
    row("pd_op.memcpy", "memcpy", "x:X", "out:Out", "dst_place_type:i32"),
    row("pd_op.asgd_", "asgd", f"param:param grad:grad learning_rate:learning_rate d:d y:y n:n {MASTER_LOWER}",
        f"param_out:param_out&param d_out:d_out&d y_out:y_out&y {MASTER_OUT_LOWER}", "multi_precision:bool"),
    row("pd_op.average_accumulates_", "average_accumulates",
        "param:param " + " ".join(f"in_{name}:in_{name}" for name in AVERAGE_STATE),
        " ".join(f"out_{name}:out_{name}&in_{name}" for name in AVERAGE_STATE),
        "average_window:f32 max_average_window:i64=9223372036854775807 min_average_window:i64=10000"),
]
