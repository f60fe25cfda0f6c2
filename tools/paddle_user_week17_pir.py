"""The PIR half of tools/paddle_user_week17.py (run it after that one, into the same directory): the LoRA model and
Paddle's AdamW minimize built in PIR mode, its training program, forward and startup (pir_train.json, pir_forward.json,
pir_startup.json, gzipped) and Paddle's losses over the same batches from the same base (pir_losses.npy); the model
merged from Paddle's trained adapters, saved by paddle.jit.save (merged.json gzipped, merged.pdiparams; its final norm
Paddle's fused_rms_norm) and the logits Paddle's Predictor gives for the prompt (pir.npz).

    FLAGS_enable_pir_api=1 /work/paddle-venv/bin/python tools/paddle_user_week17_pir.py tests/data/paddle/user_week17
"""

import sys
from pathlib import Path

import numpy as np
import paddle
from paddle_programs import gzip_file, write_pir_gz
from paddle_user_week17 import ADAPTERS, BATCH, STEPS, decoder, lora_programs, merge, train


class Merged(paddle.nn.Layer):
    def __init__(self, weights: dict):
        super().__init__()
        self.names = sorted(weights)
        for name in self.names:
            self.add_parameter(name.replace(".", "_"), paddle.create_parameter(
                weights[name].shape, "float32", default_initializer=paddle.nn.initializer.Assign(weights[name])))

    def forward(self, tokens):
        params = {name: getattr(self, name.replace(".", "_")) for name in self.names}
        return decoder({**params, "fused": True}, tokens, 0)[0]


def pir_training(out: Path) -> None:
    """The same LoRA model and AdamW minimize in PIR mode: Paddle's training program (the loss fetched as "loss") and
    startup as pir_train.json / pir_startup.json, the forward before minimize as pir_forward.json, Paddle's losses
    over the same batches from the same base (pir_losses.npy)."""
    paddle.enable_static()
    base = dict(np.load(out / "base.npz"))
    arrays = np.load(out / "data.npz")
    data = [{key: arrays[key][BATCH * i:BATCH * (i + 1)] for key in ("tokens", "labels")} for i in range(STEPS)]
    main, forward, startup, loss, _, schedule = lora_programs()
    for program in (main, forward):
        with paddle.static.program_guard(program):
            paddle._pir_ops.fetch(program.global_block().ops[-1].result(0) if program is forward else loss, "loss",
                                  0).persistable = True
    for program, stem in ((main, "pir_train"), (forward, "pir_forward"), (startup, "pir_startup")):
        write_pir_gz(program, out / f"{stem}.json")
    losses = train(main, startup, loss, schedule, base, data)[0]
    np.save(out / "pir_losses.npy", np.array(losses, np.float32))
    paddle.disable_static()


def pir(out: Path) -> None:
    pir_training(out)
    generation_npz = np.load(out / "generation.npz")
    adapters = np.load(out / "adapters.npz")
    model = Merged(merge(dict(np.load(out / "base.npz")), {name: adapters[name] for name in ADAPTERS}))
    model.eval()
    static = paddle.jit.to_static(model, input_spec=[paddle.static.InputSpec([-1, -1], "int64", "tokens")])
    paddle.jit.save(static, str(out / "merged"))
    (out / "merged.pdiparams.info").unlink(missing_ok=True)
    tokens = generation_npz["prompt"]
    config = paddle.inference.Config(str(out / "merged.json"), str(out / "merged.pdiparams"))
    config.disable_mkldnn()
    predictor = paddle.inference.create_predictor(config)
    predictor.get_input_handle(predictor.get_input_names()[0]).copy_from_cpu(tokens)
    predictor.run()
    logits = predictor.get_output_handle(predictor.get_output_names()[0]).copy_to_cpu()
    np.savez(out / "pir.npz", tokens=tokens, logits=logits)
    gzip_file(out / "merged.json")


if __name__ == "__main__":
    pir(Path(sys.argv[1]))
