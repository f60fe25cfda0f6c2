"""Ops that show values while a program runs: print (paddle.static.Print: In passed through to Out and printed as
Paddle prints it; its grad op passes and prints the gradient) and check_numerics (paddle.amp.debugging's: the
counts of NaN, Inf and zero in a tensor and its max, min and mean, an error on NaN or Inf at level 0)."""

from __future__ import annotations

from ..ir import VarType
from ..registry import NO_GRAD, defop

PRINT_PHASES = ("FORWARD", "BACKWARD", "BOTH")
CHECK_LEVELS = range(4)   # Paddle's DebugMode: abort on NaN/Inf, report it, report overflow too, report every tensor


def _print_infer(ctx):
    if str(ctx.attr("print_phase")).upper() not in PRINT_PHASES:
        ctx.fail(f"print_phase {ctx.attr('print_phase')!r} is not one of {', '.join(PRINT_PHASES)}")
    return {"Out": (ctx.shape("In"), ctx.dtype("In"))}


def _print_grad(g):
    """The gradient passes through a print of its own, which shows it in the BACKWARD and BOTH phases."""
    return [g.op("print", {"In": g.OG("Out")}, {"Out": g.IG("In")}, {"is_forward": False}, forward_attrs=True)]


defop("print", ["In"], ["Out"], attrs={
    "first_n": -1, "message": "", "summarize": 20, "print_tensor_name": True, "print_tensor_type": True,
    "print_tensor_shape": True, "print_tensor_layout": True, "print_tensor_lod": True, "print_phase": "BOTH",
    "is_forward": True}, infer=_print_infer, grad=_print_grad)


def _check_numerics_infer(ctx):
    if ctx.attr("check_nan_inf_level") not in CHECK_LEVELS:
        ctx.fail(f"check_nan_inf_level {ctx.attr('check_nan_inf_level')} is out of range: it must be 0 to 3")
    return {"stats": ([3], VarType.INT64), "values": ([3], VarType.FP32)}


# stats = [NaNs, Infs, zeros], values = [max, min, mean] (float32 whatever the tensor's type), as Paddle's kernel
defop("check_numerics", ["tensor"], ["stats", "values"], attrs={
    "check_nan_inf_level": 0, "op_type": "", "var_name": "", "output_dir": "", "stack_height_limit": -1},
    infer=_check_numerics_infer, grad=NO_GRAD)
