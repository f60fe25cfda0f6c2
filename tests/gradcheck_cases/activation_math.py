"""Cases for activations, unary/binary math, matmul/bmm, reductions, cumsum, where and p_norm.

Inputs keep a margin from every kink (relu-like corners, clip bounds, max/min ties), where the
central difference would straddle two slopes.
"""

import numpy as np

from . import Case, rng

r = rng(7)


def randn(*shape, scale=1.0):
    return scale * r.standard_normal(shape)


def avoid(x, *points, margin=0.1):
    """x with every value within ``margin`` of a kink pushed ``2 * margin`` past it."""
    x = np.array(x, dtype=np.float64)
    for p in points:
        near = np.abs(x - p) < margin
        x[near] = p + np.where(x[near] >= p, 2, -2) * margin
    return x


def positive(*shape, low=0.5, high=2.0):
    return r.uniform(low, high, shape)


def distinct(*shape):
    """Values no two of which are within 0.05 of each other (max/min without ties)."""
    n = int(np.prod(shape))
    return r.permutation(np.linspace(-2, 2, n) + r.uniform(-0.01, 0.01, n)).reshape(shape)


X34 = randn(3, 4)
X234 = randn(2, 3, 4)

CASES = [
    # softmax exists: every axis of a 3-D input
    *[Case("softmax", {"X": randn(2, 3, 4)}, {"axis": a}) for a in (0, 2, -1)],
    *[Case("log_softmax", {"X": randn(2, 3, 4)}, {"axis": a}) for a in (0, 1, -1)],
    Case("log_softmax", {"X": randn(3, 5)}),
    Case("gelu", {"X": randn(3, 4, scale=2)}),
    Case("gelu", {"X": randn(3, 4, scale=2)}, {"approximate": True}),
    Case("gelu", {"X": randn(2, 3, 2, scale=4)}, {"approximate": False}),
    Case("leaky_relu", {"X": avoid(X34, 0)}),
    Case("leaky_relu", {"X": avoid(randn(2, 3, 4), 0)}, {"alpha": 0.3}),
    Case("leaky_relu", {"X": avoid(randn(3, 4), 0)}, {"alpha": -1.5}),
    Case("elu", {"X": avoid(randn(3, 4), 0)}),
    Case("elu", {"X": avoid(randn(3, 4, scale=2), 0)}, {"alpha": 0.5}),
    Case("elu", {"X": avoid(randn(2, 3, 2), 0)}, {"alpha": 2.0}),
    Case("silu", {"X": randn(3, 4, scale=3)}),
    Case("silu", {"X": randn(2, 3, 2)}),
    Case("swish", {"X": randn(3, 4, scale=3)}),
    Case("softsign", {"X": randn(3, 4, scale=3)}),
    Case("softplus", {"X": randn(3, 4, scale=3)}),
    Case("softplus", {"X": avoid(randn(3, 4, scale=2), 1.5)}, {"beta": 2.0, "threshold": 3.0}),
    Case("softplus", {"X": avoid(randn(3, 4, scale=30), 20)}, {"beta": 1.0, "threshold": 20.0}),
    Case("softplus", {"X": avoid(randn(3, 4, scale=2), -2)}, {"beta": 0.5, "threshold": -1.0}),
    Case("hard_sigmoid", {"X": avoid(randn(3, 4, scale=3), -2.5, 2.5)}),
    Case("hard_sigmoid", {"X": avoid(randn(3, 4, scale=4), -3, 3)}, {"slope": 1 / 6, "offset": 0.5}),
    Case("hard_sigmoid", {"X": avoid(randn(3, 4, scale=2), -0.4, 1.6)}, {"slope": 0.5, "offset": 0.2}),
    Case("hard_swish", {"X": avoid(randn(3, 4, scale=4), -3, 3)}),
    Case("hard_swish", {"X": avoid(randn(3, 4, scale=3), -1, 3)},
         {"threshold": 4.0, "scale": 5.0, "offset": 1.0}),
    Case("relu6", {"X": avoid(randn(3, 4, scale=4) + 2, 0, 6)}),
    Case("relu6", {"X": avoid(randn(2, 3, 2, scale=5), 0, 6)}),

    # unary math
    Case("exp", {"X": randn(3, 4)}),
    Case("exp", {"X": randn(2, 3, 2)}),
    Case("log", {"X": positive(3, 4)}),
    Case("cos", {"X": randn(3, 4, scale=3)}),
    Case("sin", {"X": randn(3, 4, scale=3)}),
    Case("sqrt", {"X": positive(3, 4)}),
    Case("rsqrt", {"X": positive(3, 4)}),
    Case("square", {"X": randn(3, 4)}),
    Case("abs", {"X": avoid(randn(3, 4), 0)}),
    Case("sign", {"X": avoid(randn(3, 4), 0)}),
    Case("pow", {"X": randn(3, 4)}, {"factor": 2.0}),
    Case("pow", {"X": randn(3, 4)}, {"factor": 3.0}),
    Case("pow", {"X": positive(3, 4)}, {"factor": 0.5}),
    Case("pow", {"X": positive(3, 4)}, {"factor": -1.5}),
    Case("pow", {"X": positive(3, 4), "FactorTensor": np.array([2.5])}),
    Case("clip", {"X": avoid(randn(3, 4), -0.5, 0.7)}, {"min": -0.5, "max": 0.7}),
    Case("clip", {"X": avoid(randn(2, 3, 2, scale=2), -1, 1)}, {"min": -1.0, "max": 1.0}),
    Case("clip", {"X": avoid(randn(3, 4), -0.2, 0.3), "Min": np.array([-0.2]), "Max": np.array([0.3])},
         {"min": -9.0, "max": 9.0}),

    # binary elementwise with Paddle's axis broadcasting (Paddle's own max/min/pow grads ignore axis)
    Case("elementwise_max", {"X": distinct(2, 3, 4), "Y": distinct(3)}, {"axis": 1}),
    Case("elementwise_max", {"X": distinct(2, 3, 4), "Y": distinct(4)}),
    Case("elementwise_max", {"X": distinct(3, 4), "Y": distinct(3, 4) + 0.02}),
    Case("elementwise_max", {"X": distinct(2, 3), "Y": distinct(2, 3, 4)}, {"axis": 0}),
    Case("elementwise_min", {"X": distinct(2, 3, 4), "Y": distinct(3)}, {"axis": 1}),
    Case("elementwise_min", {"X": distinct(2, 3, 4), "Y": distinct(3, 4)}),
    Case("elementwise_min", {"X": distinct(3, 1), "Y": distinct(1, 4) + 0.02}),
    Case("elementwise_pow", {"X": positive(2, 3, 4), "Y": randn(3)}, {"axis": 1}),
    Case("elementwise_pow", {"X": positive(3, 4), "Y": randn(3, 4)}),
    Case("elementwise_pow", {"X": positive(2, 3, 4), "Y": randn(4)}),
    Case("elementwise_pow", {"X": positive(2, 3, 4), "Y": randn(2, 3)}, {"axis": 0}),

    # matmul (v1) and bmm
    Case("matmul", {"X": randn(3, 4), "Y": randn(4, 5)}),
    Case("matmul", {"X": randn(4, 3), "Y": randn(4, 5)}, {"transpose_X": True}),
    Case("matmul", {"X": randn(3, 4), "Y": randn(5, 4)}, {"transpose_Y": True, "alpha": 2.5}),
    Case("matmul", {"X": randn(2, 4, 3), "Y": randn(2, 5, 4)},
         {"transpose_X": True, "transpose_Y": True, "alpha": -0.5}),
    Case("matmul", {"X": randn(2, 3, 4), "Y": randn(4, 5)}),
    Case("matmul", {"X": randn(4), "Y": randn(2, 4, 5)}),
    Case("matmul", {"X": randn(4), "Y": randn(4)}, {"alpha": 3.0}),
    Case("matmul", {"X": randn(3, 4), "Y": randn(4)}, {"transpose_Y": True}),
    Case("bmm", {"X": randn(2, 3, 4), "Y": randn(2, 4, 5)}),
    Case("bmm", {"X": randn(1, 2, 3), "Y": randn(1, 3, 1)}),

    # reductions (reduce_sum / reduce_mean exist: more dims, keep_dim and reduce_all)
    Case("reduce_sum", {"X": randn(2, 3, 4)}, {"dim": [0, 2]}),
    Case("reduce_sum", {"X": randn(2, 3, 4)}, {"dim": [-1, 1], "keep_dim": True}),
    Case("reduce_sum", {"X": randn(2, 3, 4)}, {"dim": [1], "reduce_all": True, "keep_dim": True}),
    Case("reduce_mean", {"X": randn(2, 3, 4)}, {"dim": [0, 1, 2]}),
    Case("reduce_mean", {"X": randn(2, 3, 4)}, {"dim": [-2]}),
    Case("reduce_mean", {"X": randn(2, 3, 4)}, {"dim": [0], "reduce_all": True}),
    Case("reduce_max", {"X": distinct(3, 4, 5)}, {"dim": [1]}),
    Case("reduce_max", {"X": distinct(3, 4, 5)}, {"dim": [0, 2], "keep_dim": True}),
    Case("reduce_max", {"X": distinct(3, 4)}, {"reduce_all": True}),
    Case("reduce_min", {"X": distinct(3, 4, 5)}, {"dim": [-1]}),
    Case("reduce_min", {"X": distinct(3, 4, 5)}, {"dim": [0, 1], "keep_dim": True}),
    Case("reduce_min", {"X": distinct(2, 3)}, {"dim": [0], "reduce_all": True, "keep_dim": True}),
    Case("reduce_amax", {"X": distinct(3, 4, 5)}, {"dim": [0, 2]}),
    Case("reduce_amax", {"X": distinct(3, 4)}, {"reduce_all": True, "keep_dim": True}),
    Case("reduce_amin", {"X": distinct(3, 4, 5)}, {"dim": [-1], "keep_dim": True}),
    Case("reduce_amin", {"X": distinct(2, 3)}, {"reduce_all": True}),
    Case("logsumexp", {"X": randn(3, 4, 5)}, {"axis": [1]}),
    Case("logsumexp", {"X": randn(3, 4, 5)}, {"axis": [0, -1], "keepdim": True}),
    Case("logsumexp", {"X": randn(3, 4)}, {"reduce_all": True}),
    Case("logsumexp", {"X": randn(2, 3)}, {"axis": []}),
    Case("reduce_prod", {"X": randn(3, 4, 2)}, {"dim": [1]}),
    Case("reduce_prod", {"X": randn(3, 4, 2)}, {"dim": [0, 2], "keep_dim": True}),
    Case("reduce_prod", {"X": randn(2, 3)}, {"reduce_all": True}),
    Case("reduce_prod", {"X": np.array([[0.0, 2.0, -1.5], [0.0, 0.0, 3.0], [1.2, 0.7, -0.4]])}, {"dim": [1]}),

    # cumsum
    Case("cumsum", {"X": randn(3, 4)}),
    Case("cumsum", {"X": randn(2, 3, 4)}, {"axis": 1, "exclusive": True}),
    Case("cumsum", {"X": randn(2, 3, 4)}, {"axis": 0, "reverse": True}),
    Case("cumsum", {"X": randn(3, 4)}, {"axis": -1, "exclusive": True, "reverse": True}),
    Case("cumsum", {"X": randn(2, 3, 2)}, {"flatten": True}),
    Case("cumsum", {"X": randn(2, 3)}, {"flatten": True, "reverse": True, "exclusive": True}),

    # where: Condition is not differentiable
    Case("where", {"Condition": r.random((3, 4)) > 0.5, "X": randn(3, 4), "Y": randn(3, 4)}),
    Case("where", {"Condition": r.random((2, 3, 4)) > 0.5, "X": randn(2, 3, 4), "Y": randn(4)}),
    Case("where", {"Condition": r.random((3, 1)) > 0.5, "X": randn(3, 4), "Y": randn(3, 4)}),

    # p_norm
    Case("p_norm", {"X": randn(3, 4)}),
    Case("p_norm", {"X": avoid(randn(3, 4), 0)}, {"porder": 1.0, "axis": 0, "keepdim": True}),
    Case("p_norm", {"X": randn(2, 3, 4)}, {"porder": 3.0, "axis": 1}),
    Case("p_norm", {"X": avoid(randn(2, 3, 2), 0)}, {"porder": 1.5, "asvector": True}),
    Case("p_norm", {"X": randn(2, 3)}, {"porder": 2.0, "asvector": True, "keepdim": True}),
    Case("p_norm", {"X": distinct(3, 4)}, {"porder": float("inf"), "axis": -1}),
    Case("p_norm", {"X": avoid(distinct(3, 4), 0)}, {"porder": float("-inf"), "axis": 0, "keepdim": True}),
    Case("p_norm", {"X": avoid(randn(3, 4), 0)}, {"porder": 0.0}),
]
