"""Run the programs gradc compiles from the op fixtures (tests/data/paddle/ops) in a real PaddlePaddle and
compare the gradients with Paddle's own: checks that Paddle loads and executes what gradc writes. Two steps,
the first with gradc's Python, the second with Paddle's:

    .venv/bin/python tools/run_op_fixtures_in_paddle.py --compile /tmp/compiled
    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/run_op_fixtures_in_paddle.py /tmp/compiled

Random layers (dropout in training) are skipped: their draws differ between runs.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "ops"


def _cases():
    for family in sorted(p for p in ROOT.iterdir() if p.is_dir()):
        for meta in json.loads((family / "cases.json").read_text())["cases"]:
            if "random" not in meta:
                yield family, meta


def compile_all(out: Path) -> None:
    import gradc
    for family, meta in _cases():
        program = gradc.load(family / f"{meta['name']}.pb")
        gradc.append_backward(program, loss=meta["loss"])
        (out / family.name).mkdir(parents=True, exist_ok=True)
        gradc.save(program, out / family.name / f"{meta['name']}.pb")


def run_all(compiled: Path) -> int:
    import paddle
    from paddle.base import framework
    paddle.enable_static()
    failed = []
    for family, meta in _cases():
        with np.load(family / "values.npz") as archive:
            prefix = meta["name"] + "/"
            values = {k[len(prefix):]: archive[k] for k in archive.files if k.startswith(prefix)}
        grads = {k[5:]: v for k, v in values.items() if k.startswith("grad/")}
        program = framework.Program.parse_from_string((compiled / family.name / f"{meta['name']}.pb").read_bytes())
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            for name, value in values.items():
                if name.startswith("param/"):
                    scope.var(name[6:]).get_tensor().set(value, paddle.CPUPlace())
            feed = {k[5:]: v for k, v in values.items() if k.startswith("feed/")}
            results = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed, fetch_list=list(grads))
        differ = [name for name, value in zip(grads, results) if not np.allclose(value, grads[name], 1e-5, 1e-6)]
        if differ:
            failed.append(f"{family.name}/{meta['name']}: {differ}")
    print(f"Paddle {paddle.__version__} ran {len(list(_cases()))} compiled programs; gradients differ from "
          f"Paddle's own in {len(failed)}" + "".join(f"\n  {line}" for line in failed))
    return 1 if failed else 0


if __name__ == "__main__":
    if sys.argv[1] == "--compile":
        compile_all(Path(sys.argv[2]))
    else:
        sys.exit(run_all(Path(sys.argv[1])))
