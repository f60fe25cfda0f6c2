"""Kernels of the modified Bessel functions of gradc.ops.special_math: i0, i1 and the exponentially scaled
i0e(x) = exp(-|x|) i0(x), i1e(x) = exp(-|x|) i1(x). Cephes' Chebyshev expansions of the scaled functions on
[0, 8] and, in 1/x, on [8, inf) (the coefficients are the published ones, highest order first), evaluated in
float64; the kernels cast to the input's dtype. The grads compute from x in float64 and leave out, which Paddle's
i0e/i1/i1e grad ops also take, unread: Paddle's i1_grad divides the float32 out by x, where i1(x) / x =
i1e_over_x(|x|) exp(|x|) keeps float64's digits and overflows only with i0 (past 713, not past 89 in float32).
"""

from __future__ import annotations

import numpy as np

from .special_math import elementwise

# exp(-x) I0(x) on [0, 8], in t = x / 2 - 2
_I0E_NEAR = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16, 1.71539128555513303061e-15,
    -1.16853328779934516808e-14, 7.67618549860493561688e-14, -4.85644678311192946090e-13, 2.95505266312963983461e-12,
    -1.72682629144155570723e-11, 9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7, 1.11738753912010371815e-6,
    -4.41673835845875056359e-6, 1.64484480707288970893e-5, -5.75419501008210370398e-5, 1.88502885095841655729e-4,
    -5.76375574538582365885e-4, 1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2, 1.71620901522208775349e-1,
    -3.04682672343198398683e-1, 6.76795274409476084995e-1)
# exp(-x) sqrt(x) I0(x) on [8, inf), in t = 32 / x - 2
_I0E_FAR = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17, 3.46122286769746109310e-17,
    -2.82762398051658348494e-16, -3.42548561967721913462e-16, 1.77256013305652638360e-15, 3.81168066935262242075e-15,
    -9.55484669882830764870e-15, -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11, -3.14991652796324136454e-11,
    1.18891471078464383424e-11, 4.94060238822496958910e-10, 3.39623202570838634515e-9, 2.26666899049817806459e-8,
    2.04891858946906374183e-7, 2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1)
# exp(-x) I1(x) / x on [0, 8], in t = x / 2 - 2
_I1E_NEAR = (
    2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16, -1.10559694773538630805e-15,
    7.60068429473540693410e-15, -5.04218550472791168711e-14, 3.22379336594557470981e-13, -1.98397439776494371520e-12,
    1.17361862988909016308e-11, -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
    9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7, -8.56872026469545474066e-7,
    3.47025130813767847674e-6, -1.32731636560394358279e-5, 4.78156510755005422638e-5, -1.61760815825896745588e-4,
    5.12285956168575772895e-4, -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
    2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1, -1.76416518357834055153e-1,
    2.52587186443633654823e-1)
# exp(-x) sqrt(x) I1(x) on [8, inf), in t = 32 / x - 2
_I1E_FAR = (
    7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17, -3.20952592199342395980e-17,
    2.96262899764595013876e-16, 3.30820231092092828324e-16, -1.88035477551078244854e-15, -3.81440307243700780478e-15,
    1.04202769841288027642e-14, 4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
    -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11, 3.25260358301548823856e-11,
    -1.89749581235054123450e-11, -5.58974346219658380687e-10, -3.83538038596423702205e-9, -2.63146884688951950684e-8,
    -2.51223623787020892529e-7, -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
    7.78576235018280120474e-1)
_SPLIT = 8.0


def _chebyshev(t, coefficients):
    """sum c_k T_k(t / 2) (Cephes' convention, halved constant term), by Clenshaw's recurrence."""
    current, previous, before = np.full_like(t, coefficients[0]), np.zeros_like(t), np.zeros_like(t)
    for c in coefficients[1:]:
        before, previous = previous, current
        current = t * previous - before + c
    return 0.5 * (current - before)


def _scaled(a, near, far, near_factor):
    """One of the scaled functions at a = |x| >= 0: near(a / 2 - 2) near_factor(a) up to 8, far(32 / a - 2) / sqrt(a)
    beyond (NaN stays NaN)."""
    out = np.empty_like(a)
    inside = a <= _SPLIT
    close = a[inside]
    out[inside] = _chebyshev(close / 2 - 2, near) * near_factor(close)
    beyond = a[~inside]
    out[~inside] = _chebyshev(32 / beyond - 2, far) / np.sqrt(beyond)
    return out


def i0e(x):
    return _scaled(np.abs(np.asarray(x, np.float64)), _I0E_NEAR, _I0E_FAR, np.ones_like)


def i1e_over_x(a):
    """i1e(a) / a for a = |x| >= 0 (1/2 at 0)."""
    return _scaled(a, _I1E_NEAR, _I1E_FAR, lambda a: 1.0) / np.where(a <= _SPLIT, 1.0, a)


def i1e(x):
    x = np.asarray(x, np.float64)
    a = np.abs(x)
    value = _scaled(a, _I1E_NEAR, _I1E_FAR, lambda a: a)
    return np.where(x < 0, -value, value)


def _unscaled(scaled, x):
    """exp(|x|) scaled(x), +-inf at +-inf (where exp(inf) 0 is NaN)."""
    x = np.asarray(x, np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        value = np.exp(np.abs(x)) * scaled
    return np.where(np.isinf(x), np.copysign(np.inf, scaled), value)


def i0(x):
    return _unscaled(i0e(x), x)


def i1(x):
    return _unscaled(i1e(x), x)


def _near_zero(x):
    """|x| within x's machine epsilon of 0, where Paddle's i1 and i1e grads are exactly 1/2 (the expansion gives
    1/2 + 1e-16)."""
    x = np.asarray(x)
    return np.abs(x) <= np.finfo(np.result_type(x.dtype, np.float32)).eps


def _i1_slope(x):
    """i1'(x) = i0(x) - i1(x) / x."""
    a = np.abs(np.asarray(x, np.float64))
    return np.where(_near_zero(x), 0.5, _unscaled(i0e(a) - i1e_over_x(a), a))


def _i1e_slope(x):
    """i1e'(x) = i0e(x) - i1e(x) (sign(x) + 1 / x), even in x."""
    a = np.abs(np.asarray(x, np.float64))
    return np.where(_near_zero(x), 0.5, i0e(a) - i1e(a) - i1e_over_x(a))


elementwise("i0", lambda x, k: i0(x), lambda x, k: i1(x), "x", lowercase=True)
# the grad ops of i0e, i1 and i1e take out (Paddle's do) and leave it unread: its buffer can go
# i0e has a kink at 0: as Paddle, the slope is -1 at +0 and +1 at -0
elementwise("i0e", lambda x, k: i0e(x), lambda x, k: i1e(x) - np.copysign(1.0, x) * i0e(x), "x", lowercase=True,
            shape_only=("out",))
elementwise("i1", lambda x, k: i1(x), lambda x, k: _i1_slope(x), "x", lowercase=True, shape_only=("out",))
elementwise("i1e", lambda x, k: i1e(x), lambda x, k: _i1e_slope(x), "x", lowercase=True, shape_only=("out",))
