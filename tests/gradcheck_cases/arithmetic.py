"""Cases for scale's ScaleTensor and BiasTensor, elementwise_mod (Paddle's remainder_grad), increment,
and bilinear_tensor_product (nn.Bilinear)."""

import numpy as np

from . import Case, rng

r = rng(23)


def randn(*shape, scale=1.0):
    return scale * r.standard_normal(shape)


def mod_operands(shape, y_shape=None):
    """X and Y whose quotient stays 0.2 or more away from an integer (where x mod y jumps)."""
    y = r.choice([-1, 1], y_shape or shape) * r.uniform(0.5, 2.0, y_shape or shape)
    quotient = r.integers(-3, 4, shape) + r.uniform(0.2, 0.8, shape)
    return quotient * y, y


X_MOD, Y_MOD = mod_operands((3, 4))
X_MOD_B, Y_MOD_B = mod_operands((2, 3, 4), (3, 1))

CASES = [
    Case("scale", {"X": randn(3, 4), "ScaleTensor": np.array([-1.5])}, {"scale": 4.0, "bias": 0.5}),
    Case("scale", {"X": randn(2, 3), "ScaleTensor": np.array([2.5]), "BiasTensor": np.array([3.0])},
         {"bias_after_scale": False}),
    Case("scale", {"X": randn(2, 3), "BiasTensor": np.array([-2.0])}, {"scale": 0.5}),
    Case("elementwise_mod", {"X": X_MOD, "Y": Y_MOD}),
    Case("elementwise_mod", {"X": X_MOD_B, "Y": Y_MOD_B}),
    Case("elementwise_mod", {"X": X_MOD_B, "Y": Y_MOD_B[:, 0]}, {"axis": 1}),
    Case("increment", {"X": randn(1)}, {"step": 2.5}),
    Case("increment", {"X": np.array(0.5)}, {"step": -1.0}),
    Case("bilinear_tensor_product", {"X": randn(2, 3), "Y": randn(2, 4), "Weight": randn(5, 3, 4)}),
    Case("bilinear_tensor_product", {"X": randn(3, 2), "Y": randn(3, 2), "Weight": randn(1, 2, 2),
                                     "Bias": randn(1, 1)}),
    Case("bilinear_tensor_product", {"X": randn(4, 3), "Y": randn(4, 1), "Weight": randn(2, 3, 1),
                                     "Bias": randn(1, 2)}),
]
