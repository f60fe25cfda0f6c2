"""A program whose initialisers and dropout draw from Paddle's global generator after paddle.seed(42), and one op
with a seed of its own, as Paddle 3.3.1 writes them in legacy mode (legacy/: startup.pb, main.pb) and in PIR mode
(pir/: startup.json), with Paddle's values after its startup (params.npz) and, in legacy mode, its fetches after one
run of the main program that follows (fetched.npz): gradc seeded with 42 must draw the same. In legacy mode also a
program of the other random ops (dists/: startup.pb, main.pb, feed.npz, fetched.npz, meta.json), run after
paddle.seed(42) with no startup draws, and in PIR mode a program each (dists_pir/, build_dists says why). And
draws.npz: eager initialisers' float32 and float64 draws (uniform, normal, truncated normal with narrow and wide
bounds) and a dropout's outputs in training and inference, each after paddle.seed(42). Not part of the package: it
needs paddlepaddle.

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


def build_dists(pir: bool) -> None:
    """poisson, binomial, standard_gamma, dirichlet, exponential, rrelu, gumbel_softmax, fractional max pooling,
    class_center_sample and nce's three samplers, in float32 and float64. Legacy: one program, the ops one after
    another from the global engine (or a seed of their own), so their values and the engine's position after each must
    be Paddle's. PIR: a program an op (main_<key>.json, its value fetched as <key>), each run after paddle.seed(42):
    Paddle's PIR interpreter orders independent ops as it likes (threads, or its own serial order), and it leaves out
    class_center_sample (its API reads no seed in PIR: random_device) and nce (a legacy op)."""
    import paddle
    import paddle.nn.functional as F
    from paddle.base import core

    paddle.enable_static()
    data = paddle.static.data
    draws = {"poisson": lambda: paddle.poisson(data("rates", [60], "float32")),
             "binomial": lambda: paddle.binomial(data("count", [50], "int64"), data("prob", [50], "float32")),
             "binomial64": lambda: paddle.binomial(data("count64", [20], "int64"), data("prob64", [20], "float64")),
             "gamma": lambda: paddle.standard_gamma(data("alpha", [60], "float32")),
             "gamma64": lambda: paddle.standard_gamma(data("alpha64", [30], "float64")),
             "dirichlet": lambda: paddle.distribution.Dirichlet(data("concentration", [12, 5], "float32")).sample(),
             "exponential": lambda: paddle.tensor.random.exponential_(data("ones", [100], "float32"), 1.5),
             "rrelu": lambda: F.rrelu(data("wave", [80], "float32"), 0.1, 0.3, training=True),
             "gumbel": lambda: F.gumbel_softmax(data("logits", [20, 5], "float32"), 0.7),
             "pooled": lambda: F.fractional_max_pool2d(data("image", [1, 2, 9, 9], "float32"), 4)}
    feed = {"rates": np.linspace(0.1, 30, 60, dtype=np.float32), "count": np.arange(50) % 25 * 4,
            "prob": np.linspace(0.02, 0.98, 50, dtype=np.float32), "count64": np.arange(20) * 7,
            "prob64": np.linspace(0.05, 0.95, 20), "alpha": np.linspace(0.05, 6, 60, dtype=np.float32),
            "alpha64": np.linspace(0.1, 9, 30),
            "concentration": np.linspace(0.2, 4, 60, dtype=np.float32).reshape(12, 5),
            "ones": np.ones(100, np.float32), "wave": np.sin(np.arange(80, dtype=np.float32)),
            "logits": np.cos(np.arange(100, dtype=np.float32)).reshape(20, 5),
            "image": np.sin(np.arange(162, dtype=np.float32) * 1.7).reshape(1, 2, 9, 9),
            "labels": np.array([3, 17, 3, 25, 8, 17, 39, 0, 8, 12]),
            "rows": np.sin(np.arange(48, dtype=np.float32)).reshape(6, 8),
            "targets": np.array([[1], [5], [7], [29], [0], [5]])}
    executor = paddle.static.Executor(paddle.CPUPlace())
    out = OUT / ("dists_pir" if pir else "dists")
    out.mkdir(parents=True, exist_ok=True)
    if pir:
        fetched = {}
        for key, draw in draws.items():
            main = paddle.static.Program()
            with paddle.static.program_guard(main, paddle.static.Program()):
                value = draw()
            used = {op.attrs()["name"] for op in main.global_block().ops if op.name() == "pd_op.data"}
            paddle.seed(SEED)
            fetched[key] = executor.run(main, feed={k: v for k, v in feed.items() if k in used}, fetch_list=[value])[0]
            mapping = paddle.pir.IrMapping()
            program = main.clone(mapping)
            with paddle.static.program_guard(program):
                paddle._pir_ops.fetch(mapping.look_up(value), key, 0).persistable = True
            core.serialize_pir_program(program, str(out / f"main_{key}.json"), True, False, True)
        names = {key: key for key in draws}
    else:
        main, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main, startup):
            fetch = {key: draw() for key, draw in draws.items()}
            main.random_seed = 11   # class_center_sample's own seed (fix_seed); without it Paddle asks random_device
            fetch["remapped"], fetch["centers"] = F.class_center_sample(data("labels", [10], "int64"), 40, 20)
            main.random_seed = 0
            fetch.update(_nce_samplers(main, data("rows", [6, 8], "float32"), data("targets", [6, 1], "int64")))
        executor.run(startup)
        paddle.seed(SEED)
        values = executor.run(main, feed=feed, fetch_list=list(fetch.values()))
        fetched = dict(zip(fetch, values))
        (out / "main.pb").write_bytes(main.desc.serialize_to_string())
        (out / "startup.pb").write_bytes(startup.desc.serialize_to_string())   # nce's weights: assigned, not drawn
        names = {key: value if isinstance(value, str) else value.name for key, value in fetch.items()}
    np.savez(out / "feed.npz", **feed)
    np.savez(out / "fetched.npz", **fetched)
    (out / "meta.json").write_text(json.dumps({"seed": SEED, "fetch": names}, indent=1) + "\n")


def _nce_samplers(main, rows, labels) -> dict:
    """nce with each of its samplers, its weights assigned (not drawn): the sampled labels and the cost."""
    import paddle

    fetch = {}
    weights = np.cos(np.arange(240, dtype=np.float32)).reshape(30, 8)
    # seeds of their own: with seed 0 Paddle's samplers seed themselves from std::random_device
    for name, sampler, seed in (("nce_uniform", "uniform", 5), ("nce_log_uniform", "log_uniform", 3),
                                ("nce_custom", "custom_dist", 9)):
        cost = paddle.static.nn.nce(rows, labels, 30, num_neg_samples=5, sampler=sampler, seed=seed,
                                    custom_dist=np.linspace(1, 3, 30) / np.linspace(1, 3, 30).sum(),
                                    param_attr=paddle.nn.initializer.Assign(weights), bias_attr=False)
        nce_op = next(op for op in reversed(main.global_block().ops) if op.type == "nce")
        fetch[name] = nce_op.output("SampleLabels")[0]
        fetch[name + "_cost"] = cost
    return fetch


def build_all(pir: bool) -> None:
    build(pir)
    build_dists(pir)


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
    in_both_modes(__file__, build_all)
