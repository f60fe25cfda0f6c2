"""Second-derivative cases (as in second_order.py) for the activations, losses and norms whose grad ops
got makers later: each attribute that changes the formula has a case of its own."""

from __future__ import annotations

import numpy as np

from . import rng
from .second_order import away, randn, second_order

r = rng(43)

CASES = [
    # activations
    second_order("sin", {"X": randn(2, 3, scale=2)}),
    second_order("cos", {"X": randn(2, 3, scale=2)}),
    second_order("selu", {"X": away(2, 3)}),
    second_order("selu", {"X": away(2, 3)}, {"alpha": 0.5, "scale": 2.0}),
    second_order("celu", {"X": away(2, 3)}),
    second_order("celu", {"X": away(2, 3)}, {"alpha": -0.7}),
    second_order("mish", {"X": randn(2, 3, scale=2)}),
    second_order("mish", {"X": np.array([[-2.0, 0.5, 1.5], [2.5, 3.5, -0.3]])}, {"threshold": 2.0}),
    second_order("hard_swish", {"X": np.array([[-4.0, -2.0, 0.5], [1.7, 2.9, 4.0]])}),
    second_order("hard_swish", {"X": np.array([[-2.0, -0.5, 0.5], [1.5, 2.5, 4.0]])},
                 {"threshold": 3.0, "scale": 4.0, "offset": 1.0}),
    second_order("prelu", {"X": away(2, 3, 2), "Alpha": np.array([0.3])}),
    second_order("prelu", {"X": away(2, 3, 2, 2), "Alpha": r.uniform(0, 1, 3)}, {"mode": "channel"}),
    second_order("prelu", {"X": away(2, 2, 3), "Alpha": r.uniform(0, 1, 3)},
                 {"mode": "channel", "data_format": "NHWC"}),
    second_order("prelu", {"X": away(2, 3, 2), "Alpha": r.uniform(0, 1, (1, 3, 2))}, {"mode": "element"}),
    second_order("rrelu", {"X": away(2, 3)}, {"is_test": True, "lower": 0.1, "upper": 0.3}),
]
