"""Paddle 3.3.1's outputs of the quant family's ops on many random float32 values, for tests/test_quant.py: the
rounding of every element must be Paddle's (a coverage fixture's loss could hide one element a step off). Each case
is one legacy op run by Paddle's executor; the file holds its inputs, attributes and outputs. Not part of the
package: it needs paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_quant_reference.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "quant_reference.npz"


def run(op_type: str, inputs: dict, attrs: dict, outputs: list[str]) -> dict[str, np.ndarray]:
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        var = {slot: paddle.static.data(slot.lower(), list(v.shape), v.dtype.name) for slot, v in inputs.items()}
        helper = LayerHelper(op_type)
        made = {slot: helper.create_variable_for_type_inference("float32") for slot in outputs}
        helper.append_op(type=op_type, inputs=var, outputs=made, attrs=dict(attrs))
    feed = {slot.lower(): v for slot, v in inputs.items()}
    values = paddle.static.Executor().run(main, feed=feed, fetch_list=list(made.values()))
    return dict(zip(outputs, values))


def cases(rng) -> list[tuple[str, dict, dict, list[str]]]:
    x = (rng.standard_normal((20, 30)) * 3).astype("float32")
    channels = (rng.standard_normal((4, 5, 8)) * rng.uniform(0.1, 4, (4, 1, 1))).astype("float32")
    scale, accum, state = (np.array([v], "float32") for v in (2.7, 3.1, 1.3))
    found = []
    for round_type in (0, 1):
        for bits in (8, 4):
            found += [
                ("fake_quantize_abs_max", {"X": x}, {"bit_length": bits, "round_type": round_type},
                 ["Out", "OutScale"]),
                ("fake_quantize_dequantize_abs_max", {"X": x}, {"bit_length": bits, "round_type": round_type},
                 ["Out", "OutScale"]),
            ]
        for axis in (0, 1):
            found += [
                ("fake_channel_wise_quantize_abs_max", {"X": channels},
                 {"quant_axis": axis, "round_type": round_type}, ["Out", "OutScale"]),
                ("fake_channel_wise_quantize_dequantize_abs_max", {"X": channels},
                 {"quant_axis": axis, "round_type": round_type, "bit_length": 5}, ["Out", "OutScale"]),
            ]
        found += [
            ("fake_quantize_dequantize_moving_average_abs_max",
             {"X": x, "InScale": scale, "InAccum": accum, "InState": state},
             {"round_type": round_type, "moving_rate": 0.8}, ["Out", "OutScale", "OutState", "OutAccum"]),
            ("fake_quantize_moving_average_abs_max", {"X": x, "InScale": scale},
             {"round_type": round_type, "is_test": True}, ["Out", "OutScale"]),
            ("quantize_linear", {"X": x, "Scale": scale, "ZeroPoint": np.zeros(1, "int32")},
             {"round_type": round_type, "quant_axis": -1}, ["Y"]),
            ("quantize_linear", {"X": channels, "Scale": np.abs(channels).max(axis=(1, 2)) * 0.7,
                                 "ZeroPoint": np.zeros(4, "int32")},
             {"round_type": round_type, "quant_axis": 0, "qmax": 15}, ["Y"]),
        ]
    for qmax, (low, high) in ((448, (464, 480)), (57344, (61440, 65536))):   # float8 rounding (round_type 0)
        # off the range where Paddle's CPU float8 conversion gives NaN or inf (docs/float8.md), margins included
        off = [np.where((np.abs(v) * qmax / s >= low * 0.99) & (np.abs(v) * qmax / s < high * 1.01), 0, v)
               for v, s in ((x, 2.7), (channels, np.abs(channels).max(axis=(1, 2))[:, None, None] * 0.7))]
        found += [
            ("quantize_linear", {"X": off[0], "Scale": scale, "ZeroPoint": np.zeros(1, "int32")},
             {"quant_axis": -1, "qmax": qmax}, ["Y"]),
            ("quantize_linear", {"X": off[1], "Scale": np.abs(channels).max(axis=(1, 2)) * 0.7,
                                 "ZeroPoint": np.zeros(4, "int32")}, {"quant_axis": 0, "qmax": qmax}, ["Y"]),
        ]
    levels = rng.integers(-127, 128, (20, 30)).astype("float32")
    found += [
        ("fake_dequantize_max_abs", {"X": levels, "Scale": scale}, {"max_range": 127.0}, ["Out"]),
        ("dequantize_linear", {"X": levels.astype("int8"), "Scale": scale, "ZeroPoint": np.zeros(1, "int32")},
         {"quant_axis": -1}, ["Y"]),
    ]
    return found


def main() -> None:
    paddle.enable_static()
    arrays, index = {}, []
    for i, (op_type, inputs, attrs, outputs) in enumerate(cases(np.random.default_rng(2026))):
        values = run(op_type, inputs, attrs, outputs)
        if attrs.get("is_test"):   # the op writes Out only (Paddle's program still needs an OutScale var)
            values = {"Out": values["Out"]}
        arrays |= {f"{i}/in/{slot}": v for slot, v in inputs.items()}
        arrays |= {f"{i}/out/{slot}": v for slot, v in values.items()}
        index.append({"op": op_type, "attrs": attrs})
    np.savez_compressed(OUT, index=np.array(json.dumps(index)), **arrays)
    print(f"wrote {OUT} ({len(index)} cases)")


if __name__ == "__main__":
    main()
