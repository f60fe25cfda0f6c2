"""Rows: complex tensors and paddle.fft (gradc.ops.complex_fft)."""

from __future__ import annotations

from . import row
from .grad_rows import UNARY, X_GRAD, XY_GRADS

FFT = "axes:i64s normalization:str forward:bool"

ROWS = [
    row("pd_op.complex", "complex", "x:X y:Y"),
    row("pd_op.real", "real", "x:X"),
    row("pd_op.imag", "imag", "x:X"),
    row("pd_op.angle", "angle", "x:X"),
    row("pd_op.as_complex", "as_complex", "x:X"),
    row("pd_op.as_real", "as_real", "x:X"),
    row("pd_op.fft_c2c", "fft_c2c", "x:X", "out:Out", FFT),
    row("pd_op.fft_r2c", "fft_r2c", "x:X", "out:Out", f"{FFT} onesided:bool"),
    row("pd_op.fft_c2r", "fft_c2r", "x:X", "out:Out", f"{FFT} last_dim_size:i64"),
    row("pd_op.complex_grad", "complex_grad", "x:X y:Y out_grad:Out@GRAD", XY_GRADS),
    row("pd_op.real_grad", "real_grad", "out_grad:Out@GRAD", X_GRAD),
    row("pd_op.imag_grad", "imag_grad", "out_grad:Out@GRAD", X_GRAD),
    row("pd_op.angle_grad", "angle_grad", UNARY, X_GRAD),
    row("pd_op.fft_c2c_grad", "fft_c2c_grad", "out_grad:Out@GRAD", X_GRAD, FFT),
    row("pd_op.fft_r2c_grad", "fft_r2c_grad", UNARY, X_GRAD, f"{FFT} onesided:bool"),
    row("pd_op.fft_c2r_grad", "fft_c2r_grad", "out_grad:Out@GRAD", X_GRAD, f"{FFT} last_dim_size:i64"),
]
