"""The update rules of Paddle's optimizer and gradient clipping ops as pure numpy functions.

Each function takes the op's input tensors and attributes (snake_case of Paddle's slot and attribute names)
and returns new arrays in the order of the op's output slots; inputs are never modified, so a caller may write
ParamOut back into Param. Arithmetic stays in the parameter's dtype: attributes and the learning rate are cast
to it first. Where Paddle's CPU kernel groups the arithmetic in a particular way (Adam folds the bias
corrections into the learning rate and epsilon) the functions group it the same way. docs/optimizers.md
derives every rule.
"""

from __future__ import annotations

import numpy as np

from ...bfloat16 import round_to_bfloat16
from .broadcast import reusable


def _scalar(value, like: np.ndarray):
    """A learning rate ([] or [1] tensor) or float attribute as a scalar of ``like``'s dtype."""
    return like.dtype.type(np.asarray(value).reshape(()))


def _alike(*arrays) -> bool:
    """Arrays of one dtype and shape (not 0-d: numpy gives scalars there): arithmetic among them and scalars of
    that dtype may write into arrays it made."""
    first = arrays[0]
    return first.ndim > 0 and all(type(a) is np.ndarray and a.dtype == first.dtype and a.shape == first.shape
                                  for a in arrays)


def sgd(param, grad, lr):
    """ParamOut = Param - lr * Grad."""
    step = _scalar(lr, param) * grad
    return (np.subtract(param, step, out=reusable(step, param)),)


def bfloat16_sgd(param, grad, lr):
    """sgd of a bfloat16 parameter without a master weight, in bfloat16 arithmetic as Paddle's CPU kernel does it:
    the learning rate rounded to bfloat16, its product with Grad rounded, then the difference."""
    step = round_to_bfloat16(round_to_bfloat16(np.ravel(lr)[:1]) * grad)
    return round_to_bfloat16(param - step)


def bfloat16_sparse_sgd(param, rows, values, lr):
    """bfloat16_sgd of a SelectedRows gradient as Paddle's kernel: each row subtracted in turn (a repeated id's
    rows one after another, each difference rounded)."""
    param, step = param.copy(), round_to_bfloat16(round_to_bfloat16(np.ravel(lr)[:1]) * values)
    order = np.argsort(rows, kind="stable")
    ranks = np.empty(len(rows), np.int64)   # which occurrence of its id each row is: one round per occurrence
    ranks[order] = np.arange(len(rows)) - np.searchsorted(rows[order], rows[order])
    for rank in range(int(ranks.max(initial=-1)) + 1):
        picked = ranks == rank
        param[rows[picked]] = round_to_bfloat16(param[rows[picked]] - step[picked])
    return param


def momentum(param, grad, velocity, lr, mu, use_nesterov=False, regularization_method="",
             regularization_coeff=0.0, rescale_grad=1.0):
    """-> ParamOut, VelocityOut. g = rescale_grad * Grad (+ coeff * Param for l2_decay); v = mu * v + g;
    Param -= lr * (g + mu * v) with Nesterov, lr * v without. (Paddle's CPU kernel ignores rescale_grad.)"""
    mu, lr = _scalar(mu, param), _scalar(lr, param)
    grad = grad * _scalar(rescale_grad, param)
    if regularization_method == "l2_decay":
        grad = grad + _scalar(regularization_coeff, param) * param
    velocity = velocity * mu
    velocity = np.add(velocity, grad, out=reusable(velocity, grad))
    step = lr * (grad + velocity * mu if use_nesterov else velocity)
    return np.subtract(param, step, out=reusable(step, param)), velocity


def lars_momentum(param, grad, velocity, lr, mu, lars_coeff, lars_weight_decay, epsilon, rescale_grad=1.0):
    """-> ParamOut, VelocityOut for one parameter (the op lists several, with one decay each).
    The layer-wise rate lr * coeff * |p| / (|g| + decay * |p| + eps) replaces lr when decay, |p|, |g| > 0."""
    grad = grad * _scalar(rescale_grad, param)
    decay, lr = _scalar(lars_weight_decay, param), _scalar(lr, param)
    p_norm, g_norm = np.sqrt(np.sum(param * param)), np.sqrt(np.sum(grad * grad))
    if decay > 0 and p_norm > 0 and g_norm > 0:
        lr = lr * _scalar(lars_coeff, param) * p_norm / (g_norm + decay * p_norm + _scalar(epsilon, param))
    velocity = velocity * _scalar(mu, param) + lr * (grad + decay * param)
    return param - velocity, velocity


