"""Rows: the binary math ops of the tensor API (gradc.ops.binary_math)."""

from __future__ import annotations

from . import row
from .hooks import tolerances_as_text

XY = "x:X y:Y out_grad:Out@GRAD"
XY_GRADS = "x_grad:X@GRAD y_grad:Y@GRAD"
DIAGONAL = "offset:i64 dim1:i32 dim2:i32"


# PIR passes the tolerances as float64 tensors: a constant becomes the attribute, a computed one the Rtol/Atol slot
TOLERANCES = "x:Input y:Other rtol>rtol:double@Rtol atol>atol:double@Atol"

ROWS = [
    row("pd_op.atan2", "atan2", "x:X1 y:X2"),
    row("pd_op.fmax", "elementwise_fmax", "x:X y:Y"),
    row("pd_op.fmin", "elementwise_fmin", "x:X y:Y"),
    row("pd_op.heaviside", "elementwise_heaviside", "x:X y:Y"),
    row("pd_op.lerp", "lerp", "x:X y:Y weight:Weight"),
    row("pd_op.copysign", "copysign", "x:x y:y", "out:out"),
    row("pd_op.masked_fill", "masked_fill", "x:x mask:mask value:value", "out:out"),
    row("pd_op.isnan", "isnan_v2", "x:X"),
    row("pd_op.isinf", "isinf_v2", "x:X"),
    row("pd_op.isfinite", "isfinite_v2", "x:X"),
    row("pd_op.isclose", "isclose", TOLERANCES, "out:Out", "equal_nan:bool", hook=tolerances_as_text),
    row("pd_op.allclose", "allclose", TOLERANCES, "out:Out", "equal_nan:bool", hook=tolerances_as_text),
    row("pd_op.bitwise_not", "bitwise_not", "x:X"),
    row("pd_op.conj", "conj", "x:X"),
    row("pd_op.fill_diagonal_tensor", "fill_diagonal_tensor", "x:X y:Y", "out:Out", DIAGONAL),
    # grads
    row("pd_op.atan2_grad", "atan2_grad", "x:X1 y:X2 out_grad:Out@GRAD", "x_grad:X1@GRAD y_grad:X2@GRAD"),
    row("pd_op.fmax_grad", "elementwise_fmax_grad", XY, XY_GRADS),
    row("pd_op.fmin_grad", "elementwise_fmin_grad", XY, XY_GRADS),
    row("pd_op.heaviside_grad", "elementwise_heaviside_grad", XY, XY_GRADS),
    row("pd_op.lerp_grad", "lerp_grad", "x:X y:Y weight:Weight out:Out out_grad:Out@GRAD", XY_GRADS),
    row("pd_op.copysign_grad", "copysign_grad", "x:x y:y out_grad:out@GRAD", "x_grad:x@GRAD y_grad:y@GRAD"),
    row("pd_op.masked_fill_grad", "masked_fill_grad", "x:x mask:mask value:value out_grad:out@GRAD",
        "x_grad:x@GRAD value_grad:value@GRAD"),
    row("pd_op.fill_diagonal_tensor_grad", "fill_diagonal_tensor_grad", "out_grad:Out@GRAD", "x_grad:X@GRAD",
        DIAGONAL),
]
