"""PIR fixtures of legacy coverage rows whose ops no PIR API writes: the row's legacy fixture
(tests/data/paddle/layers/<row>, tools/paddle_coverage.py) through Paddle's legacy-to-PIR translator, written as a
PIR coverage fixture (tests/data/paddle/pir_layers/<row>: forward.json fetching the loss as "loss", the legacy
fixture's feed.npz, params.npz, grads.npz, loss.npy, and meta.json), which tests/test_pir_coverage.py then loads,
trains and exports. Rows whose inputs carry a LoD cannot be fed to a PIR program and are refused. Not part of the
package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_translated_rows.py ROW ...
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import numpy as np
import paddle
from coverage.pir_build import LOSS_NAME, op_names
from paddle.base import core

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "tests" / "data" / "paddle" / "layers"
OUT = ROOT / "tests" / "data" / "paddle" / "pir_layers"


def translate(row_id: str) -> str:
    legacy = LEGACY / row_id
    meta = json.loads((legacy / "meta.json").read_text())
    if meta.get("lods"):
        raise ValueError(f"{row_id}: its inputs carry a LoD, which a PIR program's feed cannot")
    program = paddle.base.libpaddle.pir.translate_to_pir(core.ProgramDesc((legacy / "forward.pb").read_bytes()))
    loss = [op for op in program.global_block().ops if op.name() == "pd_op.mean"][-1].result(0)
    with paddle.static.program_guard(program):
        paddle._pir_ops.fetch(loss, LOSS_NAME, 0).persistable = True
    out = OUT / row_id
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    core.serialize_pir_program(program, str(out / "forward.json"), True, False, True)
    copied = [name for name in ("feed.npz", "params.npz", "grads.npz") if (legacy / name).exists()]
    for name in copied:
        shutil.copy(legacy / name, out / name)
    feed = dict(np.load(legacy / "feed.npz"))
    (value,) = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed, fetch_list=[loss])
    if not np.allclose(value, np.load(legacy / "loss.npy"), rtol=1e-6):
        raise ValueError(f"{row_id}: the translated program computes another loss")
    np.save(out / "loss.npy", value)
    grads = np.load(legacy / "grads.npz").files if "grads.npz" in copied else []
    record = {"row": row_id, "family": meta["family"], "code": meta["code"], "paddle_version": paddle.__version__,
              "loss": LOSS_NAME, "description": f"tests/data/paddle/layers/{row_id}/forward.pb through paddle's "
                                                f"translate_to_pir",
              "params_grads": [[name.removesuffix("@GRAD"), name] for name in grads],
              "pir_ops": op_names(program.global_block().ops), "pir_backward_ops": []}
    (out / "meta.json").write_text(json.dumps(record, indent=1) + "\n")
    return f"loss {float(value):.6f}, ops {record['pir_ops']}"


if __name__ == "__main__":
    paddle.enable_static()
    for row_id in sys.argv[1:]:
        print(f"{row_id}: {translate(row_id)}")
