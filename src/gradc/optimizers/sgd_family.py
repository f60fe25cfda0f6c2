"""SGD, Momentum (and its merged form), LarsMomentum, Adagrad, Adadelta, RMSProp and Rprop, with Paddle's
Python arguments and defaults and the ops, accumulators and attributes its minimize writes."""

from __future__ import annotations

import struct

from ..errors import GradcError
from ..ir import AttrType, VarType
from ..schedules import Schedule
from .base import Accumulator, Optimizer, ParamAttr, check_range, out
from .master import MASTER, master_slots, multi_precision_flag, precision_groups
from .regularizer import L2Decay

VELOCITY = Accumulator("velocity", "Velocity", float32=True)   # float32 for a float16/bfloat16 param, as Paddle


class SGD(Optimizer):
    type = "sgd"

    def __init__(self, learning_rate=0.001, weight_decay=None, grad_clip=None, multi_precision=False):
        super().__init__(learning_rate, weight_decay, grad_clip)
        self.multi_precision = multi_precision_flag(type(self).__name__, multi_precision)


class Momentum(Optimizer):
    """L2 weight decay (the optimizer's or a parameter's) is folded into the op's regularization attributes;
    ``use_multi_tensor`` writes merged_momentum ops: one for the float32 parameters, one for the float16 ones."""

    type = "momentum"
    accumulators = (VELOCITY,)

    def __init__(self, learning_rate=0.001, momentum=0.9, use_nesterov=False, weight_decay=None, grad_clip=None,
                 multi_precision=False, rescale_grad=1.0, use_multi_tensor=False):
        super().__init__(learning_rate, weight_decay, grad_clip)
        self.multi_precision = multi_precision_flag(type(self).__name__, multi_precision)
        self.momentum, self.use_nesterov, self.rescale_grad = float(momentum), bool(use_nesterov), float(rescale_grad)
        self.use_multi_tensor = bool(use_multi_tensor)

    def folds(self, regularizer):
        return isinstance(regularizer, L2Decay)

    def _decay(self, attr: ParamAttr) -> tuple[str, float]:
        regularizer = self.regularizer(attr)
        return ("l2_decay", regularizer.coeff) if isinstance(regularizer, L2Decay) else ("", 0.0)

    def op_attrs(self, param, attr):
        method, coeff = self._decay(attr)
        return {"mu": self.momentum, "use_nesterov": self.use_nesterov, "regularization_method": method,
                "regularization_coeff": coeff, "rescale_grad": self.rescale_grad}

    def append_updates(self, emit, pairs, lr, attrs, accs):
        if not self.use_multi_tensor:
            return super().append_updates(emit, pairs, lr, attrs, accs)
        for group in precision_groups(pairs, lambda name: emit.block.var(name).dtype):
            params = [p for p, _ in group]
            decays = [self._decay(attrs[p]) for p in params]
            masters = [accs[p][MASTER] for p in params if MASTER in accs[p]]
            inputs = {"Param": params, "Grad": [g for _, g in group], "Velocity": [accs[p]["velocity"] for p in params],
                      "LearningRate": [self.param_lr(emit, lr, attrs[p]) for p in params]}
            outputs = {"ParamOut": params, "VelocityOut": inputs["Velocity"]}
            master_slots(inputs, outputs, masters, lower_case=False)
            emit.op("merged_momentum", inputs, outputs,
                    {"mu": self.momentum, "use_nesterov": self.use_nesterov, "rescale_grad": self.rescale_grad,
                     "regularization_method": [m for m, _ in decays], "multi_precision": bool(masters),
                     "regularization_coeff": [c for _, c in decays]},
                    role_var=[name for pair in pairs for name in pair])


class LarsMomentum(Optimizer):
    """Paddle's incubate LarsMomentumOptimizer: parameters whose name contains a string of
    ``exclude_from_weight_decay`` (or for which it returns True, given a function: gradc compile --no-decay) get
    lars_weight_decay 0; ``regularization`` adds regularization ops."""

    type = "lars_momentum"
    accumulators = (VELOCITY,)

    def __init__(self, learning_rate=0.001, momentum=0.9, lars_coeff=0.001, lars_weight_decay=0.0005,
                 regularization=None, grad_clip=None, exclude_from_weight_decay=None, epsilon=0.0,
                 multi_precision=False, rescale_grad=1.0):
        super().__init__(learning_rate, regularization, grad_clip)
        self.multi_precision = multi_precision_flag(type(self).__name__, multi_precision)
        self.momentum, self.lars_coeff, self.lars_weight_decay = float(momentum), float(lars_coeff), lars_weight_decay
        self.exclude = exclude_from_weight_decay if callable(exclude_from_weight_decay) else \
            list(exclude_from_weight_decay or [])
        self.epsilon, self.rescale_grad = float(epsilon), float(rescale_grad)

    def op_attrs(self, param, attr):
        excluded = self.exclude(param) if callable(self.exclude) else any(part in param for part in self.exclude)
        decay = 0.0 if excluded else float(self.lars_weight_decay)
        return {"mu": self.momentum, "lars_coeff": self.lars_coeff, "lars_weight_decay": [decay],
                "epsilon": self.epsilon, "rescale_grad": self.rescale_grad}


class Adagrad(Optimizer):
    type = "adagrad"
    accumulators = (Accumulator("moment", "Moment", "initial_accumulator_value"),)

    def __init__(self, learning_rate=0.001, epsilon=1e-6, weight_decay=None, grad_clip=None,
                 initial_accumulator_value=0.0):
        super().__init__(learning_rate, weight_decay, grad_clip)
        check_range("Adagrad", "epsilon", epsilon, 0.0)
        self.epsilon, self.initial_accumulator_value = float(epsilon), float(initial_accumulator_value)

    def op_attrs(self, param, attr):
        return {"epsilon": self.epsilon}