def adam(param, grad, lr, moment1, moment2, beta1_pow, beta2_pow, beta1, beta2, epsilon,
         moment2_max=None, amsgrad=False, use_global_beta_pow=False, skip_update=False):
    """-> ParamOut, Moment1Out, Moment2Out, Moment2MaxOut, Beta1PowOut, Beta2PowOut.
    m1 = b1 m1 + (1 - b1) g; m2 = b2 m2 + (1 - b2) g^2 (amsgrad: the step uses max(m2, Moment2Max));
    Param -= lr sqrt(1 - b2^t) / (1 - b1^t) * m1 / (sqrt(m2) + eps sqrt(1 - b2^t)), where Beta1Pow = b1^t
    already counts this step; the pows then advance unless use_global_beta_pow (they are None then)."""
    if skip_update:
        return param, moment1, moment2, moment2_max, beta1_pow, beta2_pow
    b1, b2, eps = _scalar(beta1, param), _scalar(beta2, param), _scalar(epsilon, param)
    b1_pow, b2_pow = _scalar(beta1_pow, param), _scalar(beta2_pow, param)
    one = param.dtype.type(1)
    lr_t = _scalar(lr, param) * (np.sqrt(one - b2_pow) / (one - b1_pow))
    eps_t = eps * np.sqrt(one - b2_pow)
    if not _alike(param, grad, moment1, moment2):
        moment1 = b1 * moment1 + (one - b1) * grad
        moment2 = b2 * moment2 + (one - b2) * grad * grad
        denominator = moment2
        if amsgrad:
            moment2_max = denominator = np.maximum(moment2, moment2_max)
        return _adam_outputs(param - lr_t * (moment1 / (np.sqrt(denominator) + eps_t)), moment1, moment2,
                             moment2_max, beta1_pow, beta2_pow, b1, b2, use_global_beta_pow)
    # the same arithmetic in the same order, into 3 new arrays instead of 12
    moment1, scratch = b1 * moment1, (one - b1) * grad
    np.add(moment1, scratch, out=moment1)
    moment2 = b2 * moment2
    np.multiply(np.multiply(one - b2, grad, out=scratch), grad, out=scratch)
    np.add(moment2, scratch, out=moment2)
    denominator = moment2
    if amsgrad:
        moment2_max = denominator = np.maximum(moment2, moment2_max)
    np.add(np.sqrt(denominator, out=scratch), eps_t, out=scratch)
    np.multiply(np.divide(moment1, scratch, out=scratch), lr_t, out=scratch)
    return _adam_outputs(np.subtract(param, scratch, out=scratch), moment1, moment2, moment2_max, beta1_pow,
                         beta2_pow, b1, b2, use_global_beta_pow)


def _adam_outputs(param, moment1, moment2, moment2_max, beta1_pow, beta2_pow, b1, b2, use_global_beta_pow):
    if use_global_beta_pow:
        return param, moment1, moment2, moment2_max, None, None
    return param, moment1, moment2, moment2_max, beta1_pow * b1, beta2_pow * b2


def adamw(param, grad, lr, moment1, moment2, beta1_pow, beta2_pow, beta1, beta2, epsilon, coeff=0.01,
          lr_ratio=1.0, with_decay=False, **adam_options):
    """Adam after the decoupled decay Param -= lr * coeff * Param (with_decay only), with lr scaled by
    lr_ratio in both (GPU semantics; Paddle's CPU kernel scales only the decay, and its Python API refuses
    lr_ratio on CPU)."""
    lr = _scalar(lr, param) * _scalar(lr_ratio, param)
    if with_decay and not adam_options.get("skip_update"):
        param = param - lr * _scalar(coeff, param) * param
    return adam(param, grad, lr, moment1, moment2, beta1_pow, beta2_pow, beta1, beta2, epsilon, **adam_options)


def adamax(param, grad, lr, moment, inf_norm, beta1_pow, beta1, beta2, epsilon):
    """-> ParamOut, MomentOut, InfNormOut. m = b1 m + (1 - b1) g; u = max(|g|, b2 u + eps);
    Param -= lr / (1 - b1^t) * m / u. Beta1Pow is an input only: a `scale` op after the update advances it."""
    b1, one = _scalar(beta1, param), param.dtype.type(1)
    moment = b1 * moment + (one - b1) * grad
    inf_norm = np.maximum(np.abs(grad), _scalar(beta2, param) * inf_norm + _scalar(epsilon, param))
    lr_t = _scalar(lr, param) / (one - _scalar(beta1_pow, param))
    return param - lr_t * (moment / inf_norm), moment, inf_norm


def adagrad(param, grad, moment, lr, epsilon):
    """-> ParamOut, MomentOut. m += g^2; Param -= lr g / (sqrt(m) + eps)."""
    moment = moment + grad * grad
    return param - _scalar(lr, param) * grad / (np.sqrt(moment) + _scalar(epsilon, param)), moment


