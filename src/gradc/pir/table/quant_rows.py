"""Rows: fake quantization and the quantize/dequantize ops of quantized models (gradc.ops.quant). The moving-average
ops are the out-of-place forms (pd_op.fake_quantize_moving_average_abs_max, ...) that paddle._C_ops writes.
moving_average_abs_max_scale has no PIR backward (Paddle 3.3.1 refuses to differentiate it in PIR mode), but its
legacy grad straight_through_estimator_grad is a PIR op too. Paddle 3.3.1 runs pd_op.dequantize_linear with
quantize_linear's kernel (it quantizes X again, and refuses an int8 X); gradc dequantizes, as the legacy op does.
In test mode the quantizers' and observers' state results are left unnamed on export (without_unwritten_state)."""

from __future__ import annotations

from ...ir import VarType
from ...registry import OPS
from ..graph import TensorType
from . import row
from .grad_rows import X_GRAD

QUANT = "bit_length:i32=8 round_type:i32=1"
CHANNEL = QUANT + " quant_axis:i32"
MOVING = "moving_rate:f32=0.9 bit_length:i32=8 is_test:bool round_type:i32=1"
MOVING_IN = "x:X in_scale:InScale in_accum?:InAccum in_state?:InState"
MOVING_OUT = "out:Out out_scale:OutScale out_state:OutState out_accum:OutAccum"
LINEAR = ("quant_axis:i32 bit_length:i32=8 qmin:i32=-128 qmax:i32=127 round_type:i32 is_test:bool=true "
          "only_observer:bool")
STRAIGHT_THROUGH = "out_grad:Out@GRAD"
STATE_OUTPUTS = ("OutScale", "OutState", "OutAccum", "OutScales")


def _in_test_mode(legacy) -> bool:
    return bool(legacy.attrs.get("is_test", OPS[legacy.type].attrs.get("is_test", False)))


# the types of the state results the export leaves unnamed (Paddle allocates each)
UNNAMED_STATE_TYPES = {(op, result): TensorType("t_dtensor", VarType.FP32, (-1,) if result == "out_scales" else (1,))
                       for op in ("pd_op.fake_quantize_moving_average_abs_max",
                                  "pd_op.fake_quantize_dequantize_moving_average_abs_max",
                                  "pd_op.fake_quantize_range_abs_max", "pd_op.quantize_linear",
                                  "pd_op.moving_average_abs_max_scale")
                       for result in ("out_scale", "out_state", "out_accum", "out_scales")}


def without_unwritten_state(legacy, exporter):
    """In test mode an observer or quantizer takes its scale from InScale (or Scale) and writes no state: its state
    vars are parameters, read before it, and PIR has no in-place form of the op, so the export leaves those results
    unnamed (named, each was a second persistable value of a parameter, which no parameter file gives)."""
    if not _in_test_mode(legacy):
        return legacy
    copy = legacy.copy()
    for slot in STATE_OUTPUTS:
        copy.outputs.pop(slot, None)
    return copy


def channel_scales_kept(legacy, exporter):
    """In test mode it quantizes with the value OutScale's var holds, which a PIR program, where OutScale is a new
    value, cannot give it."""
    if _in_test_mode(legacy):
        raise exporter.fail("fake_channel_wise_quantize_abs_max in test mode quantizes with the scales its OutScale "
                            "var holds, which PIR cannot give an op's result: export as .pdmodel, or freeze the "
                            "program first (Paddle's QuantizationFreezePass)")
    return legacy

ROWS = [
    row("pd_op.fake_quantize_abs_max", "fake_quantize_abs_max", "x:X", "out:Out out_scale:OutScale", QUANT),
    row("pd_op.fake_quantize_dequantize_abs_max", "fake_quantize_dequantize_abs_max", "x:X",
        "out:Out out_scale:OutScale", QUANT),
    row("pd_op.fake_channel_wise_quantize_abs_max", "fake_channel_wise_quantize_abs_max", "x:X",
        "out:Out out_scale:OutScale", CHANNEL + " is_test:bool", back=channel_scales_kept),
    row("pd_op.fake_channel_wise_quantize_dequantize_abs_max", "fake_channel_wise_quantize_dequantize_abs_max", "x:X",
        "out:Out out_scale:OutScale", CHANNEL),
    row("pd_op.fake_quantize_moving_average_abs_max", "fake_quantize_moving_average_abs_max", MOVING_IN, MOVING_OUT,
        MOVING, back=without_unwritten_state),
    row("pd_op.fake_quantize_dequantize_moving_average_abs_max", "fake_quantize_dequantize_moving_average_abs_max",
        MOVING_IN, MOVING_OUT, MOVING, back=without_unwritten_state),
    row("pd_op.fake_quantize_range_abs_max", "fake_quantize_range_abs_max", "x:X in_scale:InScale iter?:Iter",
        "out:Out out_scale:OutScale out_scales:OutScales",
        "window_size:i32=10000 bit_length:i32=8 is_test:bool round_type:i32=1", back=without_unwritten_state),
    row("pd_op.fake_dequantize_max_abs", "fake_dequantize_max_abs", "x:X scale:Scale", "out:Out", "max_range:f32"),
    row("pd_op.fake_channel_wise_dequantize_max_abs", "fake_channel_wise_dequantize_max_abs", "x:X scales:Scales*",
        "out:Out", "quant_bits:i32s quant_axis:i32 x_num_col_dims:i32=1"),
    row("pd_op.quantize_linear", "quantize_linear",
        "x:X scale:Scale zero_point:ZeroPoint in_accum?:InAccum in_state?:InState",
        "y:Y out_state:OutState out_accum:OutAccum out_scale:OutScale", LINEAR, back=without_unwritten_state),
    # Paddle's dequantize_linear ignores the moving-average operands and results, which gradc's op lacks
    row("pd_op.dequantize_linear", "dequantize_linear", "x:X scale:Scale zero_point:ZeroPoint in_accum:- in_state:-",
        "y:Y out_state:- out_accum:- out_scale:-", LINEAR),
    row("pd_op.moving_average_abs_max_scale", "moving_average_abs_max_scale", "x:X in_accum?:InAccum in_state?:InState",
        "out:Out out_scale:OutScale out_state:OutState out_accum:OutAccum", "moving_rate:f32=0.9 is_test:bool",
        back=without_unwritten_state),
    row("pd_op.fake_quantize_dequantize_abs_max_grad", "fake_quantize_dequantize_abs_max_grad", STRAIGHT_THROUGH,
        X_GRAD, QUANT),
    row("pd_op.fake_channel_wise_quantize_dequantize_abs_max_grad",
        "fake_channel_wise_quantize_dequantize_abs_max_grad", STRAIGHT_THROUGH, X_GRAD, CHANNEL),
    row("pd_op.fake_quantize_dequantize_moving_average_abs_max_grad",
        "fake_quantize_dequantize_moving_average_abs_max_grad", STRAIGHT_THROUGH, X_GRAD, MOVING),
    row("pd_op.straight_through_estimator_grad", "straight_through_estimator_grad", STRAIGHT_THROUGH, X_GRAD),
]
