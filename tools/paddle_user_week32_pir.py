"""The PIR half of tools/paddle_user_week32.py (run it after that one, into the same directory): SimCLR as there, but
in Paddle 3's default PIR static mode with F.normalize itself (its PIR branch works) and LarsMomentumOptimizer's
minimize: simclr_pir_train.json (Paddle's training program, the loss fetched as "loss"), simclr_pir_init.npz (its
persistables after the startup program, the weights those of simclr_init.npz), Paddle's losses and the trained
weights (simclr_pir_steps.npz, keyed "STEP:NAME"), the first step's gradients (simclr_pir_grads.npz).

    FLAGS_enable_pir_api=1 /work/paddle-venv/bin/python tools/paddle_user_week32_pir.py tests/data/paddle/user_week32
"""

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_programs import persistable_values, write_pir_gz
from paddle_user_week32 import BATCH, DIM, SIMCLR_TEMP, STEPS, encoder, projector


def main(out: Path) -> None:
    paddle.enable_static()
    main_prog, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_prog, startup):
        x1, x2 = paddle.static.data("x1", [-1, DIM], "float32"), paddle.static.data("x2", [-1, DIM], "float32")
        z = F.normalize(projector("proj")(encoder("enc")(paddle.concat([x1, x2], 0))), axis=1)
        n = paddle.shape(z)[0]
        sim = paddle.matmul(z, z, transpose_y=True) / SIMCLR_TEMP - 1e9 * paddle.eye(n)
        labels = paddle.unsqueeze((paddle.arange(n) + n // 2) % n, 1)
        loss = F.cross_entropy(sim, labels)
        optimizer = paddle.incubate.optimizer.LarsMomentumOptimizer(0.1, 0.9, lars_weight_decay=5e-4,
                                                                   exclude_from_weight_decay=[".b"])
        _, pairs = optimizer.minimize(loss)
        paddle._pir_ops.fetch(loss, "loss", 0).persistable = True
        for index, (param, grad) in enumerate(pairs, 1):   # fetched by fetch ops: a fetch_list of them crashes
            paddle._pir_ops.fetch(grad, f"{param.name}@GRAD", index).persistable = True
    write_pir_gz(main_prog, out / "simclr_pir_train.json")
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    legacy = np.load(out / "simclr_init.npz")
    scope = paddle.static.global_scope()
    for name in legacy.files:   # the legacy run's initial weights, so both runs start alike
        if name.startswith(("enc", "proj")) and "velocity" not in name:
            scope.find_var(name).get_tensor().set(legacy[name], paddle.CPUPlace())
    np.savez_compressed(out / "simclr_pir_init.npz", **persistable_values(main_prog))
    data, losses, steps = np.load(out / "data.npz"), [], {}
    for step in range(STEPS):
        feed = {key: data[f"{step}:{key}"][:BATCH] for key in ("x1", "x2")}
        fetched = exe.run(main_prog, feed=feed, fetch_list=[])
        losses.append(float(fetched[0]))
        if step == 0:
            np.savez_compressed(out / "simclr_pir_grads.npz",
                                **{param.name: value for (param, _), value in zip(pairs, fetched[1:])})
        steps.update({f"{step}:{name}": value for name, value in persistable_values(main_prog).items()
                      if "velocity" not in name})
    np.savez_compressed(out / "simclr_pir_steps.npz", **steps)
    meta = json.loads((out / "meta.json").read_text())
    meta["simclr_pir"] = {"losses": losses}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
