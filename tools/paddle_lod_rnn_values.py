"""Write tests/data/paddle/lod_rnn_values.npz: what Paddle 3.3.1 computes for a small lstm (peepholes, reversed,
H0 and C0, one input gate past the sigmoid's clamp at 13) and gru (origin_mode, H0) over two sequences of 2 and 3
rows: every output (the Batch* layouts too) and the grads of sum(Hidden * weights) for each input, keyed
``<op>.<slot>``. tests/test_lod_rnn.py compares gradc with them.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_lod_rnn_values.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import paddle
from coverage.legacy_shim import append
from paddle.base.layer_helper import LayerHelper

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "paddle" / "lod_rnn_values.npz"
D = 2
LENGTHS = [2, 3]


def run(op: str, inputs: dict, outputs: list[str], attrs: dict) -> dict:
    """{<op>.<name>: value} for the inputs, the outputs, the loss weights and the inputs' grads."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        slots, feed = {}, {}
        for slot, value in inputs.items():
            var = paddle.static.data(slot.lower(), list(value.shape), "float32", lod_level=int(slot == "Input"))
            var.stop_gradient = False
            slots[slot] = var
            feed[slot.lower()] = (paddle.base.create_lod_tensor(value, [LENGTHS], paddle.CPUPlace())
                                  if slot == "Input" else value)
        helper = LayerHelper(op)
        made = {slot: helper.create_variable_for_type_inference("float32") for slot in outputs}
        helper.append_op(type=op, inputs=slots, outputs=made, attrs=attrs)
        weights = paddle.static.data("weights", [sum(LENGTHS), D], "float32")
        feed["weights"] = np.arange(1, 1 + sum(LENGTHS) * D, dtype="float32").reshape(-1, D) / 10
        product = append("elementwise_mul", {"X": made["Hidden"], "Y": weights}, {"axis": -1})
        loss = append("reduce_sum", {"X": product}, {"dim": [0], "keep_dim": False, "reduce_all": True})
        grads = paddle.static.gradients([loss], list(slots.values()))
        exe = paddle.static.Executor(paddle.CPUPlace())
        exe.run(startup)
        values = exe.run(main, feed=feed, fetch_list=[*made.values(), *grads], return_numpy=False)
    names = [*outputs, *(f"{slot}@GRAD" for slot in inputs)]
    return {**{f"{op}.{name}": np.array(value) for name, value in zip(names, values)},
            **{f"{op}.{slot}": value for slot, value in inputs.items()}, f"{op}.weights": feed["weights"]}


def main() -> None:
    paddle.enable_static()
    rng = np.random.default_rng(5)

    def normal(*shape, scale=1.0):
        return (scale * rng.standard_normal(shape)).astype("float32")

    x = normal(5, 4 * D)
    x[1, D] = 20.0   # an input gate past the sigmoid's clamp
    values = run("lstm", {"Input": x, "H0": normal(2, D), "C0": normal(2, D), "Weight": normal(D, 4 * D, scale=0.5),
                          "Bias": normal(1, 7 * D, scale=0.5)},
                 ["Hidden", "Cell", "BatchGate", "BatchCellPreAct"], {"use_peepholes": True, "is_reverse": True})
    values |= run("gru", {"Input": normal(5, 3 * D), "H0": normal(2, D), "Weight": normal(D, 3 * D, scale=0.5),
                          "Bias": normal(1, 3 * D, scale=0.5)},
                  ["BatchGate", "BatchResetHiddenPrev", "BatchHidden", "Hidden"], {"origin_mode": True})
    np.savez(OUT, **values)
    print(f"wrote {OUT} ({len(values)} arrays)")


if __name__ == "__main__":
    main()