def adadelta(param, grad, avg_squared_grad, avg_squared_update, lr, rho, epsilon):
    """-> ParamOut, AvgSquaredGradOut, AvgSquaredUpdateOut. E[g^2] = rho E[g^2] + (1 - rho) g^2;
    d = -sqrt(E[d^2] + eps) / sqrt(E[g^2] + eps) g; Param += lr d; E[d^2] = rho E[d^2] + (1 - rho) d^2
    (d without lr: the learning rate scales the step but not the accumulated update)."""
    rho, eps, one = _scalar(rho, param), _scalar(epsilon, param), param.dtype.type(1)
    avg_squared_grad = rho * avg_squared_grad + (one - rho) * grad * grad
    update = -(np.sqrt(avg_squared_update + eps) / np.sqrt(avg_squared_grad + eps) * grad)
    avg_squared_update = rho * avg_squared_update + (one - rho) * update * update
    return param + _scalar(lr, param) * update, avg_squared_grad, avg_squared_update


def rmsprop(param, mean_square, grad, moment, lr, epsilon, decay, momentum=0.0, centered=False, mean_grad=None):
    """-> ParamOut, MomentOut, MeanSquareOut, MeanGradOut (None unless centered).
    ms = rho ms + (1 - rho) g^2; centered: mg = rho mg + (1 - rho) g and ms - mg^2 replaces ms below;
    mom = momentum mom + lr g / sqrt(ms + eps); Param -= mom."""
    rho, one = _scalar(decay, param), param.dtype.type(1)
    mean_square = rho * mean_square + (one - rho) * grad * grad
    variance = mean_square
    if centered:
        mean_grad = rho * mean_grad + (one - rho) * grad
        variance = mean_square - mean_grad * mean_grad
    step = _scalar(lr, param) * grad / np.sqrt(variance + _scalar(epsilon, param))
    moment = _scalar(momentum, param) * moment + step
    return param - moment, moment, mean_square, mean_grad if centered else None


def lamb(param, grad, lr, moment1, moment2, beta1_pow, beta2_pow, weight_decay, beta1, beta2, epsilon,
         always_adapt=False, skip_update=False):
    """-> ParamOut, Moment1Out, Moment2Out, Beta1PowOut, Beta2PowOut.
    r = m1 / (1 - b1^t) / (sqrt(m2 / (1 - b2^t)) + eps) + wd * Param (Adam moments as in adam);
    Param -= lr * trust * r with trust = |Param| / |r| when wd > 0 or always_adapt, and both norms > 0, else 1.
    Paddle's exclude_from_weight_decay_fn sets wd = 0 on the excluded parameters' ops."""
    if skip_update:
        return param, moment1, moment2, beta1_pow, beta2_pow
    b1, b2, one = _scalar(beta1, param), _scalar(beta2, param), param.dtype.type(1)
    wd = _scalar(weight_decay, param)
    moment1 = b1 * moment1 + (one - b1) * grad
    moment2 = b2 * moment2 + (one - b2) * grad * grad
    m1_hat = moment1 / (one - _scalar(beta1_pow, param))
    m2_hat = moment2 / (one - _scalar(beta2_pow, param))
    ratio = m1_hat / (np.sqrt(m2_hat) + _scalar(epsilon, param)) + wd * param
    trust = one
    if wd > 0 or always_adapt:
        p_norm, r_norm = np.sqrt(np.sum(param * param)), np.sqrt(np.sum(ratio * ratio))
        trust = p_norm / r_norm if p_norm > 0 and r_norm > 0 else one
    param = param - _scalar(lr, param) * trust * ratio
    return param, moment1, moment2, beta1_pow * b1, beta2_pow * b2


def merged_momentum(params, grads, velocities, lrs, mu, use_nesterov=False, regularization_method=(),
                    regularization_coeff=(), rescale_grad=1.0):
    """-> ParamOut, VelocityOut lists: momentum per parameter, one learning rate for all or one each,
    regularization lists empty or one entry per parameter."""
    outs = [momentum(p, g, v, lrs[i if len(lrs) > 1 else 0], mu, use_nesterov,
                     regularization_method[i] if regularization_method else "",
                     regularization_coeff[i] if regularization_coeff else 0.0, rescale_grad)
            for i, (p, g, v) in enumerate(zip(params, grads, velocities))]
    return [o[0] for o in outs], [o[1] for o in outs]


def merged_adam(params, grads, lrs, moment1s, moment2s, beta1_pows, beta2_pows, beta1, beta2, epsilon,
                moment2_maxs=None, amsgrad=False, use_global_beta_pow=False):
    """-> lists of ParamOut, Moment1Out, Moment2Out, Moment2MaxOut, Beta1PowOut, Beta2PowOut: adam per
    parameter, each with its own learning rate var and beta pows."""
    outs = [adam(params[i], grads[i], lrs[i], moment1s[i], moment2s[i], beta1_pows[i], beta2_pows[i], beta1,
                 beta2, epsilon, moment2_maxs[i] if amsgrad else None, amsgrad, use_global_beta_pow)
            for i in range(len(params))]
    return tuple(list(column) for column in zip(*outs))


