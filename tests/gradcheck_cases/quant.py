"""Cases for gradc.ops.quant's differentiable ops and their straight-through grad ops.

A fake quantize-dequantize is a step function: its derivative is zero almost everywhere, and Paddle's gradient is the
straight-through estimator (identity) by design. The cases check that estimate where it is a derivative: at 16 bits
the steps are s / 32767 (about 1e-4 here), so over central differences 0.03 apart the op is the identity to within
step / 0.06 (below 0.5%), and the check is loose accordingly (rtol 1e-2): a dropped, scaled or misrouted gradient is
off by O(1). The scales keep every element inside [-s, s] (the abs max, or a moving average above it), where the
estimate holds; values 0.1 apart keep each abs max where it is under the perturbations. moving_average_abs_max_scale
is the identity itself, checked tightly. The grad ops are the identity in dOut (checked in it: tied).

The quantize-only and dequantize ops pass their gradient through unchanged, so that a pair of them is the
straight-through estimator: they are checked in pairs (a program each, quantize then dequantize at 16 bits), where that
estimate is the derivative, as above."""

import numpy as np

from gradc.layers import ProgramBuilder

from . import Case, rng
from .second_order import second_order

r = rng(53)


def spread(*shape):
    """Values 0.1 apart in random order, around 0."""
    count = int(np.prod(shape))
    return (r.permutation(count) - count / 2 + 0.25).reshape(shape) / 10.0


STEP = {"eps": 0.03, "rtol": 1e-2, "atol": 1e-2}
FINE = {"bit_length": 16}
TESTED = {"Out": 1}   # with is_test the scale outputs are not written
STATE = {"InScale": np.array([3.0]), "InAccum": np.array([10.0]), "InState": np.array([1.0])}

BINS = 2 ** 15 - 1   # 16 bits


def _pair(quantize: str, inputs: dict, attrs: dict, dequantize: str, dequantize_attrs: dict, scale_slot: str,
          shape=(3, 4)):
    """loss = mean(dequantize(quantize(x)) * c): the quantize op's Out (or Y) and its scale feed the dequantize op."""
    net, x_value = ProgramBuilder(), spread(*shape)
    x, c = net.data("x", list(shape), "float64", stop_gradient=False), net.data("c", list(shape), "float64")
    fed = {name: net.data(name, list(value.shape), value.dtype.name) for name, value in inputs.items()}
    if quantize == "quantize_linear":   # its scale is Scale (here in its test form, which writes no OutScale)
        quantized, scale = net.op(quantize, {"X": x, **fed}, attrs, outputs=["Y"])[0], fed["Scale"]
    else:
        quantized, scale = net.op(quantize, {"X": x, **fed}, attrs, outputs=["Out", "OutScale"])
    dequantized = net.op(dequantize, {"X": quantized, scale_slot: scale, **({"ZeroPoint": fed["ZeroPoint"]} if
                                      "ZeroPoint" in fed else {})}, dequantize_attrs)[0]
    loss = net.mean(net.op("elementwise_mul", {"X": dequantized, "Y": c})[0])
    return {"program": net.program, "feed": {"x": x_value, "c": r.standard_normal(shape), **inputs}, "loss": loss,
            "wrt": ["x"]}


LINEAR = {"bit_length": 16, "qmin": -BINS - 1, "qmax": BINS, "quant_axis": -1}
PAIRS = [
    ("fake_quantize_abs_max", {}, FINE, "fake_dequantize_max_abs", {"max_range": float(BINS)}, "Scale"),
    ("fake_channel_wise_quantize_abs_max", {}, FINE, "fake_channel_wise_dequantize_max_abs",
     {"quant_bits": [16]}, "Scales"),
    ("fake_quantize_moving_average_abs_max", STATE, FINE, "fake_dequantize_max_abs", {"max_range": float(BINS)},
     "Scale"),
    ("fake_quantize_range_abs_max", {"InScale": np.array([3.0]), "Iter": np.array([0], np.int64)},
     {**FINE, "window_size": 4}, "fake_dequantize_max_abs", {"max_range": float(BINS)}, "Scale"),
    ("quantize_linear", {"Scale": np.array([3.0]), "ZeroPoint": np.zeros(1, np.int32)}, LINEAR, "dequantize_linear",
     LINEAR, "Scale"),
]

CASES = [
    *[Case(op, {}, {"pair": dequantize}, program=lambda args=(op, inputs, attrs, dequantize, dequantize_attrs, slot):
           _pair(*args), **STEP) for op, inputs, attrs, dequantize, dequantize_attrs, slot in PAIRS],
    *[Case(dequantize, {}, {"pair": op}, program=lambda args=(op, inputs, attrs, dequantize, dequantize_attrs, slot):
           _pair(*args), **STEP) for op, inputs, attrs, dequantize, dequantize_attrs, slot in PAIRS[:2] + PAIRS[4:]],
    Case("fake_quantize_dequantize_abs_max", {"X": spread(3, 4)}, FINE, **STEP),
    Case("fake_quantize_dequantize_abs_max", {"X": spread(2, 5)}, {**FINE, "round_type": 0}, **STEP),
    Case("fake_channel_wise_quantize_dequantize_abs_max", {"X": spread(3, 2, 2)}, FINE, **STEP),
    Case("fake_channel_wise_quantize_dequantize_abs_max", {"X": spread(2, 3, 2)},
         {**FINE, "quant_axis": 1, "round_type": 0}, **STEP),
    Case("fake_quantize_dequantize_moving_average_abs_max", {"X": spread(3, 4), **STATE}, {**FINE, "moving_rate": 0.9},
         **STEP),
    Case("fake_quantize_dequantize_moving_average_abs_max", {"X": spread(2, 3), "InScale": np.array([2.0])},
         {**FINE, "is_test": True, "round_type": 0}, outputs=TESTED, **STEP),
    Case("moving_average_abs_max_scale", {"X": spread(2, 3, 2), "InAccum": np.array([1.0]),
                                          "InState": np.array([2.0])}),
    Case("moving_average_abs_max_scale", {"X": spread(4)}, {"is_test": True}, outputs=TESTED),
    second_order("fake_quantize_dequantize_abs_max", {"X": spread(2, 3)}, tied=True),
    second_order("fake_channel_wise_quantize_dequantize_abs_max", {"X": spread(3, 2)}, {"quant_axis": 1}, tied=True),
    second_order("fake_quantize_dequantize_moving_average_abs_max", {"X": spread(2, 3), **STATE}, tied=True),
    second_order("moving_average_abs_max_scale", {"X": spread(2, 3), "InAccum": np.array([1.0]),
                                                  "InState": np.array([2.0])}, tied=True),
]
