"""Kernels of gradc.ops.extra_math: one row per op, forward and grad side by side.

gammaincc is Q(a, y) = Gamma(a, y) / Gamma(a), a = the op's x, by Cephes' split (as Paddle's kernel): the power
series of P = 1 - Q where y < 1 or y < a, Legendre's continued fraction of Q elsewhere, both in float64 to the
last bits, with the prefactor y^a exp(-y) / Gamma(a) taken through logs (gradc's lgamma); and for a < 1e-3, y < 1,
where Q is tiny and 1 - P would lose it, DLMF 8.7.3 (Paddle's kernel keeps 1 - P there).
"""

from __future__ import annotations

import numpy as np

from ...ops.extra_math import angular_margin
from . import kernel
from .activation import sigmoid
from .broadcast import unbroadcast
from .special_math import digamma, elementwise, lgamma

elementwise("gammaln", lambda x, k: lgamma(x), lambda x, k: digamma(x), "x", lowercase=True)

_EPSILON = np.finfo(np.float64).eps / 2   # a term below this part of the sum no longer changes it
_MOST_TERMS = 100_000   # the series needs ~ 6 sqrt(a) terms where y is near a large a: reached past a ~ 2e8
_UNDERFLOW = -np.log(np.finfo(np.float64).max)   # a prefactor exp() below this is 0 (Paddle's -MAXLOG)
_RESCALE_PAST = 2.0 ** 52   # the continued fraction's numerators and denominators are rescaled before they overflow


def _until_converged(a, y, state: list[np.ndarray], step) -> None:
    """Run ``step(*state) -> (new state, converged mask)`` over the elements of Q(a, y) not yet converged, in place;
    refuse those unconverged after _MOST_TERMS steps (a truncated sum would be silently wrong)."""
    active = np.arange(state[0].size)
    for _ in range(_MOST_TERMS):
        if not active.size:
            return
        values, converged = step(*(s[active] for s in state))
        for s, v in zip(state, values):
            s[active] = v
        active = active[~converged]
    raise ValueError(f"Q(x, y) at x={a[active[0]]}, y={y[active[0]]} does not converge in {_MOST_TERMS} terms "
                     "(x past ~2e8 with y near it)")


def _lower_series(a, y):
    """sum over n >= 0 of y^n / ((a + 1) ... (a + n)): P(a, y) = it y^a exp(-y) / Gamma(a + 1)."""
    state = [a.copy(), np.ones_like(a), np.ones_like(a), y.copy()]   # a + n, the term, the sum, y

    def step(r, term, total, y):
        r = r + 1
        term = term * y / r
        total = total + term
        return (r, term, total, y), ~(term > _EPSILON * total)

    _until_converged(a, y, state, step)
    return state[2]


def _upper_fraction(a, y):
    """Legendre's continued fraction of Gamma(a, y) / (y^a exp(-y)), from its convergents (Cephes' igamc)."""
    zero = np.zeros_like(a)
    y_minus = 1 - a
    z = y + y_minus + 1
    state = [y_minus, z, zero, np.ones_like(a), y.copy(), y + 1, z * y, (y + 1) / (z * y)]

    def step(c_y, z, c, p2, q2, p1, q1, ans):
        c, c_y, z = c + 1, c_y + 1, z + 2
        yc = c_y * c
        p, q = p1 * z - p2 * yc, q1 * z - q2 * yc
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(q != 0, p / q, ans)
            change = np.where(q != 0, np.abs((ans - ratio) / ratio), 1.0)
        big = np.abs(p) > _RESCALE_PAST
        shrink = np.where(big, 1 / _RESCALE_PAST, 1.0)
        return ((c_y, z, c, p1 * shrink, q1 * shrink, p * shrink, q * shrink, ratio),
                ~(change > _EPSILON))

    _until_converged(a, y, state, step)
    return state[7]


_ZETA = (np.pi ** 2 / 6, 1.2020569031595942, np.pi ** 4 / 90, 1.0369277551433699, np.pi ** 6 / 945)   # zeta(2..6)
_SMALL_A = 1e-3   # below it, with y < 1, Q ~ a E1(y) is tiny and 1 - P loses its digits


def _upper_small_a(a, y):
    """Q(a, y) for a < _SMALL_A, y < 1 (DLMF 8.7.3): 1 - y^a / Gamma(a + 1) - y^a / Gamma(a) sum over k >= 1 of
    (-y)^k / (k! (a + k)), the first term by expm1 and lgamma(1 + a) by its Taylor series (1 + a rounds a away)."""
    log_lead = a * np.log(y) + np.euler_gamma * a - sum(z * (-a) ** k / k for k, z in enumerate(_ZETA, 2))
    term, tail = np.ones_like(y), np.zeros_like(y)
    for k in range(1, 26):   # y^k / k! < 1e-25 past 25 terms
        term = term * -y / k
        tail += term / (a + k)
    return -np.expm1(log_lead) - a * np.exp(log_lead) * tail


