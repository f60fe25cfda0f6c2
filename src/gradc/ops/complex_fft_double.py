"""Second derivatives of gradc.ops.complex_fft's grad ops, and of abs_grad on a complex X.

real_grad, imag_grad and the fft grad ops are each the adjoint of their forward op, linear in dOut and flat in X: the
grad of each is the forward op applied to ddX (composite.linear); complex_grad's is complex(ddX, ddY).

angle_grad and abs_grad of a complex z = a + ib are not linear in z. With w the unit factor their kernel gives
(angle_grad(z, 1) = i z / |z|^2 = u + iv, abs_grad(z, 1) = z / |z| = u + iv; both 0 at z = 0) and ddX = p + iq:
    d/d(dOut) = s = p u + q v,
    angle: d/dz = dOut (q m - 2 v s) + i dOut (2 u s - p m),   m = u^2 + v^2 = 1 / |z|^2,
    abs:   d/dz = dOut (p - s u) / |z| + i dOut (q - s v) / |z|,   1 / |z| = |angle_grad(z, 1)|,
all from real ops, so the third derivatives follow, and 0 at z = 0 as the first one.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR, real_dtype
from ..registry import defgrad
from . import complex_fft  # noqa: F401  (registers the grad ops given makers here)
from .complex_inputs import is_complex
from .composite import Formula, first, linear

for _name in ("real", "imag", "fft_c2c", "fft_c2r"):
    defgrad(f"{_name}_grad", grad=linear(_name))
defgrad("fft_r2c_grad", grad=linear("fft_r2c"), no_grad_inputs=["X"])


def _complex_grad_grad(g):
    """complex_grad is linear in dOut and flat in X, Y: d/d(dOut) = complex(ddX, ddY), a missing one 0."""
    f, wanted = Formula(g), first(g.IG("Out@GRAD"))
    if wanted in (None, EMPTY_VAR):
        return []
    parts = {slot: first(g.OG(f"{slot}@GRAD")) or f.fill_like(first(g.I(slot)), 0.0) for slot in ("X", "Y")}
    f.into(wanted, "complex", parts)
    return f.ops


defgrad("complex_grad", grad=_complex_grad_grad, no_grad_inputs=["X", "Y"])


class _Parts:
    """The real ops of a second derivative of a complex X: its unit factor w = u + iv and ddX = p + iq."""

    def __init__(self, g, unit_op: str):
        self.f = f = Formula(g)
        self.x, self.dout, ddx = first(g.I("X")), first(g.I("Out@GRAD")), first(g.OG("X@GRAD"))
        ones = f.fill_like(self.dout, 1.0)
        self.unit = f.op(unit_op, {"X": self.x, "Out@GRAD": ones}, self.x, slot="X@GRAD")
        self.u, self.v = self.split(self.unit)
        self.p, self.q = self.split(ddx)
        self.s = f.add(f.mul(self.p, self.u, self.dout), f.mul(self.q, self.v, self.dout), self.dout)

    def split(self, z: str) -> tuple[str, str]:
        """(Re z, Im z) of a complex var shaped and typed like X."""
        dtype = real_dtype(self.f.g.block.var(self.x).dtype)
        return tuple(self.f.op(part, {"X": z}, self.dout, dtype=dtype) for part in ("real", "imag"))

    def times_dout(self, x: str) -> str:
        return self.f.mul(self.dout, x, self.dout)


def _second(g, unit_op: str, d_re_im) -> list:
    """The maker of ``unit_op``'s grad op on a complex X: d/d(dOut) = s, and d/dX from ``d_re_im(parts)``."""
    d_dout, d_x = first(g.IG("Out@GRAD")), first(g.IG("X"))
    if not first(g.OG("X@GRAD")) or (d_dout in (None, EMPTY_VAR) and d_x in (None, EMPTY_VAR)):
        return []
    parts = _Parts(g, unit_op)
    f = parts.f
    f.into(d_dout, "scale", {"X": parts.s}, {"scale": 1.0})
    if d_x not in (None, EMPTY_VAR):
        d_re, d_im = d_re_im(parts)
        f.into(d_x, "complex", {"X": parts.times_dout(d_re), "Y": parts.times_dout(d_im)})
    return f.ops


def _angle_terms(parts):
    f, like = parts.f, parts.dout
    m = f.add(f.mul(parts.u, parts.u, like), f.mul(parts.v, parts.v, like), like)
    twice_s = f.scale(parts.s, 2.0)
    return (f.sub(f.mul(parts.q, m, like), f.mul(parts.v, twice_s, like), like),
            f.sub(f.mul(parts.u, twice_s, like), f.mul(parts.p, m, like), like))


def _abs_terms(parts):
    f, like = parts.f, parts.dout
    inverse = f.op("abs", {"X": f.op("angle_grad", {"X": parts.x, "Out@GRAD": f.fill_like(like, 1.0)}, parts.x,
                                     slot="X@GRAD")}, like)
    return tuple(f.mul(f.sub(part, f.mul(parts.s, unit, like), like), inverse, like)
                 for part, unit in ((parts.p, parts.u), (parts.q, parts.v)))


def _angle_grad_grad(g):
    """angle_grad of a real X is 0 whatever dOut: no second derivative flows."""
    return _second(g, "angle_grad", _angle_terms) if is_complex(g, first(g.I("X"))) else []


def abs_grad_of_complex(g):
    """abs_grad's maker where X is complex (gradc.ops.activation_double keeps the real one)."""
    return _second(g, "abs_grad", _abs_terms)


defgrad("angle_grad", grad=_angle_grad_grad)
