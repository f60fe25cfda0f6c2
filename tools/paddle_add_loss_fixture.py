"""Build tests/data/paddle/add_loss: models saved by paddle.jit.save in Paddle 3's default PIR form (no loss: an
inference model), one batch, and the loss and gradients Paddle computes for the loss `gradc compile --add-loss`
appends: F.cross_entropy of a classifier's logits, F.cross_entropy(use_softmax=False) of a classifier that ends in a
softmax (the same loss, which gradc takes through the softmax's input), and F.mse_loss of a regressor. gradc
fine-tunes the saved files to these numbers. Run again with the legacy IR, it writes the same models as .pdmodel
files (CASE_legacy.pdmodel), which mark no var a parameter. Not part of the package: it needs paddlepaddle 3.3.1.

    /work/paddle-venv/bin/python tools/paddle_add_loss_fixture.py
    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_add_loss_fixture.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "add_loss"
SEED = 7
LEGACY = os.environ.get("FLAGS_enable_pir_api") == "0"


class Classifier(paddle.nn.Layer):
    def __init__(self, outputs: int, softmax: bool):
        super().__init__()
        self.hidden, self.out, self.softmax = paddle.nn.Linear(4, 8), paddle.nn.Linear(8, outputs), softmax

    def forward(self, x):
        scores = self.out(F.relu(self.hidden(x)))
        return F.softmax(scores, -1) if self.softmax else scores


def loss_of(case: str, output, label):
    if case == "logits":
        return F.cross_entropy(output, label)
    if case == "softmax":
        return F.cross_entropy(output, label, use_softmax=False)
    return F.mse_loss(output, label)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    x = rng.standard_normal((6, 4)).astype("float32")
    labels = {"logits": rng.integers(0, 3, (6, 1)), "softmax": rng.integers(0, 3, (6, 1)),
              "mse": rng.standard_normal((6, 2)).astype("float32")}
    meta = {}
    for case, (outputs, softmax) in {"logits": (3, False), "softmax": (3, True), "mse": (2, False)}.items():
        paddle.seed(SEED)
        net = Classifier(outputs, softmax)
        spec = [paddle.static.InputSpec([None, 4], "float32", "x")]
        paddle.jit.save(net, str(OUT / (f"{case}_legacy" if LEGACY else case)), input_spec=spec)
        if LEGACY:   # the same parameters and gradients as the PIR run's
            continue
        loss = loss_of(case, net(paddle.to_tensor(x)), paddle.to_tensor(labels[case]))
        loss.backward()
        grads = {param.name: param.grad.numpy() for param in net.parameters()}
        np.savez(OUT / f"{case}.npz", x=x, label=labels[case])
        np.savez(OUT / f"{case}_grads.npz", **grads)
        meta[case] = {"loss": float(loss.numpy()), "params": sorted(grads)}
    if not LEGACY:
        (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