def gammaincc(a, y):
    """Q(a, y), float64: 1 where a <= 0 or y <= 0 (as Paddle's kernel), 0 at y = +inf, 1 at a = +inf."""
    a, y = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(y, np.float64))
    a, y = a.ravel(), y.ravel()
    out = np.ones_like(a)
    inside = (a > 0) & (y > 0) & np.isfinite(a) & np.isfinite(y)
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):   # outside: set below
        log_prefactor = a * np.log(y) - y - lgamma(a)
    lower = (y < 1) | (y < a)   # P by its series there, Q by its continued fraction elsewhere
    live = inside & ~(log_prefactor < _UNDERFLOW)   # past it Q is 1 (lower) or 0, as Paddle: no sum (NaN at y=1e300)
    out[inside & ~live & ~lower] = 0.0
    small = inside & (a < _SMALL_A) & (y < 1)
    out[small] = _upper_small_a(a[small], y[small])
    series, fraction = live & lower & ~small, live & ~lower
    with np.errstate(under="ignore"):
        out[series] = 1 - _lower_series(a[series], y[series]) * np.exp(log_prefactor[series]) / a[series]
        out[fraction] = _upper_fraction(a[fraction], y[fraction]) * np.exp(log_prefactor[fraction])
    out[(y == np.inf) & (a > 0) & (a < np.inf)] = 0.0
    out[np.isnan(a) | np.isnan(y)] = np.nan
    return out


def gammaincc_slope(a, y):
    """dQ(a, y) / dy = -y^(a-1) exp(-y) / Gamma(a), through logs (no overflow of y^(a-1) or Gamma(a)); at y = 0 the
    one-sided derivative (-inf for a < 1, -1 at a = 1, 0 past it); 0 where Q is Paddle's constant 1 (a <= 0, y < 0)
    and where Q is flat at infinity (a or y = +inf)."""
    with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
        slope = -np.exp((a - 1) * np.log(y) - y - lgamma(a))
        at_zero = -np.power(0.0, a - 1) * np.exp(-lgamma(a))
    slope = np.where(y == 0, at_zero, slope)
    return np.where((a <= 0) | (y < 0) | np.isposinf(a) | np.isposinf(y), 0.0, slope)


@kernel("gammaincc")
def gammaincc_kernel(k):
    x, y = k.x("x"), k.x("y")
    return {"out": gammaincc(x, y).reshape(x.shape).astype(x.dtype, copy=False)}


@kernel("gammaincc_grad")
def gammaincc_grad(k):
    x, y, dout = k.x("x"), k.x("y"), k.x("out@GRAD")
    slope = gammaincc_slope(x.astype(np.float64), y.astype(np.float64))
    return {"y@GRAD": (dout * slope).astype(y.dtype, copy=False)}


@kernel("nextafter")
def nextafter(k):
    return {"out": np.nextafter(k.x("x"), k.x("y"))}


def _row_picks(k, slot: str, rows: int, count: int, rows_of: str, outside: str) -> np.ndarray:
    """``slot`` as a vector of one index in [0, count) per row; ``rows_of`` and ``outside`` word the errors."""
    picks = k.x(slot).reshape(-1)
    if picks.size != rows:
        raise ValueError(f"{slot} has {picks.size} indices for the {rows} rows of {rows_of}")
    bad = (picks < 0) | (picks >= count)
    if bad.any():
        raise ValueError(f"{slot} {picks[bad][0]} (row {np.flatnonzero(bad)[0]}) {outside}")
    return picks


def _ids(k, xs) -> np.ndarray:
    return _row_picks(k, "Ids", xs[0].shape[0], len(xs), "X's tensors", f"picks no tensor of X, which holds {len(xs)}")


@kernel("multiplex")
def multiplex(k):
    xs = k.xs("X")
    if any(x.shape != xs[0].shape for x in xs):
        raise ValueError(f"the tensors of X must have one shape, got {[x.shape for x in xs]}")
    ids = _ids(k, xs)
    return {"Out": np.stack(xs)[ids, np.arange(ids.size)]}


@kernel("multiplex_grad", shape_only=("X",))
def multiplex_grad(k):
    xs, dout = k.xs("X"), k.x("Out@GRAD")
    ids = _ids(k, xs)
    return {"X@GRAD": [np.where((ids == i).reshape(-1, *[1] * (dout.ndim - 1)), dout, 0).astype(dout.dtype)
                       for i in range(len(xs))]}


