"""Adam (and its merged form), AdamW, Adamax, Lamb, NAdam and RAdam, with Paddle's Python arguments and
defaults and the ops, accumulators and attributes its minimize writes."""

from __future__ import annotations

from ..errors import GradcError
from .base import Accumulator, Optimizer, Tensor, check_range
from .master import MASTER, master_slots, multi_precision_flag, precision_groups

# Paddle's Adam family keeps these in float32 for a float16/bfloat16 parameter (a bfloat16 0.999 would be 1.0)
MOMENTS = (Accumulator("moment1", "Moment1", float32=True), Accumulator("moment2", "Moment2", float32=True))
POWS = (Accumulator("beta1_pow_acc", "Beta1Pow", "beta1_pow_start", scalar=True, float32=True),
        Accumulator("beta2_pow_acc", "Beta2Pow", "beta2_pow_start", scalar=True, float32=True))


def _check_betas(owner: str, beta1, beta2, epsilon) -> None:
    check_range(owner, "beta1", beta1, 0.0, 1.0)
    check_range(owner, "beta2", beta2, 0.0, 1.0)
    check_range(owner, "epsilon", epsilon, 0.0)


class Adam(Optimizer):
    """beta1, beta2 and epsilon may be Tensor vars (Beta1Tensor, ...; the attributes keep their defaults and,
    as in Paddle, the beta pows start at 0.9 and 0.999 anyway); ``use_multi_tensor`` writes merged_adam ops (one
    for the float32 parameters, one for the float16 ones); ``multi_precision`` gives float16 ones master weights."""

    type = "adam"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, weight_decay=None, grad_clip=None,
                 lazy_mode=False, multi_precision=False, use_multi_tensor=False, amsgrad=False):
        super().__init__(learning_rate, weight_decay, grad_clip)
        self.multi_precision = multi_precision_flag(type(self).__name__, multi_precision)
        _check_betas(type(self).__name__, beta1, beta2, epsilon)
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.lazy_mode, self.use_multi_tensor, self.amsgrad = bool(lazy_mode), bool(use_multi_tensor), bool(amsgrad)
        if self.use_multi_tensor and self.tensors():
            raise GradcError("Adam: use_multi_tensor takes numbers for beta1, beta2 and epsilon, not tensors")
        maximum = (Accumulator("moment2_max", "Moment2Max", float32=True),) if self.amsgrad else ()
        self.accumulators = MOMENTS + maximum + POWS

    @property
    def beta1_pow_start(self):
        return 0.9 if isinstance(self.beta1, Tensor) else self.beta1

    @property
    def beta2_pow_start(self):
        return 0.999 if isinstance(self.beta2, Tensor) else self.beta2

    def tensors(self):
        named = {"Beta1Tensor": self.beta1, "Beta2Tensor": self.beta2, "EpsilonTensor": self.epsilon}
        return {slot: value for slot, value in named.items() if isinstance(value, Tensor)}

    def _hyper(self) -> dict:
        named = {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon}
        return {name: float(value) for name, value in named.items() if not isinstance(value, Tensor)}

    def op_attrs(self, param, attr):
        return {**self._hyper(), "lazy_mode": self.lazy_mode, "amsgrad": self.amsgrad}

    def append_updates(self, emit, pairs, lr, attrs, accs):
        if not self.use_multi_tensor:
            return super().append_updates(emit, pairs, lr, attrs, accs)
        for group in precision_groups(pairs, lambda name: emit.block.var(name).dtype):
            params = [p for p, _ in group]
            inputs = {"Param": params, "Grad": [g for _, g in group],
                      "LearningRate": [self.param_lr(emit, lr, attrs[p]) for p in params]}
            outputs = {"ParamOut": params}
            for acc in self.accumulators:
                inputs[acc.slot] = [accs[p][acc.name] for p in params]
                outputs[acc.slot + "Out"] = inputs[acc.slot]
            masters = [accs[p][MASTER] for p in params if MASTER in accs[p]]
            master_slots(inputs, outputs, masters, lower_case=False)
            emit.op("merged_adam", inputs, outputs,
                    {**self._hyper(), "amsgrad": self.amsgrad, "multi_precision": bool(masters)},
                    role_var=[name for pair in pairs for name in pair])


