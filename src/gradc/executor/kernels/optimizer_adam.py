"""Kernels of gradc.ops.optimizer_adam: thin wrappers over optimizer_math (see kernels.optimizer)."""

from __future__ import annotations

import numpy as np

from . import kernel
from . import optimizer_math as M
from .optimizer import check, pick, update, update_each

ADAM_OUT = ["ParamOut", "Moment1Out", "Moment2Out", "Moment2MaxOut", "Beta1PowOut", "Beta2PowOut"]


def _hyper(k, slot: str, attr: str):
    """A hyper-parameter: the [1] tensor of ``slot`` when fed (Adam(beta1=<Tensor>)), else the attribute."""
    tensor = k.optional(slot)
    return k.attr(attr) if tensor is None else np.asarray(tensor).reshape(-1)[0]


def _adam_args(k) -> tuple[list, dict]:
    """adam/adamw's arguments after (param, grad): moments, pows and hyper-parameters, and the options."""
    skip = k.optional("SkipUpdate")
    args = [k.x("LearningRate"), k.x("Moment1"), k.x("Moment2"), k.x("Beta1Pow"), k.x("Beta2Pow"),
            _hyper(k, "Beta1Tensor", "beta1"), _hyper(k, "Beta2Tensor", "beta2"), _hyper(k, "EpsilonTensor", "epsilon")]
    options = {"moment2_max": k.optional("Moment2Max"), "amsgrad": k.attr("amsgrad"),
               "use_global_beta_pow": k.attr("use_global_beta_pow"),
               "skip_update": skip is not None and bool(np.asarray(skip).reshape(-1)[0])}
    return args, options


@kernel("adam")
def adam(k):
    check(k)
    args, options = _adam_args(k)
    return update(k, lambda p, g: M.adam(p, g, *args, **options), ADAM_OUT)


@kernel("adamw")
def adamw(k):
    check(k)
    args, options = _adam_args(k)
    decay = (k.attr("coeff"), k.attr("lr_ratio"), k.attr("with_decay"))
    return update(k, lambda p, g: M.adamw(p, g, *args, *decay, **options), ADAM_OUT)


@kernel("merged_adam")
def merged_adam(k):
    check(k)
    lrs, maxes = k.xs("LearningRate"), k.xs("Moment2Max")
    return update_each(k, lambda i: lambda p, g: M.adam(
        p, g, pick(lrs, i), k.x("Moment1", i), k.x("Moment2", i), k.x("Beta1Pow", i), k.x("Beta2Pow", i),
        k.attr("beta1"), k.attr("beta2"), k.attr("epsilon"), maxes[i] if maxes else None, k.attr("amsgrad"),
        k.attr("use_global_beta_pow")), ADAM_OUT)


@kernel("adamax")
def adamax(k):
    check(k)
    return update(k, lambda p, g: M.adamax(p, g, k.x("LearningRate"), k.x("Moment"), k.x("InfNorm"), k.x("Beta1Pow"),
                                           k.attr("beta1"), k.attr("beta2"), k.attr("epsilon")),
                  ["ParamOut", "MomentOut", "InfNormOut"])


@kernel("lamb")
def lamb(k):
    check(k)
    skip = k.optional("SkipUpdate")
    skip = skip is not None and bool(np.asarray(skip).reshape(-1)[0])
    return update(k, lambda p, g: M.lamb(p, g, k.x("LearningRate"), k.x("Moment1"), k.x("Moment2"), k.x("Beta1Pow"),
                                         k.x("Beta2Pow"), k.attr("weight_decay"), k.attr("beta1"), k.attr("beta2"),
                                         k.attr("epsilon"), k.attr("always_adapt"), skip),
                  ["ParamOut", "Moment1Out", "Moment2Out", "Beta1PowOut", "Beta2PowOut"])


@kernel("nadam")
def nadam(k):
    check(k)
    return update(k, lambda p, g: M.nadam(
        p, g, k.x("learning_rate"), k.x("momentum_decay_pow"), k.x("beta2_pow"), k.x("mu_product"), k.x("moment1"),
        k.x("moment2"), k.attr("beta1"), k.attr("beta2"), k.attr("epsilon"), k.attr("momentum_decay")),
        ["param_out", "momentum_decay_pow_out", "beta2_pow_out", "mu_product_out", "moment1_out", "moment2_out"],
        "param", "grad", "master_param")


@kernel("radam")
def radam(k):
    check(k)
    return update(k, lambda p, g: M.radam(
        p, g, k.x("learning_rate"), k.x("beta1_pow"), k.x("beta2_pow"), k.x("rho"), k.x("moment1"), k.x("moment2"),
        k.attr("beta1"), k.attr("beta2"), k.attr("epsilon")),
        ["param_out", "beta1_pow_out", "beta2_pow_out", "rho_out", "moment1_out", "moment2_out"],
        "param", "grad", "master_param")
