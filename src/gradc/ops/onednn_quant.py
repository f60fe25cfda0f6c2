"""The int8 ops Paddle's oneDNN quantization passes write (cpu_quantize_pass after quant_dequant_mkldnn_pass, with
a Predictor's enable_mkldnn_int8; PIR: onednn_op.quantize / dequantize / requantize). Each is one oneDNN reorder in
float32 arithmetic, rounded to nearest (ties to even) and saturated to the output type:

- quantize (Input float32 -> Output): Input * Scale + shift, where shift is Shift truncated to an integer (the
  kernel's static_cast; 0..255). Output is int8 when is_negative_input and shift is 0, else uint8; with bfloat16 it
  is Input * Scale rounded to bfloat16 (shift unused). output_format names a layout: values do not depend on it.
- dequantize (Input int8 / uint8 / bfloat16 -> Output float32): (Input - shift) * (1 / Scale), shift Shift
  truncated; the reorder multiplies by the reciprocal, so results can differ from a division in the last bit.
- requantize (Input int8 / uint8 -> Output): Input * (1 / r) + zero, r = Scale_in / Scale_out (float32), zero =
  clip(round-half-away(Shift_out - Shift_in / r), 0, 255) when either shift is nonzero (then Output is uint8), else
  0 and Output keeps Input's type. The input's zero point is folded into the output's as one integer clipped at 0,
  so a requantize whose Shift_in / r exceeds Shift_out, or whose folded shift is not an integer, is off by that
  much from (Input - Shift_in) Scale_out / Scale_in + Shift_out: Paddle's kernel's result, which gradc gives
  (docs/inference-optimized.md). A nonzero Shift_in needs a uint8 Input (Paddle refuses a signed one).

No gradient: integer outputs (Paddle defines none).
"""

from __future__ import annotations

from ..errors import GradError
from ..ir import VarType
from ..registry import NO_GRAD, defop

QUANTIZED = (VarType.INT8, VarType.UINT8)


def refuse_int8_grad(g) -> None:
    """An op Paddle's int8 passes marked (mkldnn_data_type int8) runs oneDNN's int8 kernel: no gradient."""
    if g.fwd.attrs.get("mkldnn_data_type") == "int8":
        raise GradError(f"{g.fwd.type} with mkldnn_data_type int8 is oneDNN's int8 kernel (written by Paddle's int8 "
                        f"passes), which has no gradient: Paddle defines none. Differentiate the float32 program")


def int8_fc_dtype(ctx) -> VarType:
    """The Out type of oneDNN's int8 fc: float32 with force_fp32_output, else uint8 after a relu, else int8."""
    if ctx.attr("force_fp32_output"):
        return VarType.FP32
    return VarType.UINT8 if ctx.attr("activation_type") == "relu" else VarType.INT8


def quantize_shift(shift: float) -> int:
    """The kernels' integer zero point: the float attribute truncated toward zero (C's static_cast<int32_t>)."""
    return int(shift)


def _check_shift(ctx, name: str, value: int) -> None:
    if not 0 <= value <= 255:
        ctx.fail(f"{name} {ctx.attr(name)} must lie in [0, 255] (a uint8 zero point)")


def quantize_dtype(is_negative_input: bool, shift: int, bfloat16: bool) -> VarType:
    """quantize's Output type: the kernel picks it from the attributes, whatever the program declares."""
    if bfloat16:
        return VarType.BF16
    return VarType.INT8 if is_negative_input and shift == 0 else VarType.UINT8


def _quantize_infer(ctx):
    if ctx.dtype("Input") != VarType.FP32:
        ctx.fail(f"Input must be float32 (Paddle's oneDNN quantize kernel takes no other), got "
                 f"{ctx.dtype('Input').name}")
    if ctx.attr("Scale") == 0:
        ctx.fail("Scale must be nonzero")
    shift = quantize_shift(ctx.attr("Shift"))
    _check_shift(ctx, "Shift", shift)
    dtype = quantize_dtype(ctx.attr("is_negative_input"), shift, ctx.attr("bfloat16"))
    return {"Output": (ctx.shape("Input"), dtype)}


def _dequantize_infer(ctx):
    if ctx.dtype("Input") not in (*QUANTIZED, VarType.BF16):
        ctx.fail(f"Input must be int8, uint8 or bfloat16, got {ctx.dtype('Input').name}")
    if ctx.attr("Scale") == 0:
        ctx.fail("Scale must be nonzero")
    _check_shift(ctx, "Shift", quantize_shift(ctx.attr("Shift")))
    return {"Output": (ctx.shape("Input"), VarType.FP32)}


def requantize_shifted(ctx) -> bool:
    return ctx.attr("Shift_in") != 0 or ctx.attr("Shift_out") != 0


def _requantize_infer(ctx):
    dtype = ctx.dtype("Input")
    if dtype not in QUANTIZED:
        ctx.fail(f"Input must be int8 or uint8, got {dtype.name}")
    if ctx.attr("Scale_in") == 0 or ctx.attr("Scale_out") == 0:
        ctx.fail(f"Scale_in {ctx.attr('Scale_in')} and Scale_out {ctx.attr('Scale_out')} must be nonzero")
    if ctx.attr("Shift_in") != 0 and dtype != VarType.UINT8:
        ctx.fail(f"a nonzero Shift_in ({ctx.attr('Shift_in')}) needs a uint8 Input (Paddle's kernel refuses a "
                 f"signed one), got {dtype.name}")
    return {"Output": (ctx.shape("Input"), VarType.UINT8 if requantize_shifted(ctx) else dtype)}


# the program's declaration of Output is not the type: cpu_quantize_pass declares its new vars without one (BOOL)
defop("quantize", ["Input"], ["Output"], attrs={"Scale": 1.0, "Shift": 0.0, "is_negative_input": False,
                                                "output_format": "NHWC", "bfloat16": False},
      infer=_quantize_infer, grad=NO_GRAD, kernel_dtype_outputs=["Output"])
defop("dequantize", ["Input"], ["Output"], attrs={"Scale": 1.0, "Shift": 0.0}, infer=_dequantize_infer,
      grad=NO_GRAD, kernel_dtype_outputs=["Output"])
# Paddle's proto defaults both shifts to 1 (a shifted uint8 requantize); its passes always write them
defop("requantize", ["Input"], ["Output"], attrs={"Scale_in": 1.0, "Scale_out": 1.0, "Shift_in": 1.0,
                                                  "Shift_out": 1.0},
      infer=_requantize_infer, grad=NO_GRAD, kernel_dtype_outputs=["Output"])
