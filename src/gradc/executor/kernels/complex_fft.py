"""Kernels of gradc.ops.complex_fft. The transforms run in complex128 with numpy's unscaled fftn / ifftn and apply
the op's scale themselves (Paddle's scale depends on the pair normalization, forward); each result takes the input's
precision (complex64 <-> float32)."""

from __future__ import annotations

import numpy as np

from ...limits import check_shape
from ...ops.complex_fft import NORMALIZATIONS, c2r_length
from . import kernel
from .broadcast import unbroadcast

REAL_OF = {np.dtype(np.complex64): np.float32, np.dtype(np.complex128): np.float64}
COMPLEX_OF = {np.dtype(np.float32): np.complex64, np.dtype(np.float64): np.complex128}


def _complex(x: np.ndarray) -> np.ndarray:
    if x.dtype not in REAL_OF:
        raise ValueError(f"X must be complex64 or complex128, got {x.dtype}")
    return x


def _real(x: np.ndarray) -> np.ndarray:
    if x.dtype not in COMPLEX_OF:
        raise ValueError(f"X must be float32 or float64, got {x.dtype}")
    return x


@kernel("complex")
def complex_(k):
    x, y = _real(k.x("X")), _real(k.x("Y"))
    out = np.empty(np.broadcast_shapes(x.shape, y.shape), COMPLEX_OF[x.dtype])
    out.real, out.imag = x, y
    return {"Out": out}


@kernel("complex_grad", shape_only=("X", "Y"))
def complex_grad(k):
    dout = k.x("Out@GRAD")
    return {"X@GRAD": unbroadcast(dout.real, k.x("X").shape), "Y@GRAD": unbroadcast(dout.imag, k.x("Y").shape)}


kernel("real")(lambda k: {"Out": _complex(k.x("X")).real.copy()})
kernel("imag")(lambda k: {"Out": _complex(k.x("X")).imag.copy()})


@kernel("real_grad")
def real_grad(k):
    dout = k.x("Out@GRAD")
    return {"X@GRAD": dout.astype(COMPLEX_OF[dout.dtype])}


@kernel("imag_grad")
def imag_grad(k):
    dout = k.x("Out@GRAD")
    return {"X@GRAD": (1j * dout).astype(COMPLEX_OF[dout.dtype])}


@kernel("angle")
def angle(k):
    x = k.x("X")
    return {"Out": np.angle(x).astype(REAL_OF.get(x.dtype, x.dtype))}


@kernel("angle_grad")
def angle_grad(k):
    """d angle = (-Im dRe + Re dIm) / |z|^2; 0 at z = 0 and for a real X (piecewise constant), as Paddle gives."""
    x, dout = k.x("X"), k.x("Out@GRAD")
    if x.dtype not in REAL_OF:
        return {"X@GRAD": np.zeros_like(x)}
    squared = np.square(np.abs(x))
    safe = np.where(squared == 0, 1, squared)
    return {"X@GRAD": np.where(squared == 0, 0, dout * (1j * x) / safe).astype(x.dtype)}


@kernel("as_complex")
def as_complex(k):
    x = _real(k.x("X"))
    if x.ndim == 0 or x.shape[-1] != 2:
        raise ValueError(f"X's last dim must be 2 (real, imaginary), got shape {list(x.shape)}")
    return {"Out": x[..., 0] + 1j * x[..., 1]}


kernel("as_real")(lambda k: {"Out": np.stack([_complex(k.x("X")).real, k.x("X").imag], axis=-1)})


def _scale(normalization: str, forward: bool, size: int) -> float:
    """Paddle's factor on a transform over ``size`` points: 1/n on the scaled direction, 1/sqrt(n) with ortho."""
    if normalization not in NORMALIZATIONS:
        raise ValueError(f"normalization {normalization!r} must be one of {', '.join(NORMALIZATIONS)}")
    size = max(size, 1)   # a transform of no points has nothing to scale
    if normalization == "ortho":
        return 1 / np.sqrt(size)
    return 1.0 if forward == (normalization == "backward") else 1 / size


def _axes(k, x: np.ndarray) -> list[int]:
    axes = [int(axis) for axis in k.attr("axes")]
    if not axes or any(not -x.ndim <= axis < x.ndim for axis in axes):
        raise ValueError(f"axes {axes} must name axes of X (rank {x.ndim})")
    axes = [axis % x.ndim for axis in axes]
    if len(set(axes)) != len(axes):
        raise ValueError(f"axes {k.attr('axes')} repeat an axis")
    return axes


def c2c(x: np.ndarray, axes: list[int], forward: bool, scale: float) -> np.ndarray:
    """The unscaled DFT of ``x`` over ``axes`` (exponent e^-i when ``forward``), times ``scale``; of an empty ``x``
    zeros (Paddle's kernels give those, numpy refuses a transform over 0 points)."""
    if x.size == 0:
        return np.zeros(x.shape, np.complex128)
    spectrum = np.fft.fftn(x, axes=axes) if forward else np.fft.ifftn(x, axes=axes, norm="forward")
    return spectrum * scale


