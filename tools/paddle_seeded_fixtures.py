"""A program whose initialisers and dropout draw from Paddle's global generator after paddle.seed(42), and one op
with a seed of its own, as Paddle 3.3.1 writes them in legacy mode (legacy/: startup.pb, main.pb) and in PIR mode
(pir/: startup.json), with Paddle's values after its startup (params.npz) and, in legacy mode, its fetches after one
run of the main program that follows (fetched.npz): gradc seeded with 42 must draw the same. And draws.npz: eager
initialisers' float32 and float64 draws (uniform, normal, truncated normal with narrow and wide bounds) and a
dropout's outputs in training and inference, each after paddle.seed(42). Not part of the package: it needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_seeded_fixtures.py   (both modes, each in a child process)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from suite_export import in_both_modes

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "seeded"
SEED = 42
FETCH = ["hidden", "dropped", "own_seed", "coins", "picks", "sampled", "shuffled", "recurrent", "loss"]
# the names Paddle gives them in both modes
PARAMS = ["linear_0.w_0", "linear_0.b_0", "embedding_0.w_0", "linear_1.w_0"]


def build(pir: bool) -> None:
    import paddle
    from paddle.base import core

    paddle.enable_static()
    paddle.seed(SEED)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [4, 6], "float32")
        ids = paddle.static.data("ids", [4], "int64")
        hidden = paddle.nn.Linear(6, 40)(x)   # XavierUniform: a uniform draw
        embedded = paddle.nn.Embedding(10, 40, weight_attr=paddle.nn.initializer.Normal(0.0, 0.5))(ids)
        hidden = paddle.nn.Linear(40, 40, weight_attr=paddle.nn.initializer.TruncatedNormal(0.0, 0.5, -0.4, 0.8))(
            hidden)   # one uniform draw an element, through Paddle's inverse CDF
        dropped = paddle.nn.functional.dropout(hidden + embedded, 0.3)
        own_seed = paddle.uniform([3, 5], min=-1.0, max=1.0, seed=7)   # a seed of its own: not the global one
        coins = paddle.bernoulli(paddle.static.data("p", [12], "float32"))   # the global engine after the dropout
        picks = paddle.randint(3, 100003, [40])   # Lemire's multiply-shift, a word an id
        weights = paddle.static.data("weights", [2, 30], "float32")
        sampled = paddle.concat([paddle.multinomial(weights, 50, replacement=True),
                                 paddle.multinomial(weights, 10, replacement=False)], axis=1)
        shuffled = paddle.concat([paddle.randperm(10), paddle.randperm(37)])   # std::shuffle, two positions a draw
        recurrent, _ = paddle.nn.LSTM(6, 4, num_layers=2, dropout=0.5, direction="bidirect")(
            paddle.reshape(x, [2, 2, 6]))   # the rnn op's one mask between its layers
        loss = paddle.mean(dropped * dropped) + paddle.mean(own_seed)
    out = OUT / ("pir" if pir else "legacy")
    out.mkdir(parents=True, exist_ok=True)
    if pir:
        core.serialize_pir_program(startup, str(out / "startup.json"), True, False, True)
    else:
        (out / "startup.pb").write_bytes(startup.desc.serialize_to_string())
        (out / "main.pb").write_bytes(main.desc.serialize_to_string())
    feed = {"x": np.linspace(-1, 1, 24, dtype=np.float32).reshape(4, 6), "ids": np.array([1, 3, 5, 3]),
            "p": np.linspace(0.02, 0.98, 12, dtype=np.float32),
            "weights": np.abs(np.sin(np.arange(60, dtype=np.float32))).reshape(2, 30)}
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    scope = paddle.static.global_scope()
    params = {name: np.array(scope.find_var(name).get_tensor()) for name in PARAMS}
    np.savez(out / "params.npz", **params)
    if pir:   # its main program holds no fetch: the startup's draws are compared
        return
    fetched = executor.run(main, feed=feed, fetch_list=[hidden, dropped, own_seed, coins, picks, sampled,
                                                              shuffled, recurrent, loss])
    np.savez(out / "feed.npz", **feed)
    np.savez(out / "fetched.npz", **dict(zip(FETCH, fetched)))
    names = {"hidden": hidden, "dropped": dropped, "own_seed": own_seed, "coins": coins, "picks": picks,
             "sampled": sampled, "shuffled": shuffled, "recurrent": recurrent, "loss": loss}
    (out / "meta.json").write_text(json.dumps({"seed": SEED, "fetch": {key: value.name for key, value in
                                                                       names.items()}}, indent=1) + "\n")


# name: (initializer, its arguments); each fills DRAWS values after paddle.seed(SEED)
INITIALISERS = {"uniform": ("Uniform", (-0.3, 0.7)), "normal": ("Normal", (0.1, 0.7)),
                "truncated": ("TruncatedNormal", (0.1, 0.7, -0.5, 2.0)),
                "truncated_wide": ("TruncatedNormal", (0.0, 1.0, -5.0, 5.0))}
DRAWS = 3000
DROPOUT = 0.1


def eager_draws() -> None:
    import paddle
    draws = {}
    for dtype in ("float32", "float64"):
        for name, (initializer, arguments) in INITIALISERS.items():
            paddle.seed(SEED)
            tensor = paddle.empty([DRAWS], dtype=dtype)
            getattr(paddle.nn.initializer, initializer)(*arguments)(tensor)
            draws[f"{name}_{dtype}"] = tensor.numpy()
        x = paddle.to_tensor(np.linspace(-3, 3, DRAWS).reshape(-1, 3), dtype=dtype)   # kept values over 1 - p
        paddle.seed(SEED)
        draws[f"dropout_{dtype}"] = paddle.nn.functional.dropout(x, DROPOUT).numpy()
        draws[f"dropout_inference_{dtype}"] = paddle.nn.functional.dropout(x, DROPOUT, training=False,
                                                                           mode="downscale_in_infer").numpy()
    np.savez_compressed(OUT / "draws.npz", **draws)
    (OUT / "draws.json").write_text(json.dumps({"seed": SEED, "initialisers": INITIALISERS, "dropout": DROPOUT},
                                               indent=1) + "\n")


if __name__ == "__main__":
    if "--child" not in sys.argv:
        eager_draws()
    in_both_modes(__file__, build)
