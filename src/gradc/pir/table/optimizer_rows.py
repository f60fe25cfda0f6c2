"""Rows for the optimizers' update ops as Paddle's PIR training programs write them (`Optimizer.minimize` in PIR
mode): in place on the parameter and its accumulators; Adam's beta1/beta2/epsilon are [1] operands."""

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
]
