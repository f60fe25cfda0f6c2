"""Rows: paddle.nn.quant's fake-quantization layers and the quantize/dequantize ops of quantized (QAT, int8) models.

The layers (paddle.nn.quant.quant_layers) write the fake quantize-dequantize ops of quantization-aware training;
the other ops are appended as Paddle's QAT passes and int8 exports write them (legacy_shim), with their scale and
moving-average state fed as inputs. Each layer row uses one layer: Paddle names every layer's output
`<input>.quantized.dequantized`, so two layers on one input would write one var."""

import re

import numpy as np
import paddle
from paddle.nn.quant import quant_layers as q

from .legacy_shim import _outputs
from .spec import Input, const, f, given, table

QUANT, MOVING = (("bit_length", 8), ("round_type", 1)), (("moving_rate", 0.9), ("bit_length", 8), ("is_test", False),
                                                         ("round_type", 1))
LINEAR = (("quant_axis", 0), ("bit_length", 8), ("qmin", -128), ("qmax", 127), ("round_type", 0), ("is_test", True),
          ("only_observer", False))
# paddle._C_ops' signatures (PIR mode): operands, results, attributes with defaults, each in PIR order
PIR = {
    "fake_quantize_abs_max": ("x", "out out_scale", QUANT),
    "fake_quantize_dequantize_abs_max": ("x", "out out_scale", QUANT),
    "fake_channel_wise_quantize_abs_max": ("x", "out out_scale", QUANT + (("quant_axis", 0), ("is_test", False))),
    "fake_channel_wise_quantize_dequantize_abs_max": ("x", "out out_scale", QUANT + (("quant_axis", 0),)),
    "fake_quantize_moving_average_abs_max": ("x in_scale in_accum in_state", "out out_scale out_state out_accum",
                                             MOVING),
    "fake_quantize_dequantize_moving_average_abs_max": ("x in_scale in_accum in_state",
                                                        "out out_scale out_state out_accum", MOVING),
    "fake_quantize_range_abs_max": ("x in_scale iter", "out out_scale out_scales",
                                    (("window_size", 10000), ("bit_length", 8), ("is_test", False), ("round_type", 1))),
    "fake_dequantize_max_abs": ("x scale", "out", (("max_range", 127.0),)),
    "fake_channel_wise_dequantize_max_abs": ("x scales", "out", (("quant_bits", [8]), ("quant_axis", 0),
                                                                  ("x_num_col_dims", 1))),
    "quantize_linear": ("x scale zero_point in_accum in_state", "y out_state out_accum out_scale", LINEAR),
    "dequantize_linear": ("x scale zero_point in_accum in_state", "y out_state out_accum out_scale", LINEAR),
    "moving_average_abs_max_scale": ("x in_accum in_state", "out out_scale out_state out_accum",
                                     (("moving_rate", 0.9), ("is_test", False))),
    "dequantize_abs_max": ("x scale", "out", (("max_range", 127.0),)),
    "dequantize_log": ("x dict", "out", ()),
}


