"""Complex tensors and the discrete Fourier transform (paddle.fft, paddle.signal.stft, paddle.audio's features).

complex(X, Y) = X + iY (broadcast); real, imag, angle (atan2(Im, Re)) and as_real ([..., 2]) read a complex X,
as_complex its inverse. fft_c2c, fft_r2c and fft_c2r transform X over ``axes``: ``forward`` picks the sign of the
exponent (e^-i: forward), ``normalization`` the scale: "backward" scales the inverse by 1/n, "forward" the forward
transform, "ortho" both by 1/sqrt(n) (n: the signal's size over the axes). fft_r2c keeps only the n // 2 + 1 first
entries of the last axis with ``onesided``; fft_c2r reads such a half spectrum as Hermitian and gives a real signal
of ``last_dim_size`` samples along the last axis (0: 2 * (m - 1) from m entries).

The gradient of a complex var, as Paddle defines it: for a real loss L, z@GRAD = dL/dRe(z) + i dL/dIm(z). The grad
of a linear map is then its adjoint: each fft grad op is the transform the other way with the same scale (on the
half spectrum of fft_r2c zero-padded, and of fft_c2r with the entries whose mirror it stands for doubled).
"""

from __future__ import annotations

from ..ir import FLOAT_DTYPES, AttrType, VarType, dtype_name
from ..opdef import typed
from ..registry import defop, grad_op
from .infer import broadcast_shapes, one_dtype

NORMALIZATIONS = ("backward", "forward", "ortho")
COMPLEX_OF = {VarType.FP32: VarType.COMPLEX64, VarType.FP64: VarType.COMPLEX128}
REAL_OF = {complex_: real for real, complex_ in COMPLEX_OF.items()}


def _complex_x(ctx, slot: str = "X"):
    """The complex dtype of ``slot`` (None: not declared yet); fails on a real one."""
    dtype = ctx.dtype(slot)
    if dtype is not None and dtype not in REAL_OF:
        ctx.fail(f"{ctx.op.type} needs a complex {slot}, got {dtype_name(dtype)}")
    return dtype


def _real_x(ctx, slot: str = "X"):
    dtype = ctx.dtype(slot)
    if dtype is not None and dtype not in COMPLEX_OF:
        ctx.fail(f"{ctx.op.type} needs a float32 or float64 {slot}, got {dtype_name(dtype)}")
    return dtype


def _complex_infer(ctx):
    dtype = one_dtype(ctx, "X", "Y")
    _real_x(ctx, "X")
    x, y = ctx.shape("X"), ctx.shape("Y")
    shape = None if x is None or y is None else broadcast_shapes(ctx, x, y)
    return {"Out": (shape, COMPLEX_OF.get(dtype))}


def _part_infer(ctx):
    """real, imag, angle: a real Out shaped like X (angle of a real X: 0 or pi)."""
    dtype = ctx.dtype("X")
    if ctx.op.type != "angle":
        _complex_x(ctx)
    elif dtype is not None and dtype not in FLOAT_DTYPES and dtype not in REAL_OF:
        ctx.fail(f"angle needs a float or complex X, got {dtype_name(dtype)}")
    return {"Out": (ctx.shape("X"), REAL_OF.get(dtype, dtype))}


def _as_complex_infer(ctx):
    dtype, x = _real_x(ctx), ctx.shape("X")
    if x is not None and (not x or x[-1] not in (2, -1)):
        ctx.fail(f"as_complex needs X's last dim to be 2 (real, imaginary), got shape {x}")
    return {"Out": (None if x is None else x[:-1], COMPLEX_OF.get(dtype))}


def _as_real_infer(ctx):
    dtype, x = _complex_x(ctx), ctx.shape("X")
    return {"Out": (None if x is None else [*x, 2], REAL_OF.get(dtype))}


def fft_axes(ctx) -> list[int]:
    """The op's axes made non-negative, after checking them and its normalization."""
    if ctx.attr("normalization") not in NORMALIZATIONS:
        ctx.fail(f"normalization {ctx.attr('normalization')!r} must be one of {', '.join(NORMALIZATIONS)}")
    axes, x = list(ctx.attr("axes")), ctx.shape("X")
    if not axes:
        ctx.fail("axes must name at least one axis")
    if x is None:
        return axes
    axes = [ctx.axis(axis, len(x)) for axis in axes]
    if len(set(axes)) != len(axes):
        ctx.fail(f"axes {ctx.attr('axes')} repeat an axis")
    return axes


def _c2c_infer(ctx):
    fft_axes(ctx)
    return {"Out": (ctx.shape("X"), _complex_x(ctx))}


def _r2c_infer(ctx):
    axes, x, dtype = fft_axes(ctx), ctx.shape("X"), _real_x(ctx)
    if x is None:
        return {"Out": (None, COMPLEX_OF.get(dtype))}
    out = list(x)
    if ctx.attr("onesided") and x[axes[-1]] >= 0:
        out[axes[-1]] = x[axes[-1]] // 2 + 1
    return {"Out": (out, COMPLEX_OF.get(dtype))}


def c2r_length(half: int, last_dim_size: int) -> int:
    """The real signal's length along the last axis from a half spectrum of ``half`` entries (-1: unknown)."""
    return last_dim_size if last_dim_size > 0 else -1 if half < 0 else 2 * (half - 1)


def _c2r_infer(ctx):
    axes, x, dtype = fft_axes(ctx), ctx.shape("X"), _complex_x(ctx)
    if ctx.attr("last_dim_size") < 0:
        ctx.fail(f"last_dim_size {ctx.attr('last_dim_size')} must be >= 0 (0: from X's last axis)")
    if x is None:
        return {"Out": (None, REAL_OF.get(dtype))}
    out = list(x)
    out[axes[-1]] = c2r_length(x[axes[-1]], ctx.attr("last_dim_size"))
    if out[axes[-1]] == 0:
        ctx.fail(f"X's last fft axis {axes[-1]} has 1 entry: give last_dim_size for the signal's length")
    return {"Out": (out, REAL_OF.get(dtype))}


def _as_complex_grad(g):
    """as_complex and as_real are each other's adjoints: Paddle's makers emit the other op on dOut."""
    return [g.op("as_real", {"X": g.OG("Out")}, {"Out": g.IG("X")})]


def _as_real_grad(g):
    return [g.op("as_complex", {"X": g.OG("Out")}, {"Out": g.IG("X")})]


FFT_ATTRS = {"axes": typed([0], AttrType.LONGS), "normalization": "backward", "forward": True}

defop("complex", ["X", "Y"], infer=_complex_infer, grad=grad_op("X", "Y"))
defop("real", ["X"], infer=_part_infer, grad=grad_op())
defop("imag", ["X"], infer=_part_infer, grad=grad_op())
defop("angle", ["X"], infer=_part_infer, grad=grad_op("X"))
defop("as_complex", ["X"], infer=_as_complex_infer, grad=_as_complex_grad)
defop("as_real", ["X"], infer=_as_real_infer, grad=_as_real_grad)
defop("fft_c2c", ["X"], attrs=FFT_ATTRS, infer=_c2c_infer, grad=grad_op())
defop("fft_r2c", ["X"], attrs={**FFT_ATTRS, "onesided": True}, infer=_r2c_infer, grad=grad_op("X"))
defop("fft_c2r", ["X"], attrs={**FFT_ATTRS, "last_dim_size": typed(0, AttrType.LONG)}, infer=_c2r_infer, grad=grad_op())
