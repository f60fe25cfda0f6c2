"""The export fixture (tests/data/paddle/export), gradc's side: the digits example trained for one epoch on 256
examples, exported for inference in both formats, and a feed of 8 test images. tools/run_export_in_paddle.py
then loads the exports with Paddle 3.3.1's load_inference_model and records Paddle's outputs.

    .venv/bin/python tools/gradc_export_fixture.py tests/data/paddle/export
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import gradc
from gradc.training import Trainer, export

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "digits"
FEEDS, FETCHES = ["img"], ["softmax_0.tmp_0"]


def main(out: Path) -> None:
    program = gradc.load(EXAMPLE / "forward.pb")
    startup = gradc.minimize(program, optimizer="adam", lr=0.01)
    trainer = Trainer(program, [EXAMPLE / "startup.pb", startup], seed=0)
    with np.load(EXAMPLE / "train.npz") as train:
        trainer.fit({name: train[name][:256] for name in train.files}, batch_size=64, shuffle=True)
    out.mkdir(parents=True, exist_ok=True)
    export(program, out / "model", FEEDS, FETCHES, scope=trainer.scope)
    export(program, out / "pir", FEEDS, FETCHES, scope=trainer.scope, format="pir")
    with np.load(EXAMPLE / "test.npz") as test:
        np.savez(out / "feed.npz", img=test["img"][:8])
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/export"))
