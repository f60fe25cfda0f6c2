"""squeeze_excitation_block's bias and branch, over x of one channel at 2 (filter_dims [1, 1]: one hidden channel,
both int16 weights 32767 at max 1, so W1 = W2 = 1, all activations linear): pooled 2, h = 2 + b1, s = h + b2, out =
x s + branch. bias [1, 3] gives s 6: out 12; branch 5 adds 5 (to s 2: out 9)."""

import numpy as np

from . import SlotCase

SE = {"x": np.full((1, 1, 1, 1), 2.0), "filter": np.full(2, 32767, np.int16), "filter_max": np.ones(12)}
LINEAR = {"act_type": [0, 0, 0], "act_param": [0.0, 0.0, 0.0], "filter_dims": [1, 1]}

CASES = [
    SlotCase("squeeze_excitation_block", "bias", {**SE, "bias": np.array([1.0, 3.0])},
             {"out": np.full((1, 1, 1, 1), 12.0)}, LINEAR, overrides=False),
    SlotCase("squeeze_excitation_block", "branch", {**SE, "branch": np.full((1, 1, 1, 1), 5.0)},
             {"out": np.full((1, 1, 1, 1), 9.0)}, LINEAR, overrides=False),
]
