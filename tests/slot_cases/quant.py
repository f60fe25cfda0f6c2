"""Optional inputs of the quantization ops: the moving-average state (InAccum, InState) and
fake_quantize_range_abs_max's step (Iter) of a training run, against the update formulas written out here. Without
them a training run is refused (Paddle's kernel dereferences them), so no case compares a run without the slot."""

import numpy as np

from . import SlotCase

X = np.array([[0.3, -1.2, 0.75], [2.0, -0.05, 1.1]])
ACCUM, STATE, IN_SCALE = np.array([2.5]), np.array([1.9]), np.array([0.8])
RATE = 0.9


def away(v):
    """Round half away from zero (no value here sits on a half)."""
    return np.sign(v) * np.floor(np.abs(v) + 0.5)


def moving(rate=RATE):
    """(state, accum, scale) after one training step on X."""
    state, accum = rate * STATE + 1, rate * ACCUM + np.abs(X).max()
    return state, accum, accum / state


def quantized(scale, bins=127):
    return away(bins / scale * np.clip(X, -scale, scale))


STATE_IN = {"X": X, "InScale": IN_SCALE, "InAccum": ACCUM, "InState": STATE}
_state, _accum, _scale = moving()
MOVED = {"OutState": _state, "OutAccum": _accum, "OutScale": _scale}
LINEAR = {"X": X, "Scale": IN_SCALE, "ZeroPoint": np.zeros(1, np.int32), "InAccum": ACCUM, "InState": STATE}
LINEAR_STATE, LINEAR_ACCUM, LINEAR_SCALE = moving(0.9)   # quantize_linear's rate is 0.9, whatever moving_rate says

# the window of the last 4 abs maxes, step 6 writing slot 2 of a fresh (zero) window: the scale is the larger of
# InScale and X's abs max
WINDOW = np.array([0.0, 0.0, np.abs(X).max(), 0.0])

CASES = [
    *[SlotCase(op, slot, STATE_IN, {"Out": out(_scale), **MOVED}, overrides=False)
      for op, out in (("fake_quantize_moving_average_abs_max", quantized),
                      ("fake_quantize_dequantize_moving_average_abs_max", lambda s: quantized(s) * s / 127))
      for slot in ("InAccum", "InState")],
    *[SlotCase("moving_average_abs_max_scale", slot, {"X": X, "InAccum": ACCUM, "InState": STATE},
               {"Out": X, **MOVED}, overrides=False) for slot in ("InAccum", "InState")],
    *[SlotCase("quantize_linear", slot, LINEAR,
               {"Y": np.clip(np.rint(127 / LINEAR_SCALE * X), -128, 127), "OutState": LINEAR_STATE,
                "OutAccum": LINEAR_ACCUM, "OutScale": LINEAR_SCALE},
               {"quant_axis": -1, "is_test": False, "moving_rate": 0.5}, overrides=False)
      for slot in ("InAccum", "InState")],
    SlotCase("fake_quantize_range_abs_max", "Iter", {"X": X, "InScale": IN_SCALE, "Iter": np.array([6])},
             {"Out": quantized(np.abs(X).max()), "OutScale": np.abs(X).max().reshape(1), "OutScales": WINDOW},
             {"window_size": 4}, overrides=False),
]
