"""Cases for the gradient clipping ops (gradc.ops.clip)."""

from . import Case, rng

r = rng(16)

CASES = [
    Case("squared_l2_norm", {"X": r.standard_normal((3, 4))}),
    Case("squared_l2_norm", {"X": r.standard_normal(5)}),
    Case("clip_by_norm", {"X": r.standard_normal((3, 4))}, {"max_norm": 1.0}),    # clipped: ||X|| about 3.5
    Case("clip_by_norm", {"X": r.standard_normal((2, 3))}, {"max_norm": 10.0}),   # passes unscaled
    Case("clip_by_norm", {"X": r.standard_normal(6)}, {"max_norm": 0.5}),
]
