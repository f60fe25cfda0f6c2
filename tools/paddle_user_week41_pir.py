"""The PIR half of tools/paddle_user_week41.py (which runs it in a second interpreter, PIR mode being Paddle 3's
default): the trained GPT in dygraph, its weights set from gpt/trained.npz in creation order, saved by paddle.jit.save
with an InputSpec of [batch, length] tokens (gpt.json, gpt.pdiparams), and the Predictor's and dygraph's logits on
the prompts of generation.npz (predictor.npz)."""

import json
import tempfile
from pathlib import Path

import numpy as np
import paddle
from paddle_programs import predict
from paddle_user_week41 import GPT, write_gz


class Logits(GPT):
    def forward(self, tokens):
        return super().forward(tokens)[1]


def main_pir(out: Path) -> None:
    meta = json.loads((out / "meta.json").read_text())
    trained = np.load(out / "gpt" / "trained.npz")
    model = Logits(dropout=0.0)
    model.eval()
    for parameter, name in zip(model.parameters(), meta["gpt"]["params"]):
        parameter.set_value(trained[name])
    prompts = np.load(out / "generation.npz")["prompts"]
    dygraph = model(paddle.to_tensor(prompts)).numpy()
    with tempfile.TemporaryDirectory() as tmp:
        paddle.jit.save(model, f"{tmp}/gpt", input_spec=[paddle.static.InputSpec([None, None], "int64", "tokens")])
        write_gz(out / "gpt.json", Path(f"{tmp}/gpt.json").read_bytes())
        (out / "gpt.pdiparams").write_bytes(Path(f"{tmp}/gpt.pdiparams").read_bytes())
        outputs = predict(f"{tmp}/gpt.json", f"{tmp}/gpt.pdiparams", {"tokens": prompts})
    np.savez_compressed(out / "predictor.npz", dygraph=dygraph, **outputs)
