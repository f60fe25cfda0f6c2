"""More normalisation ops: instance_norm (InstanceNorm1D/2D/3D), spectral_norm (nn.SpectralNorm) and lrn (the
legacy local response normalisation op; nn.LocalResponseNorm is built from pad3d, pool and pow instead).

instance_norm normalises each (sample, channel) over its spatial cells; SavedMean and SavedVariance
(1 / sqrt(var + eps), as batch_norm's) are [N * C]. spectral_norm divides Weight by its largest singular
value, estimated by power_iters rounds of power iteration from U and V (vectors of the sizes of Weight's
dim and of the other dims); the grad is the derivative of Out through the iteration (U and V are inputs
without a gradient). Paddle's spectral_norm_grad is another formula, wrong even once the iteration converged.
"""

from __future__ import annotations

from ..registry import defop, grad_op
from ..shapes import numel
from .nn import stats_dtype


# ---------------------------------------------------------------- instance_norm
def _instance_norm_infer(ctx):
    x, dtype = ctx.shape("X"), ctx.dtype("X")
    if not 2 <= len(x) <= 5:
        ctx.fail(f"X must have rank 2 to 5 (N, C, ...), got shape {x}")
    for slot in ("Scale", "Bias"):
        if ctx.has(slot) and (len(ctx.shape(slot)) != 1 or x[1] >= 0 and ctx.shape(slot)[0] != x[1]):
            ctx.fail(f"{slot} must be a vector of X's {x[1]} channels, got shape {ctx.shape(slot)}")
    stats = ([-1 if x[0] < 0 or x[1] < 0 else x[0] * x[1]], stats_dtype(dtype))
    return {"Y": (x, dtype), "SavedMean": stats, "SavedVariance": stats}


defop("instance_norm", ["X", "Scale?", "Bias?"], ["Y", "SavedMean!", "SavedVariance!"], attrs={"epsilon": 1e-5},
      no_grad_outputs=["SavedMean", "SavedVariance"], infer=_instance_norm_infer,
      grad=grad_op("X", "Scale", "Bias", "SavedMean", "SavedVariance"))


# ---------------------------------------------------------------- spectral_norm
def spectral_sizes(shape, dim: int):
    """(rows, columns) of Weight as the matrix power iteration works on: its dim against all the others."""
    if not 2 <= len(shape) <= 5:
        raise ValueError(f"Weight must have rank 2 to 5, got shape {list(shape)}")
    if not 0 <= dim < len(shape):
        raise ValueError(f"dim {dim} is out of range for Weight of rank {len(shape)}")
    return shape[dim], numel([d for i, d in enumerate(shape) if i != dim])


def _spectral_norm_infer(ctx):
    weight = ctx.shape("Weight")
    try:
        rows, cols = spectral_sizes(weight, ctx.attr("dim"))
    except ValueError as err:
        ctx.fail(str(err))
    if ctx.attr("power_iters") < 0:
        ctx.fail(f"power_iters must be >= 0, got {ctx.attr('power_iters')}")
    for slot, size in (("U", rows), ("V", cols)):
        if ctx.shape(slot) is not None and (len(ctx.shape(slot)) != 1 or size >= 0 and ctx.shape(slot)[0] != size):
            ctx.fail(f"{slot} must be a vector of {size} values for Weight {weight} and dim {ctx.attr('dim')}, "
                     f"got shape {ctx.shape(slot)}")
    return {"Out": (weight, ctx.dtype("Weight"))}


defop("spectral_norm", ["Weight", "U", "V"], attrs={"dim": 0, "power_iters": 1, "eps": 1e-12},
      no_grad_inputs=["U", "V"], infer=_spectral_norm_infer, grad=grad_op("Weight", "U", "V"))


# ---------------------------------------------------------------- lrn
def _lrn_infer(ctx):
    x, dtype = ctx.shape("X"), ctx.dtype("X")
    if len(x) != 4:
        ctx.fail(f"X must be 4-D, got shape {x}")
    if ctx.attr("n") < 1 or ctx.attr("n") % 2 == 0:
        ctx.fail(f"n must be a positive odd number, got {ctx.attr('n')}")
    for name in ("k", "alpha", "beta"):
        if ctx.attr(name) <= 0:
            ctx.fail(f"{name} must be > 0, got {ctx.attr(name)}")
    if ctx.attr("data_format") not in ("AnyLayout", "NCHW", "NHWC"):
        ctx.fail(f"data_format {ctx.attr('data_format')!r} is not NCHW or NHWC")
    return {"Out": (x, dtype), "MidOut": (x, dtype)}


# MidOut = k + alpha * (sum of x^2 over the n channels around each); Out = X * MidOut^-beta
defop("lrn", ["X"], ["Out", "MidOut"],
      attrs={"n": 5, "k": 2.0, "alpha": 1e-4, "beta": 0.75, "data_format": "AnyLayout"},
      no_grad_outputs=["MidOut"], infer=_lrn_infer, grad=grad_op("X", "Out", "MidOut"))
