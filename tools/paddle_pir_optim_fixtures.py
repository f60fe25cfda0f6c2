"""Build PIR training fixtures with optimizers with a real PaddlePaddle 3.x in its default PIR mode, into
tests/data/paddle/pir/optim_<name>/: Paddle's own training program (forward, backward and the update ops of
`Optimizer.minimize`, the loss fetched as "loss") as train.json.gz and its startup program as startup.json.gz;
every persistable after the startup program (init.npz: parameters, accumulators, learning rate); three
batches (feeds.npz); Paddle's loss at each step (losses.npy) and every persistable after the last (final.npz).
Not part of the package.

    /path/to/paddle/python tools/paddle_pir_optim_fixtures.py tests/data/paddle/pir [name ...]
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle.base import core

STEPS = 3
OPTIMIZERS = {
    "sgd": lambda: paddle.optimizer.SGD(0.1),
    "momentum": lambda: paddle.optimizer.Momentum(0.1, momentum=0.8, use_nesterov=True),
    "adam": lambda: paddle.optimizer.Adam(0.05, beta1=0.85, beta2=0.99, epsilon=1e-6),
    "adamw": lambda: paddle.optimizer.AdamW(0.05, weight_decay=0.02),
    "adagrad": lambda: paddle.optimizer.Adagrad(0.1),
    "adamax": lambda: paddle.optimizer.Adamax(0.05),
    "rmsprop": lambda: paddle.optimizer.RMSProp(0.02, centered=True, momentum=0.5),
    "adadelta": lambda: paddle.optimizer.Adadelta(0.5),
    "lamb": lambda: paddle.optimizer.Lamb(0.05),
    "nadam": lambda: paddle.optimizer.NAdam(0.05),
    "radam": lambda: paddle.optimizer.RAdam(0.05),
    "rprop": lambda: paddle.optimizer.Rprop(0.05),
    "clip_global_norm": lambda: paddle.optimizer.SGD(0.1, grad_clip=paddle.nn.ClipGradByGlobalNorm(0.5)),
    "clip_norm": lambda: paddle.optimizer.SGD(0.1, grad_clip=paddle.nn.ClipGradByNorm(0.3)),
}


def persistable_names(program) -> list[str]:
    names = []
    for op in program.global_block().ops:
        if op.name() == "builtin.parameter":
            names.append(op.attrs()["parameter_name"])
        elif op.name() == "pd_op.data" and op.result(0).persistable:
            names.append(op.attrs()["name"])
    return names


def build(name: str, out_dir: Path, seed: int = 2024) -> None:
    paddle.enable_static()
    paddle.seed(seed)
    rng = np.random.default_rng(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():   # linear_0 in every case
        x = paddle.static.data("x", [4, 6], "float32")
        label = paddle.static.data("label", [4, 1], "int64")
        hidden = F.relu(paddle.nn.Linear(6, 8)(x))
        loss = paddle.mean(F.cross_entropy(paddle.nn.Linear(8, 3)(hidden), label))
        OPTIMIZERS[name]().minimize(loss)
        paddle._pir_ops.fetch(loss, "loss", 0).persistable = True
    out = out_dir / f"optim_{name}"
    out.mkdir(parents=True, exist_ok=True)
    for program, stem in ((main, "train"), (startup, "startup")):   # gzipped, as backward.json.gz (26 KB)
        raw = out / f"{stem}.json"
        core.serialize_pir_program(program, str(raw), True, False, True)
        (out / f"{stem}.json.gz").write_bytes(gzip.compress(raw.read_bytes(), mtime=0))
        raw.unlink()
    feeds = {"x": rng.standard_normal((STEPS, 4, 6)).astype("float32"),
             "label": rng.integers(0, 3, (STEPS, 4, 1)).astype("int64")}
    executor, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    executor.run(startup)
    names = persistable_names(main)
    values = lambda: {n: np.array(scope.find_var(n).get_tensor()) for n in names}  # noqa: E731
    init, losses = values(), []
    for step in range(STEPS):
        fetched = executor.run(main, feed={k: v[step] for k, v in feeds.items()}, fetch_list=[])
        losses.append(float(np.asarray(fetched[0])))
    np.savez(out / "init.npz", **init)
    np.savez(out / "feeds.npz", **feeds)
    np.save(out / "losses.npy", np.array(losses, "float32"))
    np.savez(out / "final.npz", **values())
    ops = sorted({op.name() for op in main.global_block().ops})
    meta = {"case": f"optim_{name}", "seed": seed, "paddle_version": paddle.__version__, "loss": "loss",
            "steps": STEPS, "description": f"linear(6->8) -> relu -> linear(->3) -> cross entropy, {STEPS} steps "
            f"of {OPTIMIZERS[name]().__class__.__name__}", "pir_ops": ops}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"optim_{name}: losses {losses}, {len(names)} persistables, ops {ops}")


if __name__ == "__main__":
    for chosen in sys.argv[2:] or OPTIMIZERS:
        build(chosen, Path(sys.argv[1]))
