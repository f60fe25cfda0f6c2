"""Second derivatives by a complex step, for grad ops whose outputs are polynomials in their inputs (products of
run-time groups of factors: put_along_axis_grad with Reduce mul, gradc.ops.select_double): the derivative of p
along dd is Im(p(v + i h dd)) / h, exact to rounding for h = 2^-40 (the error is h^2 times the third-order terms,
and no difference cancels). The kernels take the complex values as they are (no conjugates, no division by a
factor), so zeros need no care; a third backward differentiates the stepped op at its complex point
(gradc.ops.complex_point).
"""

from __future__ import annotations

from ..ir import VarType
from .composite import Formula

STEP = 2.0 ** -40
COMPLEX_OF = {VarType.FP32: VarType.COMPLEX64, VarType.FP64: VarType.COMPLEX128}


def complex_type(g, var: str) -> int:
    return COMPLEX_OF[g.block.find_var(var).dtype]


def stepped(f: Formula, g, v: str, dd: str | None, step: float = STEP) -> str:
    """v + i step dd (v + 0i where nobody computed dd), complex."""
    along = f.op("scale", {"X": dd}, v, {"scale": step, "bias": 0.0}) if dd else f.fill_like(v, 0.0)
    return f.op("complex", {"X": v, "Y": along}, v, dtype=complex_type(g, v))


def into_slope(f: Formula, moved: str, like: str, wanted: str) -> None:
    """``wanted`` = Im(moved) / h."""
    f.into(wanted, "scale", {"X": f.op("imag", {"X": moved}, like)}, {"scale": 1.0 / STEP})
