"""Special functions, elementwise: erfinv, the gamma family (lgamma, digamma, polygamma) and the modified Bessel
functions of the first kind (i0, i1 and their exponentially scaled i0e, i1e). Every grad op reads the forward
slots Paddle's `<type>_grad` reads; the derivatives are the functions of the family itself:

    lgamma' = digamma    digamma' = polygamma(1)    polygamma(n)' = polygamma(n + 1)
    erfinv'(x) = sqrt(pi) / 2 exp(erfinv(x)^2)      (from Out)
    i0' = i1    i1' = i0 - i1 / x (1/2 at 0)    i0e' = i1e - sign(x) i0e    i1e' = i0e - i1e (sign(x) + 1 / x)

They take float input only, as Paddle 3.3.1's kernels (its dygraph API casts integers to float32 first), and
give their output in the input's dtype. Values follow Paddle 3.3.1 at poles and out of the domain (erfinv is
+-inf past +-1, the gamma family's poles are +-inf or NaN as Paddle's), and its subgradient at i0e's kink (-1
at +0, +1 at -0). gradc computes in float64 and differs where Paddle 3.3.1 is wrong:
- at +-inf, where Paddle's kernels give NaN for a function with a limit: i0(+-inf) = inf, i1(+-inf) = +-inf (and
  their grads), polygamma(n >= 1, +inf) = 0, so digamma's grad at +inf is 0;
- float32 input, which Paddle computes in float32: its digamma grad (trigamma) below 0 is far off (negative at
  -18.99925, where it is 1.78e6; inf or NaN near -9.2), its erfinv is inf at the largest float32 below 1;
- polygamma below 0, which Paddle sums from x upward, cancelling terms near the poles far larger than the value
  (n = 6 at x = -64.5: 0.5% off); gradc reflects to 1 - x;
- erfinv near 0 and +-1 in float64: Paddle goes through (x + 1) / 2, which rounds (relative error 8e-4 at
  x = 1e-13, 0 below 1e-16; its grad at 1 - 1e-15 is 11% off).
"""

from __future__ import annotations

from .activation import activation
from .infer import float_like


def _polygamma_infer(ctx):
    if ctx.attr("n") < 0:
        ctx.fail(f"attribute n={ctx.attr('n')} is out of range: the order of the derivative must be >= 0")
    return float_like("x", "out")(ctx)


activation("erfinv", "Out", infer=float_like())
activation("lgamma", "X", infer=float_like())
activation("digamma", "X", infer=float_like())
activation("polygamma", "x", lowercase=True, attrs={"n": 0}, infer=_polygamma_infer)
activation("i0", "x", lowercase=True, infer=float_like("x", "out"))
activation("i0e", "x", "out", lowercase=True, infer=float_like("x", "out"))
activation("i1", "x", "out", lowercase=True, infer=float_like("x", "out"))
activation("i1e", "x", "out", lowercase=True, infer=float_like("x", "out"))
