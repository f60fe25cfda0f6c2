"""Paddle's optimizers, gradient clipping and weight decay for gradc programs: the same ops, accumulators,
attributes, op order and startup initialisers as Paddle's ``minimize`` (gradc.optimizers.base).

    from gradc.optimizers import Adam, ClipGradByGlobalNorm
    startup = Adam(learning_rate=0.01, grad_clip=ClipGradByGlobalNorm(1.0)).minimize(program, "mean_0.tmp_0")
"""

from .adam_family import Adam, Adamax, AdamW, Lamb, NAdam, RAdam
from .base import Optimizer, ParamAttr, Tensor, trained_parameters
from .clip import ClipGradByGlobalNorm, ClipGradByNorm, ClipGradByValue, GradientClip
from .gradient_merge import GradientMergeOptimizer
from .regularizer import L1Decay, L2Decay, WeightDecay
from .schedule_ops import ProgramSchedule
from .sgd_family import SGD, Adadelta, Adagrad, LarsMomentum, Momentum, RMSProp, Rprop

# the names gradc compile --optimizer takes; merged_* are Momentum/Adam with use_multi_tensor
OPTIMIZERS = {"sgd": SGD, "momentum": Momentum, "lars_momentum": LarsMomentum, "adam": Adam, "adamw": AdamW,
              "adamax": Adamax, "adagrad": Adagrad, "adadelta": Adadelta, "rmsprop": RMSProp, "lamb": Lamb,
              "nadam": NAdam, "radam": RAdam, "rprop": Rprop, "merged_momentum": Momentum, "merged_adam": Adam}
MULTI_TENSOR = frozenset({"merged_momentum", "merged_adam"})

__all__ = ["MULTI_TENSOR", "OPTIMIZERS", "SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax",
           "ClipGradByGlobalNorm", "ClipGradByNorm", "ClipGradByValue", "GradientClip", "GradientMergeOptimizer",
           "L1Decay", "L2Decay", "Lamb", "LarsMomentum", "Momentum", "NAdam", "Optimizer", "ParamAttr", "RAdam",
           "RMSProp", "Rprop", "ProgramSchedule", "Tensor", "WeightDecay", "make_optimizer", "minimize",
           "trained_parameters"]


def make_optimizer(name: str, **arguments) -> Optimizer:
    """An optimizer by its gradc name with Paddle's Python arguments (``make_optimizer("adam", beta1=0.85)``)."""
    from ..errors import GradcError

    cls = OPTIMIZERS.get(name)
    if cls is None:
        raise GradcError(f"unknown optimizer '{name}' (known: {', '.join(sorted(OPTIMIZERS))})")
    if name in MULTI_TENSOR:
        arguments["use_multi_tensor"] = True
    try:
        return cls(**arguments)
    except TypeError as exc:
        raise GradcError(f"optimizer {name}: {exc}") from None


def minimize(program, loss: str | None = None, optimizer: str | Optimizer = "adam", lr=None, *, parameter_list=None,
             no_grad_set=None, param_attrs=None, **arguments):
    """Append the backward of ``loss`` and the parameter updates to ``program``; return the startup program that
    initialises the learning rate and the optimizer's accumulators (run it once, after the model's own startup).
    ``optimizer`` is a name of OPTIMIZERS with Paddle's arguments (``lr``: a number, a gradc.schedules
    Schedule, or a ProgramSchedule), or an Optimizer object.

        startup = gradc.minimize(program, "mean_0.tmp_0", "adam", lr=0.01, beta1=0.85)
    """
    from ..errors import GradcError

    if isinstance(optimizer, str):
        if lr is not None:
            arguments["learning_rate"] = lr
        optimizer = make_optimizer(optimizer, **arguments)
    elif lr is not None or arguments:
        raise GradcError("minimize: give lr and the optimizer's arguments to the optimizer object itself")
    return optimizer.minimize(program, loss, parameter_list, no_grad_set, param_attrs)
