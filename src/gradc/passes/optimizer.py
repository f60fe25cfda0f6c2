"""The optimizer pass: after the backward pass, append one update op per parameter (sgd, momentum,
adam, adamw), as Paddle's ``optimizer.minimize`` does. Accumulators and the learning rate are
persistable vars; the startup program that initialises them is the pass's result."""

from __future__ import annotations

from ..backward import roles
from ..errors import GradcError
from ..ir import AttrType, Block, Program, VarType
from .base import Pass, register_pass

# accumulator suffix -> initial value (None: zeros shaped like the parameter; a float: a [1] tensor)
_ACCUMULATORS = {
    "sgd": {},
    "momentum": {"velocity": None},
    "adam": {"moment1": None, "moment2": None, "beta1_pow_acc": "beta1", "beta2_pow_acc": "beta2"},
}
_ACCUMULATORS["adamw"] = _ACCUMULATORS["adam"]
_SLOTS = {"velocity": "Velocity", "moment1": "Moment1", "moment2": "Moment2",
          "beta1_pow_acc": "Beta1Pow", "beta2_pow_acc": "Beta2Pow"}
_DEFAULTS = {"momentum": {"mu": 0.9}, "adam": {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8},
             "adamw": {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-8, "coeff": 0.01, "with_decay": True}}


def trained_parameters(block: Block) -> list[str]:
    """Parameters whose gradient the program computes."""
    written = {name for op in block.ops for name in op.output_names()}
    return [name for name, var in block.vars.items() if var.is_parameter and name + "@GRAD" in written]


@register_pass
class OptimizerPass(Pass):
    name = "optimizer"

    def __init__(self, kind: str = "sgd", learning_rate: float = 0.01, **attrs):
        if kind not in _ACCUMULATORS:
            raise GradcError(f"unknown optimizer '{kind}' (known: {', '.join(sorted(_ACCUMULATORS))})")
        self.kind = kind
        self.learning_rate = learning_rate
        self.attrs = {**_DEFAULTS.get(kind, {}), **attrs}

    def requires(self, program: Program) -> None:
        if not trained_parameters(program.global_block):
            raise self.fail("no parameter has a gradient: run the backward pass first")

    def apply(self, program: Program) -> Program:
        block = program.global_block
        startup = Program()
        init = startup.global_block
        lr = _unique(block, "learning_rate")
        self._persistable(block, init, lr, [], VarType.FP32, self.learning_rate)
        for param in trained_parameters(block):
            var = block.vars[param]
            inputs = {"Param": [param], "Grad": [param + "@GRAD"], "LearningRate": [lr]}
            outputs = {"ParamOut": [param]}
            for suffix, initial in _ACCUMULATORS[self.kind].items():
                name = _unique(block, f"{param}_{suffix}")
                value = 0.0 if initial is None else self.attrs[initial]
                self._persistable(block, init, name, var.shape if initial is None else [1], var.dtype, value)
                inputs[_SLOTS[suffix]] = [name]
                outputs[_SLOTS[suffix] + "Out"] = [name]
            op = block.append_op(self.kind, inputs, outputs, self.attrs)
            roles.set_role(op, roles.OPTIMIZE)
            op.set_attr("op_role_var", [param, param + "@GRAD"], AttrType.STRINGS)
        return startup

    @staticmethod
    def _persistable(block: Block, init: Block, name: str, shape, dtype, value: float) -> None:
        block.create_var(name, shape, dtype, persistable=True)
        init.create_var(name, shape, dtype, persistable=True)
        init.append_op("fill_constant", {}, {"Out": [name]},
                       {"shape": list(shape), "dtype": int(dtype), "value": float(value)},
                       {"shape": AttrType.LONGS, "dtype": AttrType.INT, "value": AttrType.FLOAT})


def _unique(block: Block, stem: str) -> str:
    k = 0
    while f"{stem}_{k}" in block.vars:
        k += 1
    return f"{stem}_{k}"
