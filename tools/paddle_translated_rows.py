"""PIR fixtures of legacy coverage rows whose ops no PIR API writes: the row's legacy fixture
(tests/data/paddle/layers/<row>, tools/paddle_coverage.py) through Paddle's legacy-to-PIR translator, written as a
PIR coverage fixture (tests/data/paddle/pir_layers/<row>: forward.json fetching the loss as "loss", Paddle's PIR
training program of it backward.json.gz where the row has gradients, the legacy fixture's feed.npz, params.npz,
grads.npz, loss.npy, and meta.json), which tests/test_pir_coverage.py then loads, trains and exports. Rows whose
inputs carry a LoD of several sequences cannot be fed to a PIR program and are refused. Not part of the package:
it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_translated_rows.py ROW ...
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import paddle
from coverage.pir_build import LOSS_NAME, _with_fetches, op_names
from paddle.base import core

ROOT = Path(__file__).resolve().parent.parent
LEGACY = ROOT / "tests" / "data" / "paddle" / "layers"
OUT = ROOT / "tests" / "data" / "paddle" / "pir_layers"


def _serialize(program, path: Path) -> None:
    core.serialize_pir_program(program, str(path), True, False, True)


def translate(row_id: str) -> str:
    legacy = LEGACY / row_id
    meta = json.loads((legacy / "meta.json").read_text())
    lods = meta.get("lods", {})
    if any(len(level) > 2 for lod in lods.values() for level in lod):
        raise ValueError(f"{row_id}: its inputs carry a LoD of several sequences, which a PIR program's feed cannot")
    main = paddle.base.libpaddle.pir.translate_to_pir(core.ProgramDesc((legacy / "forward.pb").read_bytes()))
    forward_count = len(main.global_block().ops)
    loss = [op for op in main.global_block().ops if op.name() == "pd_op.mean"][-1].result(0)
    forward = _with_fetches(main, [(loss, LOSS_NAME)])
    grad_names = np.load(legacy / "grads.npz").files if (legacy / "grads.npz").exists() else []
    data = {op.attrs()["name"]: op.result(0) for op in main.global_block().ops if op.name() == "pd_op.data"}
    wrt = [name.removesuffix("@GRAD") for name in grad_names]
    with paddle.static.program_guard(main):
        grads = paddle.static.gradients([loss], [data[name] for name in wrt]) if wrt else []
    out = OUT / row_id
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    _serialize(forward, out / "forward.json")
    backward_ops = []
    if wrt and all(grad is not None for grad in grads):   # None: Paddle's PIR has no VJP of the row's op
        training = _with_fetches(main, [(loss, LOSS_NAME)] + [(g, f"{n}@GRAD") for n, g in zip(wrt, grads)])
        _serialize(training, out / "backward.json")
        (out / "backward.json.gz").write_bytes(gzip.compress((out / "backward.json").read_bytes(), mtime=0))
        (out / "backward.json").unlink()
        backward_ops = op_names(main.global_block().ops[forward_count:])
    for name in ("feed.npz", "params.npz", "grads.npz"):
        if (legacy / name).exists():
            shutil.copy(legacy / name, out / name)
    feed = dict(np.load(legacy / "feed.npz"))
    for name, lod in lods.items():   # one sequence: Paddle's kernels want its LoD (box_clip segfaults without)
        tensor = core.DenseTensor()
        tensor.set(feed[name], paddle.CPUPlace())
        tensor.set_lod(lod)
        feed[name] = tensor
    if (legacy / "params.npz").exists():   # parameters (a tree's tables, say) go into the scope, as a startup would
        for name, array in np.load(legacy / "params.npz").items():
            paddle.static.global_scope().var(name).get_tensor().set(array, paddle.CPUPlace())
    (value,) = paddle.static.Executor(paddle.CPUPlace()).run(forward, feed=feed, fetch_list=[LOSS_NAME])
    if not np.allclose(value, np.load(legacy / "loss.npy"), rtol=1e-6):
        raise ValueError(f"{row_id}: the translated program computes another loss")
    np.save(out / "loss.npy", value)
    forward_ops = [name for name in op_names(forward.global_block().ops) if name != "pd_op.fetch"]
    record = {"row": row_id, "family": meta["family"], "code": meta["code"], "paddle_version": paddle.__version__,
              "loss": LOSS_NAME, "description": f"tests/data/paddle/layers/{row_id}/forward.pb through paddle's "
                                                f"translate_to_pir",
              "params_grads": [[name, f"{name}@GRAD"] for name in wrt],
              "pir_ops": forward_ops, "pir_backward_ops": backward_ops, **({"lods": lods} if lods else {})}
    (out / "meta.json").write_text(json.dumps(record, indent=1) + "\n")
    return f"loss {float(value):.6f}, ops {forward_ops}, backward {backward_ops}"


if __name__ == "__main__":
    paddle.enable_static()
    for row_id in sys.argv[1:]:
        print(f"{row_id}: {translate(row_id)}")
