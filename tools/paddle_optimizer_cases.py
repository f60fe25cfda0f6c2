"""The training programs of tools/paddle_optimizer_fixtures.py: three small models and one case per optimizer,
gradient clipping mode, regularization mode and learning-rate schedule, built with Paddle's own classes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import paddle
import paddle.nn.functional as F
from paddle.base.layer_helper import LayerHelper
from paddle.incubate.optimizer import LarsMomentumOptimizer
from paddle.optimizer import lr as schedules
from paddle.regularizer import L1Decay, L2Decay

paddle.enable_static()


def _legacy_op(op_type: str, inputs: dict, attrs: dict | None = None):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(inputs["X"].dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": out}, attrs=attrs or {})
    return out


# Paddle 3.3.1's ClipGradByGlobalNorm calls paddle.sqrt and paddle.maximum, which only build PIR ops and fail
# in a legacy program; these write the legacy ops the same clip wrote before PIR (sqrt, elementwise_max).
paddle.sqrt = lambda x, name=None: _legacy_op("sqrt", {"X": x})
paddle.maximum = lambda x, y, name=None: _legacy_op("elementwise_max", {"X": x, "Y": y}, {"axis": -1})


@dataclass(frozen=True)
class TensorArg:
    """A hyper-parameter passed as a persistable [1] float32 var (Adam's Beta1Tensor, ...)."""
    value: float


@dataclass(frozen=True)
class Schedule:
    """A paddle.optimizer.lr scheduler, built inside the case's program guard."""
    name: str
    kwargs: dict


@dataclass
class Case:
    model: str                      # a key of MODELS
    optimizer: type
    kwargs: dict
    param_attrs: dict = field(default_factory=dict)   # "first.w" / "last.w" -> ParamAttr kwargs
    steps: int = 5


def mlp(param_attrs: dict) -> tuple:
    """x [8, 4] -> fc(8) -> relu -> fc(3) -> softmax cross entropy."""
    x = paddle.static.data("x", [8, 4], "float32")
    label = paddle.static.data("label", [8, 1], "int64")
    hidden = F.relu(paddle.nn.Linear(4, 8, weight_attr=param_attrs.get("first.w"))(x))
    logits = paddle.nn.Linear(8, 3, weight_attr=param_attrs.get("last.w"))(hidden)
    loss = paddle.mean(F.cross_entropy(logits, label))

    def batch(rng):
        return {"x": rng.standard_normal((8, 4)).astype("float32"),
                "label": rng.integers(0, 3, (8, 1)).astype("int64")}
    return loss, batch


def cnn(param_attrs: dict) -> tuple:
    """img [4, 1, 6, 6] -> conv 3x3 (3 channels) -> batch_norm -> relu -> max pool 2 -> fc(2, no bias) -> CE.
    The conv bias is frozen: batch_norm cancels its gradient, and the Adam family would turn the rounding
    noise left of it into full learning-rate steps."""
    img = paddle.static.data("img", [4, 1, 6, 6], "float32")
    label = paddle.static.data("label", [4, 1], "int64")
    conv = paddle.nn.Conv2D(1, 3, 3, padding=1, weight_attr=param_attrs.get("first.w"),
                            bias_attr=paddle.ParamAttr(trainable=False))
    hidden = F.max_pool2d(F.relu(paddle.nn.BatchNorm2D(3)(conv(img))), 2)
    fc = paddle.nn.Linear(27, 2, weight_attr=param_attrs.get("last.w"), bias_attr=False)
    logits = fc(paddle.flatten(hidden, 1))
    loss = paddle.mean(F.cross_entropy(logits, label))

    def batch(rng):
        return {"img": rng.standard_normal((4, 1, 6, 6)).astype("float32"),
                "label": rng.integers(0, 2, (4, 1)).astype("int64")}
    return loss, batch


def linear(param_attrs: dict) -> tuple:
    """x [4, 3] -> fc(1) -> mean squared error against y."""
    x = paddle.static.data("x", [4, 3], "float32")
    y = paddle.static.data("y", [4, 1], "float32")
    loss = F.mse_loss(paddle.nn.Linear(3, 1, weight_attr=param_attrs.get("first.w"))(x), y)

    def batch(rng):
        return {"x": rng.standard_normal((4, 3)).astype("float32"),
                "y": rng.standard_normal((4, 1)).astype("float32")}
    return loss, batch


MODELS = {"mlp": mlp, "cnn": cnn, "linear": linear}
BOTH = ("mlp", "cnn")
MLP = ("mlp",)
opt = paddle.optimizer


def not_bias(name: str) -> bool:
    return not name.endswith(".b_0")


def is_bias(param) -> bool:
    return param.name.endswith(".b_0")


def _optimizer_cases() -> dict[str, tuple]:
    """name -> (optimizer class, kwargs, param attrs, models); variants of an optimizer on the mlp only."""
    return {
        "sgd": (opt.SGD, {"learning_rate": 0.1}, {}, BOTH),
        "momentum": (opt.Momentum, {"learning_rate": 0.05, "momentum": 0.9}, {}, BOTH),
        "momentum_nesterov_l2": (opt.Momentum, {"learning_rate": 0.05, "momentum": 0.8, "use_nesterov": True,
                                                "weight_decay": L2Decay(0.01)}, {}, MLP),
        "lars_momentum": (LarsMomentumOptimizer, {"learning_rate": 0.1, "momentum": 0.9, "lars_coeff": 0.01,
                                                  "lars_weight_decay": 0.001, "exclude_from_weight_decay": ["b_0"],
                                                  "epsilon": 1e-6, "rescale_grad": 0.5}, {}, BOTH),
        "adam": (opt.Adam, {"learning_rate": 0.01, "beta1": 0.85, "beta2": 0.99, "epsilon": 1e-6}, {}, BOTH),
        "adam_tensors": (opt.Adam, {"learning_rate": 0.01, "beta1": TensorArg(0.8), "beta2": TensorArg(0.95),
                                    "epsilon": TensorArg(1e-5)}, {}, MLP),
        "adam_amsgrad": (opt.Adam, {"learning_rate": 0.01, "amsgrad": True}, {}, MLP),
        "adamw": (opt.AdamW, {"learning_rate": 0.01, "weight_decay": 0.05, "apply_decay_param_fun": not_bias},
                  {}, BOTH),
        "adamax": (opt.Adamax, {"learning_rate": 0.02, "beta1": 0.8, "beta2": 0.95, "epsilon": 1e-6}, {}, BOTH),
        # epsilons large enough that where a rule adds them (inside or outside the sqrt) shows in the values
        "adagrad": (opt.Adagrad, {"learning_rate": 0.05, "epsilon": 0.05, "initial_accumulator_value": 0.01},
                    {}, BOTH),
        "adadelta": (opt.Adadelta, {"learning_rate": 0.5, "epsilon": 1e-3, "rho": 0.9}, {}, BOTH),
        "rmsprop": (opt.RMSProp, {"learning_rate": 0.01, "rho": 0.9, "epsilon": 1e-6}, {}, BOTH),
        "rmsprop_centered": (opt.RMSProp, {"learning_rate": 0.01, "rho": 0.9, "epsilon": 1e-6, "momentum": 0.5,
                                           "centered": True}, {}, MLP),
        "lamb": (opt.Lamb, {"learning_rate": 0.02, "lamb_weight_decay": 0.01,
                            "exclude_from_weight_decay_fn": is_bias}, {}, BOTH),
        "merged_adam": (opt.Adam, {"learning_rate": 0.01, "use_multi_tensor": True}, {}, BOTH),
        "merged_momentum": (opt.Momentum, {"learning_rate": 0.05, "momentum": 0.9, "use_multi_tensor": True},
                            {}, BOTH),
        "nadam": (opt.NAdam, {"learning_rate": 0.01, "beta2": 0.99, "epsilon": 1e-6, "momentum_decay": 0.004},
                  {}, MLP),
        "radam": (opt.RAdam, {"learning_rate": 0.01, "beta2": 0.95, "epsilon": 1e-6}, {}, MLP),
        "rprop": (opt.Rprop, {"learning_rate": 0.01, "learning_rate_range": (1e-4, 0.05), "etas": (0.5, 1.2)},
                  {}, MLP),
    }


# RAdam switches from its momentum-only step to the rectified Adam step when rho_t > 5: from step 6 on
STEPS_OF = {"radam": 8}


def _clip_and_regularization_cases() -> dict[str, tuple]:
    """Built once per model: clips and regularizers are objects of one program."""
    sgd = {"learning_rate": 0.1}
    return {
        "clip_global_norm": (opt.SGD, {**sgd, "grad_clip": paddle.nn.ClipGradByGlobalNorm(0.7)}, {}, BOTH),
        "clip_norm": (opt.SGD, {**sgd, "grad_clip": paddle.nn.ClipGradByNorm(0.2)}, {}, BOTH),
        "clip_value": (opt.SGD, {**sgd, "grad_clip": paddle.nn.ClipGradByValue(0.05)}, {}, BOTH),
        "l1_decay": (opt.Momentum, {"learning_rate": 0.05, "weight_decay": L1Decay(0.01)}, {}, BOTH),
        "l2_decay": (opt.SGD, {**sgd, "weight_decay": L2Decay(0.02)}, {}, BOTH),
        "param_regularizers": (opt.Momentum, {"learning_rate": 0.05, "weight_decay": L2Decay(0.01)},
                               {"first.w": {"regularizer": L1Decay(0.02)}, "last.w": {"regularizer": L2Decay(0.03)}},
                               BOTH),
        "param_learning_rate": (opt.SGD, sgd, {"first.w": {"learning_rate": 0.5}}, MLP),
    }


SCHEDULES = {
    "StepDecay": {"learning_rate": 0.1, "step_size": 2, "gamma": 0.5},
    "MultiStepDecay": {"learning_rate": 0.1, "milestones": [1, 3], "gamma": 0.5},
    "ExponentialDecay": {"learning_rate": 0.1, "gamma": 0.8},
    "CosineAnnealingDecay": {"learning_rate": 0.1, "T_max": 3, "eta_min": 0.01},
    "LinearWarmup": {"learning_rate": 0.1, "warmup_steps": 3, "start_lr": 0.01, "end_lr": 0.1},
    "PiecewiseDecay": {"boundaries": [2, 4], "values": [0.1, 0.05, 0.01]},
    "NoamDecay": {"d_model": 16, "warmup_steps": 3, "learning_rate": 1.0},
}


def make_schedule(schedule: Schedule):
    return getattr(schedules, schedule.name)(**schedule.kwargs)


def cases() -> dict[str, Case]:
    """Every case by name, <model>_<case>; the schedules train the linear model with SGD."""
    table: dict[str, Case] = {}
    for model in MODELS:
        for name, (cls, kwargs, attrs, models) in {**_optimizer_cases(), **_clip_and_regularization_cases()}.items():
            if model in models:
                table[f"{model}_{name}"] = Case(model, cls, kwargs, attrs, STEPS_OF.get(name, 5))
    for name, kwargs in SCHEDULES.items():
        table[f"linear_lr_{name}"] = Case("linear", opt.SGD, {"learning_rate": Schedule(name, kwargs)})
    return table


def describe(value) -> object:
    """A JSON-able description of a hyper-parameter for meta.json."""
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [describe(v) for v in value]
    if isinstance(value, dict):
        return {k: describe(v) for k, v in value.items()}
    if isinstance(value, TensorArg):
        return {"tensor": value.value}
    if isinstance(value, Schedule):
        return {"scheduler": value.name, **value.kwargs}
    if isinstance(value, Callable) and hasattr(value, "__name__"):
        return f"function {value.__name__}"
    settings = {k.lstrip("_"): v for k, v in vars(value).items() if isinstance(v, (bool, int, float, str))}
    return {"class": type(value).__name__, **settings}
