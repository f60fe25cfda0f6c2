"""Cases for the activations nn.Hardtanh, CELU, Hardshrink, LogSigmoid, Mish, SELU, Softshrink, Tanhshrink,
ThresholdedReLU, PReLU, Maxout, RReLU, F.gumbel_softmax and paddle.incubate.softmax_mask_fuse emit, and relu6's
threshold and swish's beta.

Inputs keep a margin from every kink. rrelu's training mode and gumbel_softmax draw fresh noise each run,
which central differences cannot follow: tests/test_activation_math_family.py checks them with the noise pinned;
here rrelu runs in test mode and gumbel_softmax in hard mode with logits far apart (a constant one-hot).
"""

import numpy as np

from . import Case, rng
from .activation_math import avoid

r = rng(11)


def randn(*shape, scale=1.0):
    return scale * r.standard_normal(shape)


def distinct(*shape):
    n = int(np.prod(shape))
    return r.permutation(np.linspace(-3, 3, n) + r.uniform(-0.01, 0.01, n)).reshape(shape)


X = randn(2, 3, 4, scale=2)

CASES = [
    Case("relu6", {"X": avoid(randn(3, 4, scale=3), 0, 3)}, {"threshold": 3.0}),
    Case("swish", {"X": randn(3, 4, scale=2)}, {"beta": 2.5}),
    Case("swish", {"X": randn(2, 3, 2, scale=2)}, {"beta": -0.5}),
    Case("brelu", {"X": avoid(randn(3, 4, scale=30), 0, 24)}),
    Case("brelu", {"X": avoid(X, -1, 1)}, {"t_min": -1.0, "t_max": 1.0}),
    Case("brelu", {"X": avoid(X, 0.5, 2)}, {"t_min": 0.5, "t_max": 2.0}),
    Case("celu", {"X": avoid(X, 0)}),
    Case("celu", {"X": avoid(X, 0)}, {"alpha": 0.5}),
    Case("celu", {"X": avoid(X, 0)}, {"alpha": -2.0}),
    Case("hard_shrink", {"X": avoid(X, -0.5, 0.5)}),
    Case("hard_shrink", {"X": avoid(X, -1.5, 1.5)}, {"threshold": 1.5}),
    Case("hard_shrink", {"X": avoid(X, 0)}, {"threshold": 0.0}),
    Case("logsigmoid", {"X": randn(3, 4, scale=5)}),
    Case("logsigmoid", {"X": np.array([-40.0, -3.0, 0.0, 2.5, 40.0])}),
    Case("mish", {"X": randn(3, 4, scale=3)}),
    Case("mish", {"X": avoid(randn(2, 3, 4, scale=4), 1.0)}, {"threshold": 1.0}),
    Case("mish", {"X": np.array([-30.0, -5.0, 0.0, 19.0, 25.0])}),
    Case("selu", {"X": avoid(X, 0)}),
    Case("selu", {"X": avoid(X, 0)}, {"alpha": 0.5, "scale": 2.0}),
    Case("selu", {"X": avoid(X, 0)}, {"alpha": 0.0, "scale": 0.75}),
    Case("softshrink", {"X": avoid(X, -0.5, 0.5)}),
    Case("softshrink", {"X": avoid(X, -1.25, 1.25)}, {"lambda": 1.25}),
    Case("softshrink", {"X": avoid(X, 0)}, {"lambda": 0.0}),
    Case("tanh_shrink", {"X": randn(3, 4, scale=2)}),
    Case("tanh_shrink", {"X": randn(2, 3, 2)}),
    Case("thresholded_relu", {"X": avoid(X, 1)}),
    Case("thresholded_relu", {"X": avoid(X, -0.5)}, {"threshold": -0.5, "value": 0.0}),
    Case("thresholded_relu", {"X": avoid(X, 0.25)}, {"threshold": 0.25, "value": -2.0}),

    # prelu: every mode, both layouts of channel mode, ranks 1 to 4, Alpha with padding dims
    Case("prelu", {"X": avoid(randn(2, 3, 4), 0), "Alpha": np.array([0.3])}),
    Case("prelu", {"X": avoid(randn(5), 0), "Alpha": np.array([-0.4])}, {"mode": "all"}),
    Case("prelu", {"X": avoid(randn(2, 3, 2, 2), 0), "Alpha": r.uniform(0, 1, 3)}, {"mode": "channel"}),
    Case("prelu", {"X": avoid(randn(2, 3, 2, 2), 0), "Alpha": r.uniform(0, 1, (1, 3, 1, 1))}, {"mode": "channel"}),
    Case("prelu", {"X": avoid(randn(2, 3, 2, 4), 0), "Alpha": r.uniform(0, 1, 4)},
         {"mode": "channel", "data_format": "NHWC"}),
    Case("prelu", {"X": avoid(randn(4, 3), 0), "Alpha": r.uniform(0, 1, 3)}, {"mode": "channel"}),
    Case("prelu", {"X": avoid(randn(2, 3, 4), 0), "Alpha": r.uniform(0, 1, (1, 3, 4))}, {"mode": "element"}),
    Case("prelu", {"X": avoid(randn(2, 2, 3, 2), 0), "Alpha": r.uniform(0, 1, (1, 2, 3, 2))},
         {"mode": "element", "data_format": "NHWC"}),
    Case("prelu", {"X": avoid(randn(3, 4), 0), "Alpha": r.uniform(0, 1, (2, 4))}, {"mode": "element"}),
    Case("prelu", {"X": avoid(randn(5), 0), "Alpha": r.uniform(0, 1, 5)}, {"mode": "element"}),

    # maxout: NCHW and NHWC, groups of 2 and 3
    Case("maxout", {"X": distinct(2, 4, 2, 3)}, {"groups": 2}),
    Case("maxout", {"X": distinct(1, 6, 2, 2)}, {"groups": 3, "axis": 1}),
    Case("maxout", {"X": distinct(2, 2, 3, 4)}, {"groups": 2, "axis": -1}),
    Case("maxout", {"X": distinct(1, 2, 2, 6)}, {"groups": 3, "axis": 3}),

    # rrelu in test mode: the mean slope (lower + upper) / 2
    Case("rrelu", {"X": avoid(X, 0)}, {"is_test": True}),
    Case("rrelu", {"X": avoid(X, 0)}, {"is_test": True, "lower": 0.0, "upper": 1.0}),
    Case("rrelu", {"X": avoid(X, 0)}, {"is_test": True, "lower": 0.3, "upper": 0.3}),

    # gumbel_softmax, hard: the one-hot never moves (logits 1000 apart beat any Gumbel draw), so its gradient is 0
    Case("gumbel_softmax", {"X": 1000.0 * distinct(3, 4)}, {"hard": True}),
    Case("gumbel_softmax", {"X": 1000.0 * distinct(3, 4)}, {"hard": True, "axis": 0, "temperature": 0.5}),

    # fused_softmax_mask: Mask [batch, 1, rows, cols] spread over the heads gets their grads summed (Paddle gives it
    # none); Mask alone wanted, X's grad is a temporary
    Case("fused_softmax_mask", {"X": randn(2, 3, 2, 4), "Mask": randn(2, 1, 2, 4, scale=2)}),
    Case("fused_softmax_mask", {"X": randn(1, 2, 3, 3), "Mask": randn(1, 1, 3, 3)}, wrt=["Mask"]),
    Case("fused_softmax_mask", {"X": randn(2, 1, 1, 5), "Mask": randn(2, 1, 1, 5)}, wrt=["X"]),
    # its upper-triangle form: row i a softmax of its first i + 1 columns, the rest 0 (so is their grad)
    Case("fused_softmax_mask_upper_triangle", {"X": randn(2, 3, 4, 4)}),
]