def c2r(x: np.ndarray, axes: list[int], forward: bool, scale: float, length: int) -> np.ndarray:
    """The real signal of ``length`` samples along axes[-1] whose half spectrum is ``x`` (its imaginary parts that a
    Hermitian spectrum cannot have are ignored), transformed over ``axes``, times ``scale``."""
    sizes = [x.shape[axis] for axis in axes[:-1]] + [length]
    if 0 in sizes:   # an axis of no points: zeros, as c2c gives (numpy refuses the transform)
        return np.zeros([length if axis == axes[-1] else n for axis, n in enumerate(x.shape)])
    # the e^-i transform of a real signal is the conjugate of the e^+i one of the conjugate spectrum
    return np.fft.irfftn(np.conj(x) if forward else x, s=sizes, axes=axes, norm="forward") * scale


def _size(shape, axes: list[int]) -> int:
    return int(np.prod([shape[axis] for axis in axes]))


def _transform_attrs(k):
    return k.attr("normalization"), bool(k.attr("forward"))


@kernel("fft_c2c")
def fft_c2c(k):
    x = _complex(k.x("X"))
    axes, (norm, forward) = _axes(k, x), _transform_attrs(k)
    return {"Out": c2c(x, axes, forward, _scale(norm, forward, _size(x.shape, axes))).astype(x.dtype)}


@kernel("fft_c2c_grad")
def fft_c2c_grad(k):
    dout = _complex(k.x("Out@GRAD"))
    axes, (norm, forward) = _axes(k, dout), _transform_attrs(k)
    return {"X@GRAD": c2c(dout, axes, not forward, _scale(norm, forward, _size(dout.shape, axes))).astype(dout.dtype)}


@kernel("fft_r2c")
def fft_r2c(k):
    x = _real(k.x("X"))
    axes, (norm, forward) = _axes(k, x), _transform_attrs(k)
    last = axes[-1]
    out = c2c(x, axes, forward, _scale(norm, forward, _size(x.shape, axes)))
    if k.attr("onesided"):
        half = x.shape[last] // 2 + 1
        if x.shape[last] == 0:   # Paddle's one-sided transform of 0 points: one zero entry
            out = np.zeros([*x.shape[:last], half, *x.shape[last + 1:]], out.dtype)
        out = np.take(out, np.arange(half), axis=last)
    return {"Out": out.astype(COMPLEX_OF[x.dtype])}


@kernel("fft_r2c_grad", shape_only=("X",))
def fft_r2c_grad(k):
    """The adjoint: the half spectrum's grad zero-padded to the full one, transformed back, its real part."""
    x, dout = k.x("X"), _complex(k.x("Out@GRAD"))
    axes, (norm, forward) = _axes(k, x), _transform_attrs(k)
    last, padding = axes[-1], [(0, 0)] * dout.ndim
    padding[last] = (0, x.shape[last] - dout.shape[last])
    full = np.pad(dout, padding)
    return {"X@GRAD": c2c(full, axes, not forward, _scale(norm, forward, _size(x.shape, axes))).real.astype(x.dtype)}


@kernel("fft_c2r")
def fft_c2r(k):
    x = _complex(k.x("X"))
    axes, (norm, forward) = _axes(k, x), _transform_attrs(k)
    length = c2r_length(x.shape[axes[-1]], int(k.attr("last_dim_size")))
    if length <= 0:
        raise ValueError(f"the signal would have {length} samples along axis {axes[-1]}: give last_dim_size")
    sizes = [x.shape[axis] for axis in axes[:-1]] + [length]
    check_shape([*x.shape[:axes[-1]], length, *x.shape[axes[-1] + 1:]], np.complex128, "fft_c2r's signal")
    return {"Out": c2r(x, axes, forward, _scale(norm, forward, int(np.prod(sizes))), length).astype(REAL_OF[x.dtype])}


@kernel("fft_c2r_grad")
def fft_c2r_grad(k):
    """The adjoint of fft_c2r: dOut's half spectrum transformed the other way, each entry that also stands for its
    mirror (0 < j < n / 2) doubled; entries of X past the half spectrum, which fft_c2r ignores, get 0. X's size
    along the last axis is its grad var's declared one (Paddle's too), else n // 2 + 1."""
    dout = _real(k.x("Out@GRAD"))
    axes, (norm, forward) = _axes(k, dout), _transform_attrs(k)
    last, length = axes[-1], dout.shape[axes[-1]]
    declared = k.block.find_var(k.op.output("X@GRAD")[0]).shape
    entries = declared[last] if declared and len(declared) == dout.ndim and declared[last] > 0 else length // 2 + 1
    check_shape([*dout.shape[:last], entries, *dout.shape[last + 1:]], np.complex128, "fft_c2r_grad's X@GRAD")
    spectrum = c2c(dout, axes, not forward, _scale(norm, forward, _size(dout.shape, axes)))
    index = np.arange(entries)
    factors = np.where(index < length // 2 + 1, np.where((index > 0) & (2 * index < length), 2.0, 1.0), 0.0)
    spectrum = np.take(spectrum, np.minimum(index, length - 1), axis=last)
    spectrum = spectrum * factors.reshape([-1] + [1] * (dout.ndim - 1 - last))
    return {"X@GRAD": spectrum.astype(COMPLEX_OF[dout.dtype])}
