"""Special functions, elementwise: erfinv, the gamma family (lgamma, digamma, polygamma) and the modified Bessel
functions of the first kind (i0, i1 and their exponentially scaled i0e, i1e). Every grad op reads the forward
slots Paddle's `<type>_grad` reads; the derivatives are the functions of the family itself:

    lgamma' = digamma    digamma' = polygamma(1)    polygamma(n)' = polygamma(n + 1)
    erfinv'(x) = sqrt(pi) / 2 exp(erfinv(x)^2)      (from Out)
    i0' = i1    i1' = i0 - i1 / x (1/2 at 0)    i0e' = i1e - sign(x) i0e    i1e' = i0e - i1e (sign(x) + 1 / x)

Values follow Paddle 3.3.1 at poles and out of the domain (erfinv is +-inf past +-1, the gamma family's poles
are +-inf or NaN as Paddle's). At +-inf gradc gives the limits where Paddle's kernels give NaN: i0(+-inf) and
i1(+-inf) are +inf and +-inf (their grads too), polygamma(n >= 1, +inf) and digamma's grad at +inf are 0.
"""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import same_as


def special(name: str, *uses: str, lowercase: bool = False, attrs: dict | None = None, infer=None) -> None:
    """An elementwise op x -> out whose `<name>_grad` reads the forward slots ``uses``; Paddle names the slots
    X/Out on its older ops and x/out on the newer ones (``lowercase``)."""
    x, out = ("x", "out") if lowercase else ("X", "Out")
    defop(name, [x], [out], attrs=attrs, infer=infer or same_as(x, out), grad=grad_op(*uses))


def _polygamma_infer(ctx):
    if ctx.attr("n") < 0:
        ctx.fail(f"attribute n={ctx.attr('n')} is out of range: the order of the derivative must be >= 0")
    return same_as("x", "out")(ctx)


special("erfinv", "Out")
special("lgamma", "X")
special("digamma", "X")
special("polygamma", "x", lowercase=True, attrs={"n": 0}, infer=_polygamma_infer)
special("i0", "x", lowercase=True)
special("i0e", "x", "out", lowercase=True)
special("i1", "x", "out", lowercase=True)
special("i1e", "x", "out", lowercase=True)
