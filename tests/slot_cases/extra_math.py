"""Optional inputs of gradc.ops.extra_math: swiglu's y (absent, x's last axis holds both halves)."""

import numpy as np

from . import SlotCase

R = np.random.default_rng(43)
X, Y = R.standard_normal((2, 3)), R.standard_normal((2, 3))

CASES = [
    SlotCase("swiglu", "y", {"x": X, "y": Y}, {"out": X / (1 + np.exp(-X)) * Y}, overrides=False),
]
