"""Kernels of gradc.ops.activation: one row per op, forward and grad side by side."""

from __future__ import annotations

import math

import numpy as np

from . import kernel


def unary(name: str, forward, backward, uses: str = "X", lowercase: bool = False, shape_only=()) -> None:
    """forward(x, k) -> out; backward(v, dout, k) -> dx, where v is the slot named by ``uses``. Slots x/out
    with ``lowercase`` (Paddle's newer ops); ``shape_only``: the grad op's slots it reads no values of."""
    x, out = ("x", "out") if lowercase else ("X", "Out")
    kernel(name)(lambda k: {out: forward(k.x(x), k)})
    kernel(name + "_grad", shape_only=shape_only)(lambda k: {f"{x}@GRAD": backward(k.x(uses), k.x(f"{out}@GRAD"), k)})


def holomorphic(backward):
    """The grad of a holomorphic f whose ``backward`` gives dOut f'(v): dOut conj(f'(v)) on complex values, Paddle's
    convention (docs/complex-fft.md)."""
    return lambda v, d, k: np.conj(backward(v, np.conj(d), k)) if np.iscomplexobj(v) else backward(v, d, k)


def sigmoid(x):
    """1 / (1 + e^-x) without overflow and exact to rounding in both tails: e^x / (1 + e^x) below 0 (the tanh form,
    0.5 * (1 + tanh(x / 2)), rounds to 0 below -17 in float32, where Paddle gives e^x: PaddleRec's FM). Of a complex
    x, 1 / (1 + e^-x) as Paddle's complex kernel."""
    if np.iscomplexobj(x):
        return 1 / (1 + np.exp(-x))
    tail = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + tail), tail / (1 + tail))


# erf(z) = 1 - exp(-z^2) t Q(u) for z >= 0, where t = 1 / (1 + z / 2) and u maps t's range [1/4, 1] onto [-1, 1]: Q is
# a degree-18 polynomial (highest power first) fitted to math.erfc at 1000 Chebyshev nodes (tests/test_erf.py fits it
# again). Within 1e-15 of math.erf everywhere; 5-17x faster than the Taylor series it replaced, whose passes grew
# with the largest |z| (112 at |z| = 6)
_ERF_Q = (1.3209223586279535e-10, -1.0249924828916384e-09, 1.545657668319411e-09, 6.43068982304182e-09,
          -3.151268538821415e-08, 3.510016771063656e-08, 1.7342432252239643e-07, -8.180142872404084e-07,
          6.095526364221221e-07, 6.552424647191747e-06, -2.2309987945966042e-05, -2.3350432308110278e-05,
          0.00030702902907171997, -0.00015549033295511025, -0.004181821078365514, 0.0025157167185080507,
          0.08378961740950948, 0.31210421352945317, 0.6056598670867841)
_ERF_CAP = 6.0        # erfc(6) = 2e-17: erf is +-1 in doubles from here on
# below |z| = 0.1 the Maclaurin series, 8 terms (the 9th is under 1e-19 of the value): 1 - exp(-z^2) t Q(u) cancels
# there, an absolute error of 2e-16 that is all of erf(z) for tiny z (erf(0) was 2.2e-16)
_ERF_SERIES_BELOW = 0.1
_ERF_SERIES = tuple((-1) ** n * 2 / math.sqrt(math.pi) / (math.factorial(n) * (2 * n + 1)) for n in range(8))[::-1]
_ERF_BLOCK = 1 << 14  # values a pass at a time: the passes' arrays stay in cache (3x faster than whole arrays)


def erf(x, near_zero: bool = True):
    """erf to 1e-15 (absolute) with numpy only, computed in float64 and returned in x's dtype (at least float32);
    with ``near_zero``, also to the last bit relatively below |x| = 0.1 (gelu's 1 + erf does without: 30% faster)."""
    z = np.asarray(x, dtype=np.float64)
    out = np.empty(z.shape)
    flat_z, flat_out = z.reshape(-1), out.reshape(-1)
    for start in range(0, flat_z.size, _ERF_BLOCK):
        _erf_block(flat_z[start:start + _ERF_BLOCK], flat_out[start:start + _ERF_BLOCK], near_zero)
    return out.astype(np.result_type(x, np.float32), copy=False)


def _erf_block(z, out, near_zero):
    a = np.minimum(np.abs(z), _ERF_CAP)   # NaN stays NaN
    small = a < _ERF_SERIES_BELOW if near_zero else None
    t = np.divide(1.0, a * 0.5 + 1.0)
    u = t * (8 / 3) - 5 / 3
    q = np.full_like(u, _ERF_Q[0])
    for coefficient in _ERF_Q[1:]:
        q *= u
        q += coefficient
    q *= t
    np.square(a, out=a)
    np.negative(a, out=a)
    q *= np.exp(a, out=a)
    np.subtract(1.0, q, out=q)
    np.copysign(q, z, out=out)
    if near_zero and small.any():
        out[small] = _erf_series(z[small])