def _snake(slot: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", slot).lower()


def _op(op_type: str, inputs: dict, attrs: dict, outputs: tuple[str, ...] = ("Out", "OutScale"), returned: int = 2):
    """Append a quantization op writing ``outputs`` (float vars like its X); the first ``returned`` of them are
    the row's result. Ops PIR cannot differentiate (the quantize-only and dequantize ops, quantize_linear, and
    moving_average_abs_max_scale) take undifferentiated inputs in their rows. In PIR mode (where legacy ops
    cannot be appended) paddle._C_ops writes the pd_op."""
    if paddle.framework.in_pir_mode():
        operands, results, defaults = PIR[op_type]
        given_inputs = {_snake(slot): value for slot, value in inputs.items()}
        if op_type.endswith("quantize_linear"):   # PIR's needs the state, which Paddle's LinearQuanter passes as zeros
            given_inputs = {"in_accum": paddle.zeros([1]), "in_state": paddle.zeros([1]), **given_inputs}
        made = getattr(paddle._C_ops, op_type)(*[given_inputs.get(name) for name in operands.split()],
                                               *[attrs.get(name, default) for name, default in defaults])
        made = dict(zip(results.split(), made if isinstance(made, (list, tuple)) else [made]))
        return tuple(made[_snake(slot)] for slot in outputs[:returned])
    dtype = inputs["X"].dtype if inputs["X"].dtype in (paddle.float32, paddle.float64) else paddle.float32
    made = _outputs(op_type, inputs, dict.fromkeys(outputs, dtype), attrs)
    if op_type in ("dequantize_abs_max", "dequantize_log"):   # 3.3.1 declares Out like the int8 X; its kernel writes
        made[0].desc.set_dtype(paddle.base.core.VarDesc.VarType.FP32)   # float32
    return tuple(made[:returned])


def _int8(*shape: int, seed: int = 7) -> Input:
    """Quantized int8 values of an exported model."""
    return given(np.random.default_rng(seed).integers(-127, 128, shape), "int8")


def _levels(*shape: int, seed: int = 3) -> Input:
    """Quantized values held in a float tensor (the fake dequantize ops' input)."""
    return given(np.random.default_rng(seed).integers(-127, 128, shape), "float32")


SCALE, ACCUM, STATE = given([0.8], "float32"), given([2.5], "float32"), given([1.9], "float32")
MOVING_OUTPUTS = ("Out", "OutScale", "OutState", "OutAccum")

LAYERS = table(
    "quant_layers",
    ("fake_quant_abs_max", lambda x: q.FakeQuantAbsMax(name="fq")(x), f(2, 3, 4)),
    ("fake_quant_abs_max_4bit", lambda x: q.FakeQuantAbsMax(name="fq", quant_bits=4)(x), f(3, 5)),
    ("fake_quant_abs_max_weight", lambda x: q.FakeQuantAbsMax(name="fq", quant_on_weight=True)(x), f(4, 3)),
    ("fake_quant_moving_average", lambda x: q.FakeQuantMovingAverageAbsMax(name="fq")(x), f(2, 3, 4)),
    ("fake_quant_moving_average_rate", lambda x: q.FakeQuantMovingAverageAbsMax(
        name="fq", moving_rate=0.5, quant_bits=5)(x), f(3, 4)),
    ("fake_quant_channel_wise", lambda x: q.FakeQuantChannelWiseAbsMax(
        name="fq", channel_num=3, quant_on_weight=True)(x), f(3, 2, 2, 2)),
    ("fake_quant_channel_wise_axis1", lambda x: q.FakeQuantChannelWiseAbsMax(
        name="fq", channel_num=4, quant_axis=1, quant_on_weight=True)(x), f(2, 4, 3)),
    ("fake_quant_channel_wise_3bit", lambda x: q.FakeQuantChannelWiseAbsMax(
        name="fq", channel_num=2, quant_bits=3, quant_on_weight=True)(x), f(2, 5)),
    ("moving_average_abs_max_scale", lambda x: q.MovingAverageAbsMaxScale(name="ma")(x), f(2, 3, 4)),
    ("moving_average_abs_max_scale_rate", lambda x: q.MovingAverageAbsMaxScale(name="ma", moving_rate=0.6)(x),
     f(3, 4)),
    ("quantized_linear", lambda x: q.QuantizedLinear(paddle.nn.Linear(4, 5))(x), f(3, 4)),
    ("quantized_linear_moving_channel", lambda x: q.QuantizedLinear(
        paddle.nn.Linear(4, 3), weight_bits=4, activation_bits=6, moving_rate=0.8,
        weight_quantize_type="channel_wise_abs_max", activation_quantize_type="moving_average_abs_max")(x), f(2, 4)),
    ("quantized_conv2d", lambda x: q.QuantizedConv2D(paddle.nn.Conv2D(3, 2, 3))(x), f(2, 3, 5, 5)),
    ("quantized_conv2d_channel", lambda x: q.QuantizedConv2D(
        paddle.nn.Conv2D(2, 4, 3, padding=1), weight_quantize_type="channel_wise_abs_max",
        activation_quantize_type="moving_average_abs_max")(x), f(1, 2, 4, 4)),
    ("quantized_conv2d_transpose", lambda x: q.QuantizedConv2DTranspose(paddle.nn.Conv2DTranspose(2, 3, 3))(x),
     f(1, 2, 3, 3)),
    ("quantized_conv2d_transpose_channel", lambda x: q.QuantizedConv2DTranspose(
        paddle.nn.Conv2DTranspose(3, 2, 2, stride=2), weight_quantize_type="channel_wise_abs_max")(x),
     f(2, 3, 2, 2)),
)

OPS = table(
    "quant_layers",
    ("fake_quantize_abs_max", lambda x: _op("fake_quantize_abs_max", {"X": x}, {"bit_length": 8}), const(3, 4)),
    ("fake_quantize_abs_max_even", lambda x: _op("fake_quantize_abs_max", {"X": x},
                                                  {"bit_length": 6, "round_type": 0}), const(2, 5)),
    ("fake_quantize_dequantize_abs_max_even", lambda x: _op(
        "fake_quantize_dequantize_abs_max", {"X": x}, {"bit_length": 4, "round_type": 0}, returned=1), f(3, 4)),
    ("fake_channel_wise_quantize_abs_max", lambda x: _op(
        "fake_channel_wise_quantize_abs_max", {"X": x}, {"quant_axis": 0}), const(3, 2, 2)),
    ("fake_channel_wise_quantize_abs_max_axis1", lambda x: _op(
        "fake_channel_wise_quantize_abs_max", {"X": x}, {"quant_axis": 1, "bit_length": 4, "round_type": 0}),
     const(2, 3, 2)),
    ("fake_channel_wise_quantize_dequantize_even", lambda x: _op(
        "fake_channel_wise_quantize_dequantize_abs_max", {"X": x}, {"quant_axis": 1, "round_type": 0}, returned=1),
     f(2, 3, 2)),
    ("fake_quantize_moving_average_abs_max", lambda x, s, a, st: _op(
        "fake_quantize_moving_average_abs_max", {"X": x, "InScale": s, "InAccum": a, "InState": st},
        {"moving_rate": 0.8}, MOVING_OUTPUTS, 4), const(3, 4), SCALE, ACCUM, STATE),
    ("fake_quantize_moving_average_abs_max_test", lambda x, s: _op(
        "fake_quantize_moving_average_abs_max", {"X": x, "InScale": s}, {"is_test": True}, ("Out", "OutScale"), 1),
     const(3, 4), SCALE),
    ("fake_quantize_dequantize_moving_average_test", lambda x, s: _op(
        "fake_quantize_dequantize_moving_average_abs_max", {"X": x, "InScale": s}, {"is_test": True, "round_type": 0},
        ("Out", "OutScale"), 1), f(3, 4), SCALE),
    ("fake_quantize_range_abs_max", lambda x, s, it: _op(
        "fake_quantize_range_abs_max", {"X": x, "InScale": s, "Iter": it}, {"window_size": 4},
        ("Out", "OutScale", "OutScales"), 2), const(3, 4), SCALE, given([6], "int64")),
    ("fake_quantize_range_abs_max_test", lambda x, s: _op(
        "fake_quantize_range_abs_max", {"X": x, "InScale": s}, {"is_test": True, "bit_length": 5}, ("Out", "OutScale"),
        1),
     const(3, 4), SCALE),
    ("fake_dequantize_max_abs", lambda x, s: _op(
        "fake_dequantize_max_abs", {"X": x, "Scale": s}, {"max_range": 127.0}, ("Out",), 1), _levels(3, 4), SCALE),
    ("fake_channel_wise_dequantize_max_abs", lambda x, s: _op(
        "fake_channel_wise_dequantize_max_abs", {"X": x, "Scales": [s]}, {"quant_bits": [8]}, ("Out",), 1),
     _levels(3, 2, 2), given([0.5, 1.5, 2.0], "float32")),
    ("fake_channel_wise_dequantize_max_abs_axis1", lambda x, s: _op(
        "fake_channel_wise_dequantize_max_abs", {"X": x, "Scales": [s]}, {"quant_bits": [4], "quant_axis": 1},
        ("Out",), 1), _levels(2, 3, 2), given([0.5, 1.5, 2.0], "float32")),
    ("fake_channel_wise_dequantize_max_abs_two", lambda x, w, a: _op(
        "fake_channel_wise_dequantize_max_abs", {"X": x, "Scales": [w, a]}, {"quant_bits": [8, 8]}, ("Out",), 1),
     _levels(2, 3), given([0.5, 1.5, 2.0], "float32"), given([0.7], "float32")),
    ("fake_channel_wise_dequantize_max_abs_cols", lambda x, w, a: _op(
        "fake_channel_wise_dequantize_max_abs", {"X": x, "Scales": [w, a]},
        {"quant_bits": [8, 4], "x_num_col_dims": 2}, ("Out",), 1),
     _levels(2, 2, 3), given([0.5, 1.5, 2.0], "float32"), given([0.7], "float32")),
    ("moving_average_abs_max_scale_op", lambda x, a, st: _op(
        "moving_average_abs_max_scale", {"X": x, "InAccum": a, "InState": st}, {"moving_rate": 0.7},
        ("Out", "OutScale", "OutState", "OutAccum"), 4), const(2, 3), ACCUM, STATE),
    ("quantize_linear", lambda x, s, z: _op(
        "quantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": -1}, ("Y",), 1),
     const(3, 4), SCALE, given([0], "int32")),
    ("quantize_linear_away", lambda x, s, z: _op(
        "quantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": -1, "round_type": 1, "qmax": 7},
        ("Y",), 1), const(3, 4), SCALE, given([0], "int32")),
    ("quantize_linear_channel", lambda x, s, z: _op(
        "quantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": 1}, ("Y",), 1),
     const(2, 3, 2), given([0.5, 1.5, 2.0], "float32"), given([0, 0, 0], "int32")),
    ("quantize_linear_train", lambda x, s, z, a, st: _op(
        "quantize_linear", {"X": x, "Scale": s, "ZeroPoint": z, "InAccum": a, "InState": st},
        {"quant_axis": -1, "is_test": False}, ("Y", "OutScale", "OutState", "OutAccum"), 4),
     const(3, 4), SCALE, given([0], "int32"), ACCUM, STATE),
    ("quantize_linear_train_channel", lambda x, s, z: _op(
        "quantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": 0, "is_test": False},
        ("Y", "OutScale"), 2), const(3, 4), given([1.0, 1.0, 1.0], "float32"), given([0, 0, 0], "int32")),
    # qmax 448 / 57344 with round_type 0: float8 rounding (QuantTensorFunctor), values kept off the ranges where
    # Paddle's CPU float8 conversion is wrong (docs/float8.md): |x| / s * 448 outside [464, 480)
    ("quantize_linear_e4m3", lambda x, s, z: _op(
        "quantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": -1, "qmax": 448}, ("Y",), 1),
     given([[0.1, -0.3, 0.79, 1.5], [-2.0, 0.001, 0.5, -0.6], [0.25, 0.33, -1e-4, 0.7]], "float32"), SCALE,
     given([0], "int32")),
    ("quantize_linear_e5m2_channel", lambda x, s, z: _op(
        "quantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": 1, "qmax": 57344}, ("Y",), 1),
     given(np.random.default_rng(11).uniform(-1, 1, (2, 3, 2)) * [[[0.5], [1.5], [2.0]]], "float32"),
     given([0.5, 1.5, 2.0], "float32"), given([0, 0, 0], "int32")),
    ("quantize_dequantize_linear_e4m3", lambda x, s, z: _op("dequantize_linear", {"X": _op(
        "quantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": 1, "qmax": 448}, ("Y",), 1)[0],
        "Scale": s, "ZeroPoint": z}, {"quant_axis": 1, "qmax": 448}, ("Y",), 1),
     given(np.random.default_rng(12).uniform(-1, 1, (2, 3)) * [0.5, 1.5, 2.0], "float32"),
     given([0.5, 1.5, 2.0], "float32"), given([0, 0, 0], "int32")),
    ("dequantize_linear", lambda x, s, z: _op(
        "dequantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": -1}, ("Y",), 1),
     _int8(3, 4), SCALE, given([0], "int32")),
    ("dequantize_linear_channel", lambda x, s, z: _op(
        "dequantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": 0, "qmax": 15}, ("Y",), 1),
     _int8(3, 2), given([0.5, 1.5, 2.0], "float32"), given([0, 0, 0], "int32")),
    ("dequantize_linear_levels", lambda x, s, z: _op(   # PIR's dequantize_linear refuses an int8 X (3.3.1)
        "dequantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": 1, "qmax": 7}, ("Y",), 1),
     _levels(2, 3), given([0.5, 1.5, 2.0], "float32"), given([0, 0, 0], "int32")),
    # only_observer passes X through: the one dequantize_linear whose numbers 3.3.1's PIR (which runs
    # quantize_linear's kernel for it) gets right
    ("dequantize_linear_observer", lambda x, s, z: _op(
        "dequantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": -1, "only_observer": True},
        ("Y",), 1), _levels(2, 3), SCALE, given([0], "int32")),
    # PaddleSlim's quant_embedding: an int8 table's rows, with abs_max's scale or log's dictionary of magnitudes
    # (a code c >= 0 gives Dict[c], c < 0 gives -Dict[c + 128])
    ("dequantize_abs_max", lambda x, s: _op("dequantize_abs_max", {"X": x, "Scale": s}, {"max_range": 127.0},
                                             ("Out",), 1), _int8(3, 4), SCALE),
    ("dequantize_abs_max_int16", lambda x, s: _op("dequantize_abs_max", {"X": x, "Scale": s}, {"max_range": 32767.0},
                                                   ("Out",), 1),
     given(np.random.default_rng(5).integers(-32767, 32768, (2, 5)), "int16"), SCALE),
    ("dequantize_log", lambda x, d: _op("dequantize_log", {"X": x, "Dict": d}, {}, ("Out",), 1),
     given(np.random.default_rng(9).permutation(np.r_[-128:-122, 0:6]).reshape(3, 4), "int8"),
     given(np.geomspace(0.01, 0.9, 6), "float32")),
    ("quantize_dequantize_linear", lambda x, s, z: _op("dequantize_linear", {"X": _op(
        "quantize_linear", {"X": x, "Scale": s, "ZeroPoint": z}, {"quant_axis": 1}, ("Y",), 1)[0], "Scale": s,
        "ZeroPoint": z}, {"quant_axis": 1}, ("Y",), 1),
     const(2, 3), given([0.5, 1.5, 2.0], "float32"), given([0, 0, 0], "int32")),
)

ROWS = LAYERS + OPS
