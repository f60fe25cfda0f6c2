"""Optional inputs of the extras ops: histogram's Weight (gradc.ops.select)."""

import numpy as np

from . import SlotCase

CASES = [
    # each weight lands in its element's bin: [0.1] in bin 0, [0.6, 0.6, 0.9] in bin 1
    SlotCase("histogram", "Weight", {"X": np.array([0.1, 0.6, 0.6, 0.9], np.float32),
                                     "Weight": np.array([1.0, 2.0, 3.0, 0.5], np.float32)},
             {"Out": np.array([1.0, 5.5], np.float32)}, {"bins": 2, "min": 0.0, "max": 1.0}),
]