@kernel("reduce_as", shape_only=("target",))
def reduce_as(k):
    x, target = k.x("x"), k.x("target")
    if x.dtype in (np.bool_, np.int32):   # summed into int64, as Paddle's sum
        x = x.astype(np.int64)
    return {"out": np.ascontiguousarray(unbroadcast(x, target.shape))}


@kernel("reduce_as_grad", shape_only=("x", "target"))
def reduce_as_grad(k):
    x, dout = k.x("x"), k.x("out@GRAD")
    return {"x@GRAD": np.broadcast_to(dout, x.shape).copy()}


@kernel("is_empty", shape_only=("X",))
def is_empty(k):
    return {"Out": np.array(k.x("X").size == 0)}


@kernel("equal_all")
def equal_all(k):
    x, y = k.x("X"), k.x("Y")
    return {"Out": np.array(x.shape == y.shape and bool(np.all(x == y)))}


def _halves(k):
    """(x, y), or x's two halves along its last axis when y is absent."""
    x, y = k.x("x"), k.optional("y")
    if y is not None:
        if y.shape != x.shape:
            raise ValueError(f"x {x.shape} and y {y.shape} must have one shape")
        return x, y
    half = x.shape[-1] // 2
    if x.ndim == 0 or x.shape[-1] % 2:
        raise ValueError(f"without y, x's last dim must be even, got x {x.shape}")
    return x[..., :half], x[..., half:]


@kernel("swiglu")
def swiglu(k):
    a, b = _halves(k)
    return {"out": a * sigmoid(a) * b}


@kernel("swiglu_grad")
def swiglu_grad(k):
    a, b = _halves(k)
    dout = k.x("out@GRAD")
    gate = sigmoid(a)
    da = dout * b * gate * (1 + a * (1 - gate))
    db = dout * a * gate
    if k.optional("y") is None:
        return {"x@GRAD": np.concatenate([da, db], axis=-1)}
    return k.grads({"x@GRAD": lambda: da, "y@GRAD": lambda: db})


def _norm_axis(k, x) -> int:
    axis = k.attr("axis")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"attribute axis={axis} is out of range for X {x.shape}")
    return axis % x.ndim


@kernel("norm")
def norm(k):
    x = k.x("X")
    axis = _norm_axis(k, x)
    wide = x.astype(np.float64)
    size = np.sqrt(np.square(wide).sum(axis=axis, keepdims=True) + k.attr("epsilon"))
    return {"Out": (wide / size).astype(x.dtype), "Norm": size.astype(x.dtype)}


@kernel("norm_grad")
def norm_grad(k):
    x, size, dout = k.x("X"), k.x("Norm").astype(np.float64), k.x("Out@GRAD")
    out = x.astype(np.float64) / size
    along = (dout * out).sum(axis=_norm_axis(k, x), keepdims=True)
    return {"X@GRAD": ((dout - out * along) / size).astype(x.dtype)}


def _angular(k) -> bool:
    return angular_margin(k.attr("margin1"), k.attr("margin2"))


def _labels(k, logits) -> np.ndarray:
    rows, classes = logits.shape
    return _row_picks(k, "Label", rows, classes, "Logits", f"is not a class of Logits' {classes}")


@kernel("margin_cross_entropy")
def margin_cross_entropy(k):
    logits = k.x("Logits")
    label = _labels(k, logits)
    rows = np.arange(label.size)
    z = logits.astype(np.float64)
    target = z[rows, label]
    if _angular(k):
        with np.errstate(invalid="ignore"):   # a cosine outside [-1, 1] gives NaN, as Paddle's acos
            target = np.cos(k.attr("margin1") * np.arccos(target) + k.attr("margin2"))
    z[rows, label] = target - k.attr("margin3")
    z *= k.attr("scale")
    shifted = z - z.max(axis=1, keepdims=True)
    log_total = np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = log_total[:, 0] - shifted[rows, label]
    return {"Softmax": np.exp(shifted - log_total).astype(logits.dtype), "Loss": loss[:, None].astype(logits.dtype)}


@kernel("margin_cross_entropy_grad")
def margin_cross_entropy_grad(k):
    logits, softmax, dloss = k.x("Logits"), k.x("Softmax"), k.x("Loss@GRAD")
    label = _labels(k, logits)
    rows = np.arange(label.size)
    grad = softmax.astype(np.float64)
    grad[rows, label] -= 1
    grad *= dloss.reshape(-1, 1) * k.attr("scale")
    if _angular(k):
        m1, m2, c = k.attr("margin1"), k.attr("margin2"), logits[rows, label].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            grad[rows, label] *= m1 * np.sin(m1 * np.arccos(c) + m2) / np.sqrt(1 - c * c)
    return {"Logits@GRAD": grad.astype(logits.dtype)}

