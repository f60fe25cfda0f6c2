"""Optimizers as Paddle writes them: they update Param and their accumulators in place (ParamOut is the Param
var, VelocityOut is Velocity, ...) and have no gradient. This module holds the SGD/momentum family, Adagrad,
Adadelta, RMSProp and Rprop; gradc.ops.optimizer_adam the Adam family. docs/optimizers.md has the rules."""

from __future__ import annotations

from ..ir import AttrType, as_float32
from ..registry import NO_GRAD, defop, typed
from .optimizer_checks import OpView, UpdateRule, check_update, update_rule


def source_slot(output: str) -> str:
    """The input an output slot overwrites: ParamOut -> Param, moment1_out -> moment1."""
    return output.removesuffix("Out").removesuffix("_out")


def _infer(rule: UpdateRule):
    """Checks the op (gradc.ops.optimizer_checks), then shapes each output like the input it overwrites."""

    def infer(ctx):
        check_update(rule, OpView(ctx.op.input, ctx.shape, ctx.attr), ctx.fail)
        results = {}
        for slot in ctx.op.outputs:
            source = source_slot(slot)
            pairs = [(ctx.shape(source, i), ctx.dtype(source, i)) for i in range(len(ctx.op.input(source)))]
            if pairs:
                results[slot] = pairs if len(pairs) > 1 else pairs[0]
        return results

    return infer


def float32(value):
    """A FLOAT attribute's value as Paddle holds it (0.9 is 0.8999999761581421), lists item by item."""
    if isinstance(value, list):
        return [float32(v) for v in value]
    return as_float32(value) if isinstance(value, float) else value


def defupdate(type: str, inputs: list[str], outputs: list[str], attrs: dict, rule: UpdateRule,
              tensor_attrs: tuple[str, ...] = ()) -> None:
    """Register an optimizer op: in-place outputs, the checks of ``rule``, no gradient. Float defaults are
    Paddle's float32 values, so an op without the attribute updates exactly as Paddle's does."""
    update_rule(type, rule)
    defop(type, inputs, outputs, attrs={k: float32(v) for k, v in attrs.items()}, infer=_infer(rule), grad=NO_GRAD,
          tensor_attrs=tensor_attrs)


MASTER = {"multi_precision": False}
L2_METHODS = (("regularization_method", ("", "l2_decay")),)

defupdate("sgd", ["Param", "LearningRate", "Grad", "MasterParam?"], ["ParamOut", "MasterParamOut?"], MASTER,
          UpdateRule(nonnegative=()))

# mu has no default in Paddle's op (Python passes 0.9)
MOMENTUM_ATTRS = {"mu": 0.9, "use_nesterov": False, "regularization_method": "", "regularization_coeff": 0.0,
                  "multi_precision": False, "rescale_grad": 1.0}
defupdate("momentum", ["Param", "Grad", "Velocity", "LearningRate", "MasterParam?"],
          ["ParamOut", "VelocityOut", "MasterParamOut?"], MOMENTUM_ATTRS,
          UpdateRule(like_param=("Velocity",), nonnegative=(), choices=L2_METHODS))
defupdate("merged_momentum", ["Param[]", "Grad[]", "Velocity[]", "LearningRate[]", "MasterParam[]?"],
          ["ParamOut[]", "VelocityOut[]", "MasterParamOut[]?"],
          {**MOMENTUM_ATTRS, "regularization_method": typed([], AttrType.STRINGS),
           "regularization_coeff": typed([], AttrType.FLOATS)},
          UpdateRule(like_param=("Velocity",), nonnegative=(), choices=L2_METHODS))
defupdate("lars_momentum", ["Param[]", "Grad[]", "Velocity[]", "LearningRate[]", "MasterParam[]?"],
          ["ParamOut[]", "VelocityOut[]", "MasterParamOut[]?"],
          {"mu": 0.9, "lars_coeff": 0.001, "lars_weight_decay": [0.0005], "epsilon": 0.0, "multi_precision": False,
           "rescale_grad": 1.0},
          UpdateRule(like_param=("Velocity",), nonnegative=("epsilon", "lars_coeff")))

defupdate("adagrad", ["Param", "Grad", "Moment", "LearningRate", "MasterParam?"],
          ["ParamOut", "MomentOut", "MasterParamOut?"], {"epsilon": 1e-6, **MASTER},
          UpdateRule(like_param=("Moment",)))
defupdate("adadelta", ["Param", "Grad", "AvgSquaredGrad", "AvgSquaredUpdate", "LearningRate", "MasterParam?"],
          ["ParamOut", "AvgSquaredGradOut", "AvgSquaredUpdateOut", "MasterParamOut?"],
          {"rho": 0.95, "epsilon": 1e-6, **MASTER}, UpdateRule(like_param=("AvgSquaredGrad", "AvgSquaredUpdate")))
# MeanGrad is optional, but its output is not: Python always passes both (zeros, untouched unless centered)
defupdate("rmsprop", ["Param", "MeanSquare", "Grad", "Moment", "LearningRate", "MeanGrad?", "MasterParam?"],
          ["ParamOut", "MomentOut", "MeanSquareOut", "MeanGradOut", "MasterParamOut?"],
          {"epsilon": 1e-10, "decay": 0.9, "momentum": 0.0, "centered": False, **MASTER},
          UpdateRule(like_param=("MeanSquare", "Moment", "MeanGrad"), needs=(("centered", "MeanGrad"),)))
# Rprop's learning_rate is its per-element step size (an accumulator); range and etas are [1, 2] tensors
defupdate("rprop", ["param", "grad", "prev", "learning_rate", "master_param?", "learning_rate_range", "etas"],
          ["param_out", "prev_out", "learning_rate_out", "master_param_out?"], MASTER,
          UpdateRule(param="param", grad="grad", lr="learning_rate", like_param=("prev",), nonnegative=(),
                     lr_like_param=True))
