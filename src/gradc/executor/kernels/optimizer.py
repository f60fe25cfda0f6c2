"""Kernels of gradc.ops.optimizer: the update rules Paddle applies, in the parameter's dtype."""

from __future__ import annotations

import numpy as np

from . import kernel


def _lr(k, like):
    return np.asarray(k.x("LearningRate"), dtype=like.dtype).reshape(())


@kernel("sgd")
def sgd(k):
    param = k.x("Param")
    return {"ParamOut": param - _lr(k, param) * k.x("Grad")}


@kernel("momentum")
def momentum(k):
    param, grad, velocity = k.x("Param"), k.x("Grad") * k.attr("rescale_grad"), k.x("Velocity")
    if k.attr("regularization_method") == "l2_decay":
        grad = grad + k.attr("regularization_coeff") * param
    mu, lr = k.attr("mu"), _lr(k, param)
    velocity = mu * velocity + grad
    step = (grad + mu * velocity) if k.attr("use_nesterov") else velocity
    return {"ParamOut": param - lr * step, "VelocityOut": velocity}


def _adam(k, param, lr):
    """One Adam step with bias-corrected moments; Beta1Pow/Beta2Pow already include this step."""
    grad, m1, m2 = k.x("Grad"), k.x("Moment1"), k.x("Moment2")
    b1, b2, eps = k.attr("beta1"), k.attr("beta2"), k.attr("epsilon")
    b1_pow, b2_pow = k.x("Beta1Pow").reshape(()), k.x("Beta2Pow").reshape(())
    m1 = b1 * m1 + (1 - b1) * grad
    m2 = b2 * m2 + (1 - b2) * grad * grad
    m1_hat, m2_hat = m1 / (1 - b1_pow), m2 / (1 - b2_pow)
    out = {"ParamOut": param - lr * m1_hat / (np.sqrt(m2_hat) + eps), "Moment1Out": m1, "Moment2Out": m2}
    if not k.attr("use_global_beta_pow"):
        out["Beta1PowOut"] = k.x("Beta1Pow") * b1
        out["Beta2PowOut"] = k.x("Beta2Pow") * b2
    return out


@kernel("adam")
def adam(k):
    param = k.x("Param")
    return _adam(k, param, _lr(k, param))


@kernel("adamw")
def adamw(k):
    """Decoupled weight decay first (p *= 1 - lr * lr_ratio * coeff), then the Adam step."""
    param = k.x("Param")
    lr = _lr(k, param) * k.attr("lr_ratio")
    if k.attr("with_decay"):
        param = param * (1 - lr * k.attr("coeff"))
    return _adam(k, param, lr)
