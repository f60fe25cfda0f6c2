"""Paddle's own AMP O2 training programs in PIR mode: paddle.amp.decorate(level="O2", dtype="bfloat16") casts the
model's parameters to bfloat16 in the startup program (amp/auto_cast.py's _pir_transform: pd_op.cast, then
update_parameter, which Paddle writes as builtin.set_parameter; on CPU auto_cast O2 still computes in float32, each
parameter cast where it is read), and an optimizer with multi_precision=True keeps a float32 master weight of each
(optimizer.py's _create_master_weight: a cast whose set_persistable_value Paddle writes as builtin.shadow_output,
read in the main program as a persistable pd_op.data) for its update op (sgd_ with master_param) to update and round
into the bfloat16 parameter. Paddle 3.3.1's CPU build has bfloat16 kernels for SGD only (momentum_, adam_, adamw_
refuse a bfloat16 param) and its bfloat16 matmul_grad crashes (oneDNN), so the model is elementwise,
tanh(x * w) * v + b with bfloat16 w, v, b, the loss a mean squared error. Paddle's CPU sgd_ ignores the master
weight: it steps the bfloat16 parameter in bfloat16 and leaves the master at its startup value
(tests/test_amp_o2.py). Written like tools/paddle_pir_optim_fixtures.py's cases to tests/data/paddle/pir/<case>/
(train.json.gz, startup.json.gz, init.npz, feeds.npz, losses.npy, final.npz; bfloat16 values as their uint16 bits,
named in meta.json). Not part of the package: it needs paddlepaddle.

    FLAGS_use_mkldnn=0 /work/paddle-venv/bin/python tools/paddle_pir_amp_o2.py tests/data/paddle/pir
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle_pir_optim_fixtures import STEPS, persistable_names
from paddle_programs import write_pir_gz


class Elementwise(paddle.nn.Layer):
    def __init__(self):
        super().__init__()
        self.w = self.create_parameter([6])
        self.v = self.create_parameter([6])
        self.b = self.create_parameter([6], is_bias=True)

    def forward(self, x):
        return paddle.tanh(x * self.w) * self.v + self.b


CASES = {"amp_o2_sgd_bf16": lambda params: paddle.optimizer.SGD(0.5, parameters=params, multi_precision=True)}


def programs(case: str, seed: int):
    paddle.seed(seed)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup), paddle.utils.unique_name.guard():
        x = paddle.static.data("x", [4, 6], "float32")
        y = paddle.static.data("y", [4, 6], "float32")
        model = Elementwise()
        model, optimizer = paddle.amp.decorate(models=model, optimizers=CASES[case](model.parameters()),
                                               level="O2", dtype="bfloat16")
        with paddle.amp.auto_cast(level="O2", dtype="bfloat16"):
            loss = ((model(x).astype("float32") - y) ** 2).mean()
        optimizer.minimize(loss)
        paddle._pir_ops.fetch(loss, "loss", 0).persistable = True
    return main, startup


def build(case: str, out_dir: Path, seed: int = 2025) -> None:
    paddle.enable_static()
    main, startup = programs(case, seed)
    out = out_dir / case   # not optim_*: tests/test_pir_optimizers.py's cases keep Paddle's numbers, this one not
    out.mkdir(parents=True, exist_ok=True)
    for program, stem in ((main, "train"), (startup, "startup")):
        write_pir_gz(program, out / f"{stem}.json")
    rng = np.random.default_rng(seed)
    feeds = {"x": rng.standard_normal((STEPS, 4, 6)).astype("float32"),
             "y": rng.standard_normal((STEPS, 4, 6)).astype("float32")}
    executor, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    executor.run(startup)
    names = persistable_names(main)
    values = lambda: {n: np.array(scope.find_var(n).get_tensor()) for n in names}  # noqa: E731
    init, losses = values(), []
    for step in range(STEPS):
        fetched = executor.run(main, feed={k: v[step] for k, v in feeds.items()}, fetch_list=[])
        losses.append(float(np.asarray(fetched[0])))
    final = values()
    np.savez(out / "init.npz", **init)
    np.savez(out / "feeds.npz", **feeds)
    np.save(out / "losses.npy", np.array(losses, "float32"))
    np.savez(out / "final.npz", **final)
    bfloat16 = sorted(n for n in names if init[n].dtype == np.uint16)
    ops = sorted({op.name() for op in main.global_block().ops})
    meta = {"case": case, "seed": seed, "paddle_version": paddle.__version__, "loss": "loss",
            "steps": STEPS, "bfloat16": bfloat16, "pir_ops": ops,
            "startup_ops": sorted({op.name() for op in startup.global_block().ops}),
            "description": f"tanh(x * w) * v + b, w, v, b bfloat16 under paddle.amp.decorate O2, {STEPS} steps of SGD "
                           "with multi_precision (float32 master weights)"}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print(f"{case}: losses {losses}, bfloat16 {bfloat16}, ops {ops}")


if __name__ == "__main__":
    for chosen in sys.argv[2:] or CASES:
        build(chosen, Path(sys.argv[1]))
