"""Cases for the optional inputs of top_p_sampling (gradc.ops.llm_sampling), on rows whose result draws nothing."""

import numpy as np

from . import SlotCase

FLAT = np.array([[0.3, 0.3, 0.2, 0.2]], np.float32)
PEAKED = np.array([[0.1, 0.7, 0.1, 0.1]], np.float32)
CASES = [
    # every token is below the threshold: the draw gives way down to the first of the order
    SlotCase("top_p_sampling", "threshold", {"x": FLAT, "ps": np.ones(1, np.float32),
                                             "threshold": np.full(1, 0.35, np.float32)},
             {"ids": np.array([[0]]), "out": FLAT[:, :1]}, overrides=False),
    SlotCase("top_p_sampling", "topp_seed", {"x": PEAKED, "ps": np.full(1, 0.5, np.float32),
                                             "topp_seed": np.array([7], np.int64)},
             {"ids": np.array([[1]]), "out": PEAKED[:, 1:2]}, overrides=False),
]
