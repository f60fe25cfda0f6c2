"""The Adam family of optimizer ops (adam, adamw, merged_adam, adamax, lamb, nadam, radam), with Paddle's slots
and attributes; like every optimizer they update in place and have no gradient (gradc.ops.optimizer)."""

from __future__ import annotations

from ..ir import AttrType
from ..registry import typed
from .optimizer import MASTER, defupdate
from .optimizer_checks import UpdateRule

BETAS = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8}
ADAM_ATTRS = {**BETAS, "lazy_mode": False, "min_row_size_to_use_multithread": typed(1000, AttrType.LONG),
              "multi_precision": False, "use_global_beta_pow": False, "amsgrad": False}
ADAM_INPUTS = ["Param", "Grad", "LearningRate", "Moment1", "Moment2", "Moment2Max?", "Beta1Pow", "Beta2Pow",
               "MasterParam?", "SkipUpdate?", "Beta1Tensor?", "Beta2Tensor?", "EpsilonTensor?"]
ADAM_OUTPUTS = ["ParamOut", "Moment1Out", "Moment2Out", "Moment2MaxOut?", "Beta1PowOut", "Beta2PowOut",
                "MasterParamOut?"]
ADAM_RULE = UpdateRule(like_param=("Moment1", "Moment2", "Moment2Max"),
                       one_value=("Beta1Pow", "Beta2Pow", "SkipUpdate", "Beta1Tensor", "Beta2Tensor", "EpsilonTensor"),
                       betas=("beta1", "beta2"),
                       tensors=(("Beta1Tensor", "beta1"), ("Beta2Tensor", "beta2"), ("EpsilonTensor", "epsilon")),
                       needs=(("amsgrad", "Moment2Max"),))

defupdate("adam", ADAM_INPUTS, ADAM_OUTPUTS, ADAM_ATTRS, ADAM_RULE)
# with_decay is off in the op; Python's AdamW turns it on for every parameter apply_decay_param_fun accepts
defupdate("adamw", ADAM_INPUTS, ADAM_OUTPUTS, {**ADAM_ATTRS, "coeff": 0.01, "lr_ratio": 1.0, "with_decay": False},
          ADAM_RULE)
defupdate("merged_adam", ["Param[]", "Grad[]", "LearningRate[]", "Moment1[]", "Moment2[]", "Moment2Max[]?",
                          "Beta1Pow[]", "Beta2Pow[]", "MasterParam[]?"],
          ["ParamOut[]", "Moment1Out[]", "Moment2Out[]", "Moment2MaxOut[]?", "Beta1PowOut[]", "Beta2PowOut[]",
           "MasterParamOut[]?"],
          {**BETAS, "multi_precision": False, "use_global_beta_pow": False, "amsgrad": False},
          UpdateRule(like_param=("Moment1", "Moment2", "Moment2Max"), one_value=("Beta1Pow", "Beta2Pow"),
                     betas=("beta1", "beta2"), needs=(("amsgrad", "Moment2Max"),)),
          tensor_attrs=("beta1", "beta2", "epsilon"))
# Adamax has no Beta1PowOut: a scale op after the update advances the pow
defupdate("adamax", ["Param", "Grad", "LearningRate", "Moment", "InfNorm", "Beta1Pow", "MasterParam?"],
          ["ParamOut", "MomentOut", "InfNormOut", "MasterParamOut?"], {**BETAS, **MASTER},
          UpdateRule(like_param=("Moment", "InfNorm"), one_value=("Beta1Pow",), betas=("beta1", "beta2")))
# weight_decay has no default in Paddle's op (Python's Lamb passes lamb_weight_decay=0.01)
defupdate("lamb", ["Param", "Grad", "LearningRate", "Moment1", "Moment2", "Beta1Pow", "Beta2Pow", "MasterParam?",
                   "SkipUpdate?"],
          ["ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut?", "Beta2PowOut?", "MasterParamOut?"],
          {"weight_decay": 0.01, **BETAS, "epsilon": 1e-6, "always_adapt": False, **MASTER},
          UpdateRule(like_param=("Moment1", "Moment2"), one_value=("Beta1Pow", "Beta2Pow", "SkipUpdate"),
                     betas=("beta1", "beta2")))
# NAdam's and RAdam's pows are tensors shaped like the parameter (Python's accumulators), not [1]
defupdate("nadam", ["param", "grad", "learning_rate", "momentum_decay_pow", "beta2_pow", "mu_product", "moment1",
                    "moment2", "master_param?"],
          ["param_out", "momentum_decay_pow_out", "beta2_pow_out", "mu_product_out", "moment1_out", "moment2_out",
           "master_param_out?"],
          {**BETAS, "momentum_decay": 0.004, **MASTER},
          UpdateRule(param="param", grad="grad", lr="learning_rate",
                     like_param=("momentum_decay_pow", "beta2_pow", "mu_product", "moment1", "moment2"),
                     nonnegative=("epsilon", "momentum_decay"), betas=("beta1", "beta2")))
defupdate("radam", ["param", "grad", "learning_rate", "beta1_pow", "beta2_pow", "rho", "moment1", "moment2",
                    "master_param?"],
          ["param_out", "beta1_pow_out", "beta2_pow_out", "rho_out", "moment1_out", "moment2_out", "master_param_out?"],
          {**BETAS, **MASTER},
          UpdateRule(param="param", grad="grad", lr="learning_rate",
                     like_param=("beta1_pow", "beta2_pow", "rho", "moment1", "moment2"), betas=("beta1", "beta2")))