def squared_l2_norm(x):
    """-> Out [1]: the sum of squares (ClipGradByGlobalNorm's per-gradient term)."""
    return (np.sum(x * x, dtype=x.dtype).reshape(1),)


def clip_by_norm(x, max_norm):
    """-> Out: x * max_norm / |x| where |x| > max_norm, else x."""
    norm, max_norm = np.sqrt(np.sum(x * x, dtype=x.dtype)), _scalar(max_norm, x)
    return (x * (max_norm / norm) if norm > max_norm else x.copy(),)


def clip(x, min_value, max_value):
    """-> Out: x limited to [min, max] (the attributes)."""
    return (np.clip(x, _scalar(min_value, x), _scalar(max_value, x)),)


def nadam(param, grad, lr, momentum_decay_pow, beta2_pow, mu_product, moment1, moment2, beta1, beta2, epsilon,
          momentum_decay):
    """-> param_out, momentum_decay_pow_out, beta2_pow_out, mu_product_out, moment1_out, moment2_out.
    The momentum schedule mu_t = b1 (1 - 0.5 * 0.96^(t psi)) runs on the accumulators (0.96^t, b2^t and the
    product of the mu's, all shaped like the parameter); m1_hat mixes m1 (with mu_{t+1}) and g (with mu_t)."""
    dtype = param.dtype.type
    b1, b2, psi, one = dtype(beta1), dtype(beta2), dtype(momentum_decay), dtype(1)
    decay_pow = momentum_decay_pow * dtype(0.96)
    beta2_pow = beta2_pow * b2
    mu_t = b1 * (one - dtype(0.5) * decay_pow ** psi)
    mu_next = b1 * (one - dtype(0.5) * decay_pow ** psi * dtype(0.96) ** psi)
    mu_product = mu_product * mu_t
    moment1 = b1 * moment1 + (one - b1) * grad
    moment2 = b2 * moment2 + (one - b2) * grad * grad
    m1_hat = mu_next * moment1 / (one - mu_product * mu_next) + (one - mu_t) * grad / (one - mu_product)
    m2_hat = moment2 / (one - beta2_pow)
    param = param - _scalar(lr, param) * m1_hat / (np.sqrt(m2_hat) + dtype(epsilon))
    return param, decay_pow, beta2_pow, mu_product, moment1, moment2


def radam(param, grad, lr, beta1_pow, beta2_pow, rho, moment1, moment2, beta1, beta2, epsilon):
    """-> param_out, beta1_pow_out, beta2_pow_out, rho_out, moment1_out, moment2_out.
    rho holds t b2^t / (1 - b2^t) (updated recursively); while rho_inf - 2 rho <= 5 the step is SGD with
    momentum on the bias-corrected m1, after that Adam's step times the variance rectification r_t."""
    dtype = param.dtype.type
    b1, b2, one = dtype(beta1), dtype(beta2), dtype(1)
    rho_inf = dtype(2) / (one - b2) - one
    beta1_pow, beta2_pow = beta1_pow * b1, beta2_pow * b2
    rho = (rho * (b2 - beta2_pow) + beta2_pow) / (one - beta2_pow)
    moment1 = b1 * moment1 + (one - b1) * grad
    moment2 = b2 * moment2 + (one - b2) * grad * grad
    step = _scalar(lr, param) * moment1 / (one - beta1_pow)
    rho_t = rho_inf - dtype(2) * rho.reshape(-1)[0]
    if rho_t > 5:
        adaptive = np.sqrt(one - beta2_pow) / (np.sqrt(moment2) + dtype(epsilon))
        rectify = np.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
        step = step * rectify * adaptive
    return param - step, beta1_pow, beta2_pow, rho, moment1, moment2


def rprop(param, grad, prev, lr, learning_rate_range, etas):
    """-> param_out, prev_out, learning_rate_out. Per element: the step size (``lr``, shaped like the parameter)
    grows by etas[1] where the gradient kept its sign, shrinks by etas[0] where it flipped (and that gradient
    counts as 0), stays where one of them is 0, within learning_rate_range; Param -= sign(g) * step."""
    low, high = np.asarray(learning_rate_range, param.dtype).reshape(-1)[:2]
    shrink, grow = np.asarray(etas, param.dtype).reshape(-1)[:2]
    product = grad * prev
    one = param.dtype.type(1)
    eta = np.where(product > 0, grow, np.where(product < 0, shrink, one)).astype(param.dtype)
    grad = np.where(product < 0, param.dtype.type(0), grad)
    lr = np.clip(lr * eta, low, high)
    return param - np.sign(grad) * lr, grad, lr
