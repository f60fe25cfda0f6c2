"""Cases for gradc.ops.quant's differentiable ops and their straight-through grad ops.

A fake quantize-dequantize is a step function: its derivative is zero almost everywhere, and Paddle's gradient is the
straight-through estimator (identity) by design. The cases check that estimate where it is a derivative: at 16 bits
the steps are s / 32767 (about 1e-4 here), so over central differences 0.03 apart the op is the identity to within
step / 0.06 (below 0.5%), and the check is loose accordingly (rtol 1e-2): a dropped, scaled or misrouted gradient is
off by O(1). The scales keep every element inside [-s, s] (the abs max, or a moving average above it), where the
estimate holds; values 0.1 apart keep each abs max where it is under the perturbations. moving_average_abs_max_scale
is the identity itself, checked tightly. The grad ops are the identity in dOut (checked in it: tied)."""

import numpy as np

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

CASES = [
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
