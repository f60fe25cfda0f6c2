"""Elementwise unary math of the tensor API (paddle.floor, paddle.log1p, paddle.asinh, paddle.logit, ...).
Each `<type>_grad` reads the forward slot Paddle's reads: Out where the derivative is a function of the output
(reciprocal, expm1), X otherwise, nothing but Out@GRAD for the rounding ops.

The rounding ops are piecewise constant: their grads are zero, and Paddle 3.3.1 still emits the grad ops. They
take integers too; the others take float X only: Paddle 3.3.1 registers no integer kernel for them (only its
dygraph API casts integers to float32 first).
Their attributes take every value (round's decimals, logit's eps, stanh's scales), as Paddle's kernels do.

Where Paddle 3.3.1 is wrong: asinh_grad and acosh_grad square x in float32, which overflows past |x| = 1.8e19,
and give 0 there; gradc's are 1 / |x| (the kernels' factored forms, gradc.executor.kernels.unary_math).
"""

from __future__ import annotations

from .activation import activation
from .infer import float_like

# piecewise constant: the grad op reads only Out@GRAD
activation("floor")
activation("ceil")
activation("round", attrs={"decimals": 0})   # to `decimals` digits after the point, ties to even
activation("trunc")

# derivatives written with the output: d/dx 1/x = -out^2, d/dx expm1(x) = out + 1
activation("reciprocal", "Out", infer=float_like())
activation("expm1", "Out", infer=float_like())

activation("log2", "X", infer=float_like())
activation("log10", "X", infer=float_like())
activation("log1p", "X", infer=float_like())
activation("tan", "X", infer=float_like())
activation("asin", "X", infer=float_like())
activation("acos", "X", infer=float_like())
activation("atan", "X", infer=float_like())
activation("sinh", "X", infer=float_like())
activation("cosh", "X", infer=float_like())
activation("asinh", "X", infer=float_like())
activation("acosh", "X", infer=float_like())
activation("atanh", "X", infer=float_like())
activation("erf", "X", infer=float_like())
activation("logit", "X", attrs={"eps": 1e-6}, infer=float_like())   # log(x / (1 - x)) of x clipped to [eps, 1 - eps]
activation("stanh", "X", attrs={"scale_a": 0.67, "scale_b": 1.7159}, infer=float_like())   # scale_b tanh(scale_a x)