class Adadelta(Optimizer):
    type = "adadelta"
    accumulators = (Accumulator("_avg_squared_grad", "AvgSquaredGrad"),
                    Accumulator("_avg_squared_update", "AvgSquaredUpdate"))

    def __init__(self, learning_rate=0.001, epsilon=1e-6, rho=0.95, weight_decay=None, grad_clip=None):
        super().__init__(learning_rate, weight_decay, grad_clip)
        check_range("Adadelta", "epsilon", epsilon, 0.0)
        self.epsilon, self.rho = float(epsilon), float(rho)

    def op_attrs(self, param, attr):
        return {"epsilon": self.epsilon, "rho": self.rho}


class RMSProp(Optimizer):
    """Python's rho is the op's decay; MeanGrad is always passed (zeros, read only when centered)."""

    type = "rmsprop"
    accumulators = (Accumulator("momentum", "Moment"), Accumulator("mean_square", "MeanSquare"),
                    Accumulator("mean_grad", "MeanGrad"))

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-6, momentum=0.0, centered=False,
                 weight_decay=None, grad_clip=None):
        super().__init__(learning_rate, weight_decay, grad_clip)
        check_range("RMSProp", "rho", rho, 0.0)
        check_range("RMSProp", "epsilon", epsilon, 0.0)
        check_range("RMSProp", "momentum", momentum, 0.0)
        self.rho, self.epsilon, self.momentum, self.centered = float(rho), float(epsilon), float(momentum), centered

    def op_attrs(self, param, attr):
        return {"epsilon": self.epsilon, "decay": self.rho, "momentum": self.momentum, "centered": bool(self.centered)}


class Rprop(Optimizer):
    """Per-element step sizes (the learning_rates accumulator, starting at the learning rate) within
    learning_rate_range, grown or shrunk by etas. As in Paddle the hyper-parameter tensors come from assign_value
    ops before the first update (after a slice Paddle's Python writes reading param[0] for the dtype), and its
    weight_decay of 0.0 still writes L2 regularization ops."""

    type = "rprop"
    slots = ("param", "grad", "learning_rate")
    accumulators = (Accumulator("prevs", "prev"), Accumulator("learning_rates", "learning_rate", "initial_lr"))

    float32_accumulators = False   # Paddle's Rprop names its accumulators after the master but keeps the dtype

    def __init__(self, learning_rate=0.001, learning_rate_range=(1e-5, 50), etas=(0.5, 1.2), grad_clip=None,
                 multi_precision=False):
        if isinstance(learning_rate, Schedule):
            raise GradcError("Rprop: learning_rate must be a number (its step sizes adapt per element)")
        super().__init__(learning_rate, 0.0, grad_clip)
        low, high = map(float, learning_rate_range)
        if not 0.0 < low <= learning_rate <= high:
            raise GradcError(f"Rprop: needs 0 < learning_rate_range[0] <= learning_rate <= learning_rate_range[1], "
                             f"got range {learning_rate_range} and learning_rate {learning_rate}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise GradcError(f"Rprop: needs 0 < etas[0] < 1 < etas[1], got {etas}")
        self.initial_lr, self.range, self.etas = float(learning_rate), (low, high), tuple(map(float, etas))
        self.multi_precision = multi_precision_flag(type(self).__name__, multi_precision)

    def append_updates(self, emit, pairs, lr, attrs, accs):
        emit.role_var = list(pairs[0])
        first = emit.block.var(pairs[0][0])
        row = emit.temporary(f"{first.name}_slice_{{}}", first.shape[1:], first.dtype)
        emit.op("slice", {"Input": [first.name]}, {"Out": [row]},
                {"axes": [0], "starts": [0], "ends": [1], "decrease_axis": [0], "infer_flags": [1]})
        tensors = [self._assign(emit, values, first.dtype) for values in (self.range, self.etas)]
        for param, grad in pairs:
            acc = accs[param]
            prev, rates = acc["prevs"], acc["learning_rates"]
            inputs = {"param": [param], "grad": [grad], "prev": [prev], "learning_rate": [rates],
                      "learning_rate_range": [tensors[0]], "etas": [tensors[1]]}
            outputs = {out("param"): [param], out("prev"): [prev], out("learning_rate"): [rates]}
            master_slots(inputs, outputs, [acc[MASTER]] if MASTER in acc else [], lower_case=True)
            emit.op("rprop", inputs, outputs, {"multi_precision": MASTER in acc}, role_var=[param, grad])

    @staticmethod
    def _assign(emit, values: tuple[float, float], dtype: int) -> str:
        """A [1, 2] float32 tensor written by assign_value (Scalars of the float32-rounded values, as to_tensor),
        cast to the first parameter's dtype when that is another."""
        from ..ops.creation import scalars  # here: the creation family loads with the first program that uses it
        var = emit.temporary("assign_{}.tmp_0", [1, 2], VarType.FP32, stop_gradient=True)
        op = emit.op("assign_value", {}, {"Out": [var]}, {"shape": [1, 2], "dtype": int(VarType.FP32)})
        op.set_attr("values", scalars([struct.unpack("f", struct.pack("f", v))[0] for v in values]), AttrType.SCALARS)
        if dtype == VarType.FP32:
            return var
        cast = emit.temporary("cast_{}.tmp_0", [1, 2], dtype, stop_gradient=True)
        emit.op("cast", {"X": [var]}, {"Out": [cast]}, {"in_dtype": int(VarType.FP32), "out_dtype": int(dtype)})
        return cast