class AdamW(Adam):
    """Decoupled weight decay (the op's coeff, with_decay): every parameter decays unless
    ``apply_decay_param_fun(name)`` says no; ``lr_ratio(name)`` scales a parameter's learning rate."""

    type = "adamw"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, weight_decay=0.01, lr_ratio=None,
                 apply_decay_param_fun=None, grad_clip=None, lazy_mode=False, multi_precision=False, amsgrad=False):
        super().__init__(learning_rate, beta1, beta2, epsilon, None, grad_clip, lazy_mode, multi_precision, False,
                         amsgrad)
        self.coeff, self.lr_ratio, self.apply_decay_param_fun = float(weight_decay), lr_ratio, apply_decay_param_fun

    def op_attrs(self, param, attr):
        decays = self.apply_decay_param_fun is None or bool(self.apply_decay_param_fun(param))
        ratio = 1.0 if self.lr_ratio is None else float(self.lr_ratio(param))
        return {**super().op_attrs(param, attr), "coeff": self.coeff, "lr_ratio": ratio, "with_decay": decays}


class Adamax(Optimizer):
    """The beta pow is an input only: one scale op per parameter advances it after all updates."""

    type = "adamax"

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, weight_decay=None, grad_clip=None):
        super().__init__(learning_rate, weight_decay, grad_clip)
        _check_betas("Adamax", beta1, beta2, epsilon)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.accumulators = (Accumulator("moment", "Moment", float32=True),
                             Accumulator("inf_norm", "InfNorm", float32=True),
                             Accumulator("beta1_pow_acc", "Beta1Pow", "beta1", scalar=True, read_only=True))

    def op_attrs(self, param, attr):
        return {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon}

    def finish(self, emit, pairs, accs):
        for param, grad in pairs:
            pow_acc = accs[param]["beta1_pow_acc"]
            emit.scale(pow_acc, pow_acc, self.beta1, role_var=[param, grad])


class Lamb(Optimizer):
    """lamb_weight_decay is the op's weight_decay, 0 where ``exclude_from_weight_decay_fn(name)`` is true
    (which also turns the trust ratio off unless always_adapt)."""

    type = "lamb"
    accumulators = MOMENTS + (Accumulator("beta1_pow_acc", "Beta1Pow", "beta1", scalar=True, float32=True),
                              Accumulator("beta2_pow_acc", "Beta2Pow", "beta2", scalar=True, float32=True))

    def __init__(self, learning_rate=0.001, lamb_weight_decay=0.01, beta1=0.9, beta2=0.999, epsilon=1e-6,
                 grad_clip=None, exclude_from_weight_decay_fn=None, multi_precision=False, always_adapt=False):
        super().__init__(learning_rate, None, grad_clip)
        self.multi_precision = multi_precision_flag(type(self).__name__, multi_precision)
        _check_betas("Lamb", beta1, beta2, epsilon)
        self.lamb_weight_decay, self.beta1, self.beta2 = float(lamb_weight_decay), float(beta1), float(beta2)
        self.epsilon, self.always_adapt, self.exclude = float(epsilon), bool(always_adapt), exclude_from_weight_decay_fn

    def op_attrs(self, param, attr):
        excluded = self.exclude is not None and self.exclude(param)
        return {"weight_decay": 0.0 if excluded else self.lamb_weight_decay, "beta1": self.beta1, "beta2": self.beta2,
                "epsilon": self.epsilon, "always_adapt": self.always_adapt}


class NAdam(Optimizer):
    type = "nadam"
    slots = ("param", "grad", "learning_rate")
    accumulators = tuple(Accumulator(name, name, fill, float32=True) for name, fill in (
        ("momentum_decay_pow", 1.0), ("beta2_pow", 1.0), ("mu_product", 1.0), ("moment1", 0.0), ("moment2", 0.0)))

    def __init__(self, learning_rate=0.002, beta1=0.9, beta2=0.999, epsilon=1e-8, momentum_decay=0.004,
                 weight_decay=None, grad_clip=None):
        super().__init__(learning_rate, weight_decay, grad_clip)
        _check_betas("NAdam", beta1, beta2, epsilon)
        check_range("NAdam", "momentum_decay", momentum_decay, 0.0)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)
        self.momentum_decay = float(momentum_decay)

    def op_attrs(self, param, attr):
        return {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon,
                "momentum_decay": self.momentum_decay}


class RAdam(Optimizer):
    type = "radam"
    slots = ("param", "grad", "learning_rate")
    accumulators = tuple(Accumulator(name, name, fill, float32=True) for name, fill in (
        ("beta1_pow", 1.0), ("beta2_pow", 1.0), ("rho", 1.0), ("moment1", 0.0), ("moment2", 0.0)))

    def __init__(self, learning_rate=0.001, beta1=0.9, beta2=0.999, epsilon=1e-8, weight_decay=None, grad_clip=None):
        super().__init__(learning_rate, weight_decay, grad_clip)
        _check_betas("RAdam", beta1, beta2, epsilon)
        self.beta1, self.beta2, self.epsilon = float(beta1), float(beta2), float(epsilon)

    def op_attrs(self, param, attr):
        return {"beta1": self.beta1, "beta2": self.beta2, "epsilon": self.epsilon}
