"""Build examples/digits: a small CNN for 8x8 handwritten digits, written with Paddle's own layers as a
user of Paddle 3.3.1 would (legacy static mode), saved as a forward program and its startup program.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_digits_example.py examples/digits
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import paddle
import paddle.nn.functional as F
from paddle_programs import without_callstacks

paddle.enable_static()


def build(out: Path, seed: int = 2024) -> None:
    paddle.seed(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        img = paddle.static.data("img", [-1, 1, 8, 8], "float32")
        label = paddle.static.data("label", [-1, 1], "int64")
        h = F.relu(paddle.nn.BatchNorm2D(16)(paddle.nn.Conv2D(1, 16, 3, padding=1)(img)))
        h = F.max_pool2d(h, 2)
        h = F.max_pool2d(F.relu(paddle.nn.Conv2D(16, 32, 3, padding=1)(h)), 2)
        logits = paddle.nn.Linear(128, 10)(paddle.nn.Dropout(0.2)(paddle.flatten(h, 1)))
        prob = F.softmax(logits)
        acc = paddle.static.accuracy(prob, label)
        loss = F.cross_entropy(logits, label)   # last, so gradc finds the loss by itself
    out.mkdir(parents=True, exist_ok=True)
    (out / "forward.pb").write_bytes(without_callstacks(main))
    (out / "startup.pb").write_bytes(without_callstacks(startup))
    meta = {"paddle_version": paddle.__version__, "seed": seed, "feed": ["img", "label"], "loss": loss.name,
            "accuracy": acc.name, "probabilities": prob.name,
            "description": "conv 3x3 (16) -> batch_norm -> relu -> max pool -> conv 3x3 (32) -> relu -> max pool "
                           "-> dropout 0.2 -> fc 10; softmax, accuracy, cross entropy",
            "ops": [op.type for op in main.global_block().ops]}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"loss {loss.name}, accuracy {acc.name}, probabilities {prob.name}")


if __name__ == "__main__":
    build(Path(sys.argv[1] if len(sys.argv) > 1 else "examples/digits"))
