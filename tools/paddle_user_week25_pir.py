"""The PIR half of tools/paddle_user_week25.py (run it after that one, into the same directory): the forecaster's
scaling (mean and std over the window's 24 steps, epsilon 1e-5) and a Linear, in dygraph, saved by paddle.jit.save
(scaled_pir.json gzipped, its weights scaled_pir.npz) and run on the rollout's two windows by Paddle's Predictor with
oneDNN (its CPU default) and with disable_mkldnn(), and by paddle.jit.load (predictor_pir.npz).

    FLAGS_enable_pir_api=1 /work/paddle-venv/bin/python tools/paddle_user_week25_pir.py tests/data/paddle/user_week25
"""

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle
from paddle_programs import write_gz
from paddle_user_week25 import WINDOW


class Scaled(paddle.nn.Layer):
    """The forecaster's scaling alone, then a Linear over the 24 steps: the scaled windows and the Linear's output."""

    def __init__(self):
        super().__init__()
        self.head = paddle.nn.Linear(WINDOW, 2)

    def forward(self, x):
        mean = paddle.mean(x, axis=1, keepdim=True)
        std = paddle.sqrt(paddle.mean(paddle.square(x - mean), axis=1, keepdim=True) + 1e-5)
        scaled = paddle.transpose((x - mean) / std, [0, 2, 1])
        return scaled, self.head(scaled)


def main(out: Path) -> None:
    """In PIR mode: the scaling net saved by paddle.jit.save (scaled_pir.json, its weights scaled_pir.npz) and run by
    Paddle's Predictor on the rollout's windows with oneDNN (the CPU default) and without, and by jit.load."""
    paddle.seed(25)
    model = Scaled()
    np.savez(out / "scaled_pir.npz", **{param.name: param.numpy() for param in model.parameters()})
    x = np.load(out / "rollout.npz")["x"]
    outputs = {}
    with tempfile.TemporaryDirectory() as saved:
        paddle.jit.save(model, f"{saved}/scaled", input_spec=[paddle.static.InputSpec([-1, WINDOW, 1], "float32", "x")])
        write_gz(out / "scaled_pir.json", Path(f"{saved}/scaled.json").read_bytes())
        for onednn in (True, False):
            config = paddle.inference.Config(f"{saved}/scaled.json", f"{saved}/scaled.pdiparams")
            if not onednn:
                config.disable_mkldnn()
            predictor = paddle.inference.create_predictor(config)
            predictor.get_input_handle("x").copy_from_cpu(x)
            predictor.run()
            names = predictor.get_output_names()
            for name, key in zip(names, ("scaled", "head")):
                outputs[f"{key}_{'onednn' if onednn else 'plain'}"] = predictor.get_output_handle(name).copy_to_cpu()
        loaded = paddle.jit.load(f"{saved}/scaled")
        outputs["scaled_jit_load"] = loaded(paddle.to_tensor(x))[0].numpy()
    np.savez(out / "predictor_pir.npz", **outputs)
    meta = json.loads((out / "meta.json").read_text())
    meta["pir"] = {"outputs": names}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
