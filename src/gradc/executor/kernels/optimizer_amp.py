"""Kernels of gradc.ops.optimizer_amp: dynamic loss scaling as Paddle's CPU kernels do it for float32 and float64
gradients, and as its CUDA kernels do for float16 and bfloat16 ones (Paddle has no CPU kernel of either op for
them)."""

from __future__ import annotations

import numpy as np

from ...bfloat16 import round_to_bfloat16
from ...ir import VarType
from ...ops.optimizer_amp import check_one_value
from . import kernel

LOW_PRECISION = (VarType.FP16, VarType.BF16)


def fail(message: str):
    """A kernel's check of the values it got: the executor names the op and its inputs."""
    raise ValueError(message)


def plus_one(count: int, bits: int) -> int:
    """``count + 1`` in a C integer of ``bits`` bits: Paddle's counters wrap around at the top."""
    return (count + 1 + 2 ** (bits - 1)) % 2**bits - 2 ** (bits - 1)


def _check_one_value(k, *slots: str) -> None:
    check_one_value(k.op.input, lambda slot: np.shape(k.x(slot)), fail, *slots)


@kernel("check_finite_and_unscale")
def check_finite_and_unscale(k):
    """Out = X / Scale (times the reciprocal, in X's dtype) until the first X holding an inf or nan; from that
    one on Out = X * 0 (nan where X is inf or nan), and FoundInfinite is set. float16 / bfloat16 X (only a GPU runs
    them) as the CUDA kernel: Scale float32, every X unscaled in float32 and rounded, found where a result is not
    finite."""
    _check_one_value(k, "Scale")
    scale = np.asarray(k.x("Scale")).reshape(())
    found, outs = False, []
    for name, x in zip(k.op.input("X"), k.xs("X")):
        x = np.asarray(x)
        if not np.issubdtype(x.dtype, np.floating):
            fail(f"X is {x.dtype}, but check_finite_and_unscale unscales floating-point gradients")
        if k.block.find_var(name).dtype in LOW_PRECISION:
            out = _unscaled_on_gpu(x, scale, k.block.find_var(name).dtype)
            found = found or not np.isfinite(out).all()
            outs.append(out)
            continue
        if x.dtype != scale.dtype:
            fail(f"X is {x.dtype} but Scale is {scale.dtype}: Paddle's kernel reads both as one dtype")
        found = found or not np.isfinite(x).all()
        factor = x.dtype.type(0) if found else x.dtype.type(1.0 / np.float64(scale))
        with np.errstate(invalid="ignore"):   # inf * 0: Paddle's nan
            outs.append(x * factor)
    return {"Out": outs, "FoundInfinite": np.array([found])}


def _unscaled_on_gpu(x: np.ndarray, scale: np.ndarray, dtype: int) -> np.ndarray:
    """X * (1 / Scale) in float32, rounded to X's format (the CUDA kernel's MPType arithmetic)."""
    if scale.dtype != np.float32:
        fail(f"Scale is {scale.dtype}, but Paddle's CUDA kernel reads it as float32 for {x.dtype} X")
    with np.errstate(over="ignore", invalid="ignore"):
        value = x.astype(np.float32) * (np.float32(1) / scale)
        return round_to_bfloat16(value) if dtype == VarType.BF16 else value.astype(x.dtype)


@kernel("update_loss_scaling")
def update_loss_scaling(k):
    """A step with FoundInfinite zeroes every X. Then, unless stop_update (the StopUpdate tensor wins over the
    attribute): a bad step counts bad steps (the good count restarts) and the decr_every_n_nan_or_inf-th in a
    row multiplies the scale by decr_ratio (at least 1); a good step counts good steps and the
    incr_every_n_steps-th multiplies it by incr_ratio (unless that overflows to inf); either count restarts when
    it changes the scale. The attributes have no range: Paddle computes with whatever they hold."""
    _check_one_value(k, "FoundInfinite", "PrevLossScaling", "InGoodSteps", "InBadSteps")
    _check_loss_scaling_dtypes(k)
    found = bool(np.asarray(k.x("FoundInfinite")).reshape(()))
    xs = k.xs("X")
    outs = [np.zeros_like(x) for x in xs] if found else list(xs)
    prev = np.asarray(k.x("PrevLossScaling"))
    good, bad = int(np.asarray(k.x("InGoodSteps")).reshape(())), int(np.asarray(k.x("InBadSteps")).reshape(()))
    stop = k.optional("StopUpdate")
    if bool(np.asarray(stop).reshape(())) if stop is not None else k.attr("stop_update"):
        scale = prev
    else:
        scale = prev.reshape(())
        if found:
            good, bad = 0, plus_one(bad, 32)
            if bad == k.attr("decr_every_n_nan_or_inf"):
                scale, bad = max(scale * prev.dtype.type(k.attr("decr_ratio")), prev.dtype.type(1)), 0
        else:
            good, bad = plus_one(good, 32), 0
            if good == k.attr("incr_every_n_steps"):
                with np.errstate(over="ignore"):
                    grown = scale * prev.dtype.type(k.attr("incr_ratio"))
                scale, good = (grown if np.isfinite(grown) else scale), 0
        scale = np.asarray(scale, prev.dtype).reshape(prev.shape)

    def counter(value: int, slot: str):
        return np.full(np.shape(k.x(slot)), value, np.int32)

    return {"Out": outs, "LossScaling": scale, "OutGoodSteps": counter(good, "InGoodSteps"),
            "OutBadSteps": counter(bad, "InBadSteps")}


def _check_loss_scaling_dtypes(k) -> None:
    """Paddle's kernel reads the flag as bool, the counters as int32 and the scale in X's compute type (float64
    for float64 gradients, else float32): other dtypes are its errors, not values to convert."""
    xs = [np.asarray(x) for x in k.xs("X")]
    scale_dtype = np.float64 if xs and xs[0].dtype == np.float64 else np.float32
    for slot, dtype in (("FoundInfinite", np.bool_), ("InGoodSteps", np.int32), ("InBadSteps", np.int32),
                        ("PrevLossScaling", scale_dtype)):
        if np.asarray(k.x(slot)).dtype != dtype:
            fail(f"{slot} is {np.asarray(k.x(slot)).dtype}, but Paddle's kernel reads it as {np.dtype(dtype)}")


@kernel("memcpy")
def memcpy(k):
    """A copy to another device; gradc has one."""
    return {"Out": np.array(k.x("X"), copy=True)}
