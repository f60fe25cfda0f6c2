"""Run gradc's schedule-as-ops training programs (tests/data/paddle/schedule_ops, from
tools/gradc_schedule_programs.py) in Paddle 3.3.1 as they are: startup, the mlp fixture's parameters, then its
batch each step. Records the learning rate each step used and the loss in paddle.npz per case.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/run_schedule_ops_in_paddle.py tests/data/paddle/schedule_ops
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle

STEPS = 9


def run(case: Path, feed: dict, params: dict) -> dict:
    main = paddle.static.Program.parse_from_string((case / "train.pb").read_bytes())
    startup = paddle.static.Program.parse_from_string((case / "startup.pb").read_bytes())
    executor = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        for name, value in params.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        losses, rates = [], []
        for _ in range(STEPS):
            loss, rate = executor.run(main, feed=feed, fetch_list=["mean_0.tmp_0", "learning_rate_0"])
            losses.append(float(loss))
            rates.append(float(rate))
    return {"losses": np.array(losses, np.float32), "lrs": np.array(rates, np.float32)}


def main(directory: Path) -> None:
    paddle.enable_static()
    mlp = directory.parent / "mlp"
    feed, params = dict(np.load(mlp / "feed.npz")), dict(np.load(mlp / "params.npz"))
    for case in sorted(p for p in directory.iterdir() if p.is_dir()):
        results = run(case, feed, params)
        np.savez(case / "paddle.npz", **results)
        print(case.name, results["lrs"])


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/schedule_ops"))
