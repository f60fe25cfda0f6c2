"""Rows: the unary math ops of the tensor API (gradc.ops.unary_math)."""

from __future__ import annotations

from . import row

UNARY = "x:X out_grad:Out@GRAD"      # grads that read the forward input
BY_OUT = "out:Out out_grad:Out@GRAD"  # grads that read the forward output
X_GRAD = "x_grad:X@GRAD"
BY_INPUT = ("log2", "log10", "log1p", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf")

ROWS = [
    *[row(f"pd_op.{name}", name, "x:X") for name in ("floor", "ceil", "trunc", "reciprocal", "expm1", *BY_INPUT)],
    row("pd_op.round", "round", "x:X", "out:Out", "decimals:i32"),
    row("pd_op.logit", "logit", "x:X", "out:Out", "eps:f64"),
    row("pd_op.stanh", "stanh", "x:X", "out:Out", "scale_a:f32 scale_b:f32"),
    # the rounding ops' grads read only out_grad; PIR's round_grad has no decimals (the grad is 0 for any)
    *[row(f"pd_op.{name}_grad", f"{name}_grad", "out_grad:Out@GRAD", X_GRAD) for name in ("floor", "ceil", "round",
                                                                                           "trunc")],
    *[row(f"pd_op.{name}_grad", f"{name}_grad", BY_OUT, X_GRAD) for name in ("reciprocal", "expm1")],
    *[row(f"pd_op.{name}_grad", f"{name}_grad", UNARY, X_GRAD) for name in BY_INPUT],
    row("pd_op.logit_grad", "logit_grad", UNARY, X_GRAD, "eps:f64"),
    row("pd_op.stanh_grad", "stanh_grad", UNARY, X_GRAD, "scale_a:f32 scale_b:f32"),
]
