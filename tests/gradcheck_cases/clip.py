"""Cases for the gradient clipping ops (gradc.ops.clip)."""

from . import Case, rng

r = rng(16)

CASES = [
    Case("squared_l2_norm", {"X": r.standard_normal((3, 4))}),
    Case("squared_l2_norm", {"X": r.standard_normal(5)}),
]