def _erf_series(z):
    """erf(z) for |z| < _ERF_SERIES_BELOW: z times the Maclaurin series in z^2, to the last bit."""
    w = z * z
    s = np.full_like(z, _ERF_SERIES[0])
    for coefficient in _ERF_SERIES[1:]:
        s *= w
        s += coefficient
    return z * s


SHIFT_FLOOR = -64.0   # Paddle's CPU softmax clips x - max(x) here (ValueClip): no probability 0, no log of 0


def in_float32(x):
    """A float16 value widened to float32, as CUDA's float16 kernels compute (MPType float), the store rounding
    the result once: numpy's float16 arithmetic rounds every step, and its sums accumulate in float16."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _shifted(x, axis, floor):
    shifted = x - x.max(axis=axis, keepdims=True, initial=-np.inf)   # initial: an empty axis has no max
    return shifted if floor is None else np.maximum(shifted, floor)


def softmax(x, axis, floor=None):
    """With ``floor`` (SHIFT_FLOOR: the softmax, log_softmax and softmax_with_cross_entropy ops, as Paddle computes
    them) exp(-64) = 1.6e-28 is the least probability, so its log is -64, never -inf (a model whose logits grow
    trains on, as in Paddle)."""
    e = np.exp(_shifted(x, axis, floor))
    return e / e.sum(axis=axis, keepdims=True)


def _softmax_grad(out, d, axis):
    return out * (d - (d * out).sum(axis=axis, keepdims=True))


def log_softmax(x, axis, floor=None):
    shifted = _shifted(x, axis, floor)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


_TANH_C = math.sqrt(2 / math.pi)  # tanh-approximate gelu: 0.5 x (1 + tanh(c (x + 0.044715 x^3)))


def _gelu(x, approximate):
    if approximate:
        return 0.5 * x * (1 + np.tanh(_TANH_C * (x + 0.044715 * x ** 3)))
    return _blockwise(lambda x: 0.5 * x * (1 + erf(x / math.sqrt(2), near_zero=False)), x)


def _gelu_grad(x, d, approximate):
    if approximate:
        t = np.tanh(_TANH_C * (x + 0.044715 * x ** 3))
        return d * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * _TANH_C * (1 + 3 * 0.044715 * x * x))
    return _blockwise(lambda x, d: d * (0.5 * (1 + erf(x / math.sqrt(2), near_zero=False)) + x * np.exp(-0.5 * x * x)
                                        / math.sqrt(2 * math.pi)), x, d)


def _blockwise(fn, x, *others):
    """fn, elementwise, over blocks of _ERF_BLOCK values of x (and of others shaped like it), so that its passes
    stay in cache: the same values, gelu and its grad 1.5-1.8x faster on [8, 128, 1024]."""
    arrays = [np.asarray(a) for a in (x, *others)]
    if arrays[0].size <= _ERF_BLOCK or any(a.shape != arrays[0].shape for a in arrays):
        return fn(*arrays)
    flat = [a.reshape(-1) for a in arrays]
    out = None
    for start in range(0, flat[0].size, _ERF_BLOCK):
        part = fn(*(a[start:start + _ERF_BLOCK] for a in flat))
        if out is None:
            out = np.empty(flat[0].size, part.dtype)
        out[start:start + _ERF_BLOCK] = part
    return out.reshape(arrays[0].shape)


def _outside(x, threshold):
    """hard_shrink's mask: |x| >= threshold, the bound included, as Paddle 3.3.1 keeps x there (x times it, as
    Paddle: NaN stays NaN)."""
    return (x <= -threshold) | (x >= threshold)


def _softplus(x, beta, threshold):
    bx = beta * x
    return np.where(bx > threshold, x, np.logaddexp(0, bx) / beta)


def _hard_swish(x, k):
    return x * np.clip(x + k.attr("offset"), 0, k.attr("threshold")) / k.attr("scale")


def _hard_swish_grad(x, d, k):
    shifted, threshold, scale = x + k.attr("offset"), k.attr("threshold"), k.attr("scale")
    slope = np.where(shifted < threshold, (x + shifted) / scale, threshold / scale)
    return d * (shifted > 0) * slope


kernel("relu")(lambda k: {"Out": np.maximum(k.x("X"), 0)})   # unary's pair, one call less: hot in MLPs
kernel("relu_grad")(lambda k: {"X@GRAD": k.x("Out@GRAD") * (k.x("Out") > 0)})
kernel("relu_grad_grad")(lambda k: {"grad_out@GRAD": k.x("grad_x@GRAD") * (k.x("Out") > 0)})
unary("sigmoid", lambda x, k: sigmoid(x), holomorphic(lambda out, d, k: d * out * (1 - out)), uses="Out")
unary("tanh", lambda x, k: np.tanh(x), holomorphic(lambda out, d, k: d * (1 - out * out)), uses="Out")
unary("softmax", lambda x, k: softmax(in_float32(x), k.attr("axis"), SHIFT_FLOOR),
      lambda out, d, k: _softmax_grad(in_float32(out), in_float32(d), k.attr("axis")), uses="Out")
unary("log_softmax", lambda x, k: log_softmax(in_float32(x), k.attr("axis"), SHIFT_FLOOR),
      lambda out, d, k: in_float32(d) - np.exp(in_float32(out)) * in_float32(d).sum(axis=k.attr("axis"),
                                                                                     keepdims=True), uses="Out")
unary("gelu", lambda x, k: _gelu(x, k.attr("approximate")), lambda x, d, k: _gelu_grad(x, d, k.attr("approximate")))
# at a kink, Paddle 3.3.1's grads take the outer piece: leaky_relu's slope at 0 is 1 (docs/ops-activation-math.md)
unary("leaky_relu", lambda x, k: np.where(x > 0, x, k.attr("alpha") * x),
      lambda x, d, k: np.where(x >= 0, d, k.attr("alpha") * d))
unary("elu", lambda x, k: np.where(x > 0, x, k.attr("alpha") * np.expm1(np.minimum(x, 0))),
      lambda x, d, k: np.where(x > 0, d, d * (k.x("Out") + k.attr("alpha"))))
unary("silu", lambda x, k: x * sigmoid(x), holomorphic(lambda x, d, k: d * sigmoid(x) * (1 + x * (1 - sigmoid(x)))))


def _swish_grad(x, d, k):
    beta = k.attr("beta")
    s = sigmoid(beta * x)
    return d * s * (1 + beta * x * (1 - s))


unary("swish", lambda x, k: x * sigmoid(k.attr("beta") * x), _swish_grad)
unary("softplus", lambda x, k: _softplus(x, k.attr("beta"), k.attr("threshold")),
      lambda x, d, k: np.where(k.attr("beta") * x > k.attr("threshold"), d, d * sigmoid(k.attr("beta") * x)))
unary("hard_sigmoid", lambda x, k: np.clip(k.attr("slope") * x + k.attr("offset"), 0, 1),
      lambda out, d, k: d * k.attr("slope") * ((out > 0) & (out < 1)), uses="Out")
unary("hard_swish", _hard_swish, _hard_swish_grad)
def _softsign_grad(x, d, k):
    """d / (1 + |x|)^2; of a complex x (not holomorphic), the gradient of Re(conj(d) softsign(x)) by Paddle's
    convention: d / (1 + |x|) - Re(conj(d) x) sign(x) / (1 + |x|)^2, sign(0) = 0 (docs/complex-fft.md)."""
    size = np.abs(x)
    if not np.iscomplexobj(x):
        return d / (1 + size) ** 2
    unit = np.divide(x, size, out=np.zeros_like(x), where=size > 0)
    return d / (1 + size) - (d.conj() * x).real * unit / (1 + size) ** 2


unary("softsign", lambda x, k: x / (1 + np.abs(x)), _softsign_grad)
unary("relu6", lambda x, k: np.minimum(np.maximum(x, 0), k.attr("threshold")),
      lambda out, d, k: d * ((out > 0) & (out < k.attr("threshold"))), uses="Out")


def _within(x, k, low: str, high: str):
    return (x > k.attr(low)) & (x < k.attr(high))


unary("brelu", lambda x, k: np.minimum(np.maximum(x, k.attr("t_min")), k.attr("t_max")),
      lambda x, d, k: d * _within(x, k, "t_min", "t_max"))
# celu: x for x > 0, alpha (exp(x / alpha) - 1) otherwise (either sign of alpha)
unary("celu", lambda x, k: np.where(x > 0, x, k.attr("alpha") * np.expm1(np.minimum(x, 0) / k.attr("alpha"))),
      lambda x, d, k: np.where(x > 0, d, d * np.exp(np.minimum(x, 0) / k.attr("alpha"))))
unary("hard_shrink", lambda x, k: x * _outside(x, k.attr("threshold")),
      lambda x, d, k: d * _outside(x, k.attr("threshold")))
unary("logsigmoid", lambda x, k: np.minimum(x, 0) - np.log1p(np.exp(-np.abs(x))), lambda x, d, k: d * sigmoid(-x))


def _mish_softplus(x, k):
    return np.where(x > k.attr("threshold"), x, np.logaddexp(0, x))


def _mish_grad(x, d, k):
    t = np.tanh(_mish_softplus(x, k))
    return d * (t + x * (1 - t * t) * np.where(x > k.attr("threshold"), 1, sigmoid(x)))


unary("mish", lambda x, k: x * np.tanh(_mish_softplus(x, k)), _mish_grad)
unary("selu", lambda x, k: k.attr("scale") * np.where(x > 0, x, k.attr("alpha") * np.expm1(np.minimum(x, 0))),
      lambda out, d, k: np.where(out > 0, d * k.attr("scale"), d * (out + k.attr("scale") * k.attr("alpha"))),
      uses="Out")


def _softshrink(x, k):
    shift = k.attr("lambda")
    return np.where(x > shift, x - shift, np.where(x < -shift, x + shift, 0))


unary("softshrink", _softshrink, lambda x, d, k: d * (np.abs(x) > k.attr("lambda")))
unary("tanh_shrink", lambda x, k: x - np.tanh(x), lambda x, d, k: d * np.tanh(x) ** 2)
unary("thresholded_relu", lambda x, k: np.where(x > k.attr("threshold"), x, k.attr("value")),
      lambda x, d, k: d * (x > k.attr("threshold")))
