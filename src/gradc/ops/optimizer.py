"""Optimizers as Paddle writes them: they update Param and their accumulators in place
(ParamOut is the Param var, Moment1Out is Moment1, ...). Not differentiable."""

from __future__ import annotations

from ..ir import AttrType
from ..registry import NO_GRAD, defop, typed


def _in_place(*pairs: tuple[str, str]):
    """Each output has the shape and dtype of the input it overwrites."""
    return lambda ctx: {out: (ctx.shape(src), ctx.dtype(src)) for out, src in pairs if ctx.has(src)}


defop("sgd", ["Param", "LearningRate", "Grad", "MasterParam?"], ["ParamOut", "MasterParamOut?"],
      attrs={"multi_precision": False}, infer=_in_place(("ParamOut", "Param")), grad=NO_GRAD)

defop("momentum", ["Param", "Grad", "Velocity", "LearningRate", "MasterParam?"],
      ["ParamOut", "VelocityOut", "MasterParamOut?"],
      attrs={"mu": 0.9, "use_nesterov": False, "regularization_method": "", "regularization_coeff": 0.0,
             "multi_precision": False, "rescale_grad": 1.0},
      infer=_in_place(("ParamOut", "Param"), ("VelocityOut", "Velocity")), grad=NO_GRAD)

ADAM_INPUTS = ["Param", "Grad", "LearningRate", "Moment1", "Moment2", "Moment2Max?", "Beta1Pow", "Beta2Pow",
               "MasterParam?", "Beta1Tensor?", "Beta2Tensor?", "EpsilonTensor?", "SkipUpdate?"]
ADAM_OUTPUTS = ["ParamOut", "Moment1Out", "Moment2Out", "Moment2MaxOut?", "Beta1PowOut", "Beta2PowOut",
                "MasterParamOut?"]
ADAM_ATTRS = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "lazy_mode": False, "amsgrad": False,
              "min_row_size_to_use_multithread": typed(1000, AttrType.LONG), "multi_precision": False,
              "use_global_beta_pow": False}
_ADAM_INFER = _in_place(("ParamOut", "Param"), ("Moment1Out", "Moment1"), ("Moment2Out", "Moment2"),
                        ("Beta1PowOut", "Beta1Pow"), ("Beta2PowOut", "Beta2Pow"))

defop("adam", ADAM_INPUTS, ADAM_OUTPUTS, attrs=ADAM_ATTRS, infer=_ADAM_INFER, grad=NO_GRAD)
defop("adamw", ADAM_INPUTS, ADAM_OUTPUTS, infer=_ADAM_INFER, grad=NO_GRAD,
      attrs={**ADAM_ATTRS, "coeff": 0.01, "lr_ratio": 1.0, "with_decay": False})
