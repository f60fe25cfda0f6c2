"""Build tests/data/paddle/inference_finetune: a model shipped with Paddle's save_inference_model, which strips the
outputs Paddle marks extra (XShape of flatten, transpose2, squeeze2 and unsqueeze2, dropout's Mask), though their grad
ops read them, and the
gradients Paddle computes for the same model before export (its test-mode clone, XShape kept), of
loss = mean(out * w) with w fed. gradc fine-tunes the exported file to these gradients. Not part of the package:
it needs paddlepaddle 3.3.1.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_finetune_fixture.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "inference_finetune"
SEED = 2026
STRIPPED = {**dict.fromkeys(("flatten_contiguous_range", "reshape2", "transpose2", "squeeze2", "unsqueeze2"),
                            ("XShape",)), "dropout": ("Mask",)}


def model(x):
    """conv -> relu -> dropout -> flatten -> reshape -> transpose -> linear -> layer_norm -> unsqueeze -> squeeze ->
    softmax."""
    hidden = F.dropout(F.relu(paddle.nn.Conv2D(1, 4, 3)(x)), 0.25)      # [n, 4, 4, 4]
    hidden = paddle.transpose(paddle.reshape(paddle.flatten(hidden, 1), [-1, 4, 16]), [0, 2, 1])   # [n, 16, 4]
    hidden = paddle.nn.LayerNorm(3)(paddle.nn.Linear(4, 3)(hidden))      # [n, 16, 3]
    return F.softmax(paddle.squeeze(paddle.unsqueeze(hidden, 1), 1), -1)


def main() -> None:
    paddle.enable_static()
    paddle.seed(SEED)
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_program, startup):
        x = paddle.static.data("x", [-1, 1, 6, 6], "float32")
        out = model(x)
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    OUT.mkdir(parents=True, exist_ok=True)
    paddle.static.save_inference_model(str(OUT / "model"), [x], [out], executor, program=main_program)

    rng = np.random.default_rng(SEED)
    feed = {"x": rng.standard_normal((2, 1, 6, 6)).astype("float32"),
            "w": rng.standard_normal((2, 16, 3)).astype("float32")}
    trained = main_program.clone(for_test=True)
    with paddle.static.program_guard(trained, startup):
        block = trained.global_block()
        weight = paddle.static.data("w", [-1, 16, 3], "float32")
        loss = paddle.mean(block.var(out.name) * weight)
        pairs = paddle.static.append_backward(loss)
    values = executor.run(trained, feed=feed, fetch_list=[loss] + [grad for _, grad in pairs])
    np.savez(OUT / "feed.npz", **feed)
    np.save(OUT / "loss.npy", values[0])
    np.savez(OUT / "grads.npz", **{param.name: grad for (param, _), grad in zip(pairs, values[1:])})

    exported = paddle.static.Program.parse_from_string((OUT / "model.pdmodel").read_bytes()).global_block()
    stripped = sorted(f"{op.type}.{slot}" for op in exported.ops for slot in STRIPPED.get(op.type, ())
                      if slot not in op.desc.output_names())
    meta = {"seed": SEED, "paddle_version": paddle.__version__, "output": out.name, "loss_weight": "w",
            "outputs_stripped": stripped,
            "description": "save_inference_model of " + " ".join(model.__doc__.split()).rstrip(".")
                           + "; grads.npz: Paddle's gradients of mean(out * w) from the model's test-mode clone "
                           "before export"}
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{OUT}: {len(pairs)} parameter gradients; outputs stripped on export: {stripped}")


if __name__ == "__main__":
    main()
