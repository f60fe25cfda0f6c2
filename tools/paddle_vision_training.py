"""Training fixtures of the vision models (tools/coverage/tiny_models.py): Paddle builds each tiny model with a
cross-entropy loss in legacy static mode, Adam's minimize() appends the backward and the updates, and the
program trains a few steps on one batch. Not part of the package: it needs paddlepaddle 3.3.1.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_vision_training.py [MODEL ...]

tests/data/paddle/vision_train/<model>/ holds
  forward.pb     the forward program with the loss, before minimize() (what gradc compiles)
  feed.npz       the batch (img, label), the same every step
  init.npz       every parameter after the startup program (batch norm's running statistics too)
  grads.npz      <param>@GRAD of the first step
  losses.npy     the loss of each step; final.npz: every parameter after the last step
  losses64.npy, grads64.npz, final64.npz   Paddle's float64 run of the same case, kept where Paddle's float32
                 rounding exceeds half of rtol 1e-5 / atol 1e-6 (another float32 run, gradc's, rounds as much
                 again: their difference can reach the whole tolerance)
  meta.json      the loss var, Adam's hyper-parameters, the op types of Paddle's training program
  startup.pb     (a model with dropout on, tiny_models.DROPOUT_MODELS) Paddle's startup program, which Paddle ran
                 after paddle.seed(SEED): gradc runs it seeded alike, then the steps' dropouts draw Paddle's masks
                 (Paddle's float64 run sets the generator's state the float32 run had after its startup)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from coverage.fixture_io import fresh_dir, serialize
from coverage.tiny_models import CLASSES, DROPOUT_MODELS, MODELS, Model, in_dtype
from paddle.utils import unique_name

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "vision_train"
SEED, STEPS = 7, 3
# epsilon 1e-8 would divide each gradient by its own size: a weight whose true gradient is 0 (a bias before a
# train-mode batch norm) then moves by +-lr on float32 noise alone, in any run; 1e-4 keeps the step smooth
ADAM = {"beta1": 0.9, "beta2": 0.999, "epsilon": 1e-4}


def batch(model: Model, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"img": rng.standard_normal(model.image).astype("float32"),
            "label": rng.integers(0, CLASSES, (model.image[0], 1)).astype("int64")}


def build(model: Model, dtype: str):
    """-> main (after minimize), startup, the forward program before minimize, the loss var, the parameters."""
    paddle.set_default_dtype(dtype)
    main, startup = paddle.static.Program(), paddle.static.Program()
    try:
        with unique_name.guard(), paddle.static.program_guard(main, startup):
            img = paddle.static.data("img", list(model.image), dtype)
            label = paddle.static.data("label", [model.image[0], 1], "int64")
            with in_dtype(dtype):
                net = model.build()
            loss = paddle.nn.functional.cross_entropy(net(img), label)
            forward = main.clone()
            paddle.optimizer.Adam(model.learning_rate, **ADAM).minimize(loss)
    finally:
        paddle.set_default_dtype("float32")
    return main, startup, forward, loss.name, sorted(p.name for p in main.all_parameters())


def train(main, startup, loss: str, params: list[str], feed: dict, init: dict | None = None, rng_state=None):
    """Run the startup program (seeded), set ``init`` and the generator's ``rng_state`` when given, train STEPS steps
    on ``feed``. -> the parameters before, the first step's gradients, the losses, the parameters after, the
    generator's state after the startup program."""
    block = main.global_block()
    grads = [f"{p}@GRAD" for p in params if block.has_var(f"{p}@GRAD")]
    scope, executor = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        paddle.seed(SEED)
        executor.run(startup)
        for name, value in (init or {}).items():
            scope.find_var(name).get_tensor().set(value, paddle.CPUPlace())
        if rng_state is not None:
            paddle.set_rng_state(rng_state)
        after_startup = paddle.get_rng_state()
        before = {p: np.array(scope.find_var(p).get_tensor()) for p in params}
        losses, first = [], {}
        for step in range(STEPS):
            values = executor.run(main, feed=feed, fetch_list=[loss, *grads] if step == 0 else [loss])
            losses.append(values[0].reshape(()))
            first = first or dict(zip(grads, values[1:]))
        after = {p: np.array(scope.find_var(p).get_tensor()) for p in params}
    return before, first, np.stack(losses), after, after_startup


def close(a: dict, b: dict) -> bool:
    return all(np.allclose(a[k], b[k], rtol=5e-6, atol=5e-7) for k in a)


def build_model(name: str, model: Model, out: Path) -> str:
    feed = batch(model, SEED)
    main, startup, forward, loss, params = build(model, "float32")
    init, grads, losses, final, rng_state = train(main, startup, loss, params, feed)
    main64, startup64, _, _, _ = build(model, "float64")
    cast = {k: v.astype("float64") if v.dtype.kind == "f" else v for k, v in feed.items()}
    init64 = {k: v.astype("float64") for k, v in init.items()}
    _, grads64, losses64, final64, _ = train(main64, startup64, loss, params, cast, init64, rng_state)
    keep64 = not (close(grads64, grads) and close(final64, final) and close({"l": losses64}, {"l": losses}))
    out = fresh_dir(out)
    (out / "forward.pb").write_bytes(serialize(forward))
    if model.dropout:
        (out / "startup.pb").write_bytes(serialize(startup))
    np.savez_compressed(out / "feed.npz", **feed)
    np.savez_compressed(out / "init.npz", **init)
    np.savez_compressed(out / "grads.npz", **grads)
    np.save(out / "losses.npy", losses)
    np.savez_compressed(out / "final.npz", **final)
    if keep64:
        np.savez_compressed(out / "grads64.npz", **grads64)
        np.save(out / "losses64.npy", losses64)
        np.savez_compressed(out / "final64.npz", **final64)
    meta = {"model": name, "about": model.about, "paddle_version": paddle.__version__, "seed": SEED,
            "steps": STEPS, "dropout": model.dropout, "optimizer": "adam",
            "hyperparameters": {"learning_rate": model.learning_rate, **ADAM}, "loss": loss, "params": params,
            "trainable": sorted(p.name for p in main.all_parameters() if p.trainable),
            "float64_kept": keep64, "ops_train": [op.type for op in main.global_block().ops]}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    size = sum(int(np.prod(v.shape)) for v in init.values())
    return f"{size} parameter values, losses {np.round(losses, 5).tolist()}" + (", float64 kept" if keep64 else "")


def main() -> None:
    paddle.enable_static()
    models = {**MODELS, **DROPOUT_MODELS}
    for name in sys.argv[1:] or models:
        print(f"{name}: {build_model(name, models[name], OUT / name)}", flush=True)


if __name__ == "__main__":
    main()
