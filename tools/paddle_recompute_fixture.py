"""A training program Paddle's RecomputeOptimizer wrote (legacy static mode): an MLP with two dropouts, checkpoints
that put both in recomputed segments, SGD. Recompute inserts a `seed` op before each dropout, whose Seed input both the
forward and the recomputed dropout read: with the dropouts' fix_seed and seed set (11 and 12, as here) Paddle's masks
are reproducible; with seed 0 Paddle draws the seed from std::random_device. Writes tests/data/paddle/recompute/:
train.pb (after minimize), feed.npz, params.npz (every persistable var after Paddle's startup), Paddle's losses of
two steps (losses.npy), its first step's gradients (grads.npz) and the parameters after (final.npz). Not part of the
package: it needs paddlepaddle 3.3.1.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_recompute_fixture.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import paddle
from coverage.fixture_io import serialize

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "recompute"
SEEDS = (11, 12)


def main() -> None:
    paddle.enable_static()
    paddle.seed(5)
    main_program, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main_program, startup):
        x = paddle.static.data("x", [4, 8], "float32")
        hidden = paddle.nn.functional.relu(paddle.static.nn.fc(x, 16))
        dropped = paddle.nn.functional.dropout(hidden, 0.3)
        second = paddle.nn.functional.dropout(paddle.nn.functional.relu(paddle.static.nn.fc(dropped, 16)), 0.5)
        out = paddle.static.nn.fc(second, 1)
        loss = paddle.mean(out * out)
        for op, seed in zip((op for op in main_program.global_block().ops if op.type == "dropout"), SEEDS):
            op._set_attr("fix_seed", True)
            op._set_attr("seed", seed)
        optimizer = paddle.incubate.optimizer.RecomputeOptimizer(paddle.optimizer.SGD(0.1))
        optimizer._set_checkpoints([hidden, second])
        optimizer.minimize(loss)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "train.pb").write_bytes(serialize(main_program))
    executor, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    executor.run(startup)
    params = sorted(p.name for p in main_program.all_parameters())
    persistable = sorted(v.name for v in main_program.list_vars() if v.persistable and v.name not in ("feed", "fetch"))
    np.savez(OUT / "params.npz", **{name: np.array(scope.find_var(name).get_tensor()) for name in persistable})
    feed = {"x": np.linspace(-1, 1, 32, dtype="float32").reshape(4, 8)}
    np.savez(OUT / "feed.npz", **feed)
    grads = [f"{name}@GRAD" for name in params]
    losses, first = [], {}
    for _ in range(2):
        values = executor.run(main_program, feed=feed, fetch_list=[loss.name, *grads])
        losses.append(values[0].reshape(()))
        first = first or dict(zip(grads, values[1:]))
    np.save(OUT / "losses.npy", np.stack(losses))
    np.savez(OUT / "grads.npz", **first)
    np.savez(OUT / "final.npz", **{name: np.array(scope.find_var(name).get_tensor()) for name in params})
    ops = [op.type for op in main_program.global_block().ops]
    (OUT / "meta.json").write_text(json.dumps({"loss": loss.name, "seeds": SEEDS, "ops": ops}, indent=1) + "\n")
    print(ops.count("seed"), "seed ops,", ops.count("dropout"), "dropouts; losses", [float(v) for v in losses])


if __name__ == "__main__":
    main()
