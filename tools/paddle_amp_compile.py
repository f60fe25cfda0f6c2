"""Fixtures for `gradc compile --amp`: small models built with Paddle 3.3.1's layers in legacy static mode, each saved
as its plain float32 forward program (before decorate) and as the training program paddle.static.amp.decorate writes
for it, with the numbers Paddle's training of it gives.

Models: mlp (Linear 8 -> 16, relu, Linear 16 -> 4, cross_entropy), cnn (Conv2D 1 -> 4, BatchNorm2D, relu,
max_pool2d, flatten, Linear 64 -> 3, cross_entropy), block (Linear 8 -> 16, LayerNorm, softmax(h h^T / 4) h,
Linear + gelu, Linear to 1, mse_loss) and zoo (Embedding, Linear, tanh, transpose, exp, concat, gelu, split,
sigmoid, multiply, reshape, Linear, mse_loss: the lists' corners), cond (paddle.static.nn.cond of two branches) and
loop (paddle.static.nn.while_loop). Cases: (model, level, dtype, optimizer, the steps whose batch holds an inf).

The casts decorate writes depend on the ops the device runs in the format; a CPU build supports none and casts nothing,
so train.pb is written as a CUDA build writes it (tools/paddle_gpu_amp_static.py's CudaBuild). Paddle's CPU build
cannot run those float16 / bfloat16 programs (no float16 matmul_v2 or conv2d kernels, bfloat16 matmul_v2_grad
crashes), so the numbers are the CPU build's run of the same decorate (float32 with the loss-scaling ops; for cond
and loop at O2 its O1, which computes the same: its O2 program stops, "Tensor holds no memory"), same seed and
batches: the loss scale and counters are exact there, losses and weights the reference at the format's precision.

Into tests/data/paddle/amp_compile/<case>/: forward.pb.gz (float32, before decorate), train.pb.gz and startup.pb.gz
(the CUDA build's), init.npz (its persistables after Paddle's startup and, at O2, amp_init), feeds.npz (a batch per
step), final.npz (the CPU build's persistables after the last step), meta.json (losses, loss scale and counters per
step, options, the loss's name). Not part of the package: it needs paddlepaddle.

    PYTHONHASHSEED=0 FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_amp_compile.py

(the hash seed: cond orders a branch's inputs as a set; all cases in one run: the optimizers' name scopes count
across them).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle.static import amp
from paddle_gpu_amp_static import CudaBuild
from paddle_optimizer_fixtures import Persistables, serialize

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "amp_compile"
STEPS, BATCH, SEED = 6, 4, 21
SCALING = ("loss_scaling_0", "num_good_steps_0", "num_bad_steps_0")
OPTIONS = {"init_loss_scaling": 1024.0, "incr_every_n_steps": 2, "decr_every_n_nan_or_inf": 1, "incr_ratio": 2.0,
           "decr_ratio": 0.5}


def mlp(x, y):
    hidden = F.relu(paddle.nn.Linear(8, 16)(x))
    return F.cross_entropy(paddle.nn.Linear(16, 4)(hidden), y)


def cnn(x, y):
    conv = paddle.nn.Conv2D(1, 4, 3, padding=1)
    hidden = paddle.flatten(F.max_pool2d(F.relu(paddle.nn.BatchNorm2D(4)(conv(x))), 2), 1)
    return F.cross_entropy(paddle.nn.Linear(64, 3)(hidden), y)


def block(x, y):
    hidden = paddle.nn.LayerNorm(16)(paddle.nn.Linear(8, 16)(x))
    attended = paddle.matmul(F.softmax(paddle.matmul(hidden, hidden, transpose_y=True) / 4.0), hidden)
    return F.mse_loss(paddle.nn.Linear(16, 1)(F.gelu(paddle.nn.Linear(16, 16)(attended))), y)


def zoo(ids, y):
    """The lists' corners: an embedding (black at every level), tanh, transpose2, scale, concat, split, sigmoid and
    multiply (gray: they follow their inputs' writers), exp (black), gelu (on no list: float32)."""
    hidden = paddle.tanh(paddle.nn.Linear(8, 8)(paddle.nn.Embedding(10, 8)(ids)))
    turned = paddle.transpose(hidden, [0, 2, 1])
    joined = F.gelu(paddle.concat([turned, paddle.exp(turned * 0.1)], axis=1))
    first, second = paddle.split(joined, 2, axis=1)
    mixed = paddle.reshape(F.sigmoid(first) * second, [-1, 32])
    return F.mse_loss(paddle.nn.Linear(32, 1)(mixed), y)


def cond(x, y):
    """paddle.static.nn.cond: a conditional_block per branch (Linear and relu, or tanh and scale), joined by
    select_input; which runs depends on the batch."""
    hidden, inner = paddle.nn.Linear(8, 16)(x), paddle.nn.Linear(16, 16)
    out = paddle.static.nn.cond(paddle.mean(hidden) > 0, lambda: F.relu(inner(hidden)),
                                lambda: paddle.tanh(hidden) * 2.0)
    return F.mse_loss(paddle.nn.Linear(16, 1)(out), y)


def loop(x, y):
    """paddle.static.nn.while_loop: three steps of tanh(Linear(h)) in a while op's block."""
    hidden, inner = paddle.nn.Linear(8, 16)(x), paddle.nn.Linear(16, 16)
    limit = paddle.full([1], 3, "int64")
    _, hidden = paddle.static.nn.while_loop(lambda i, h: i < limit, lambda i, h: (i + 1, paddle.tanh(inner(h))),
                                            [paddle.full([1], 0, "int64"), hidden])
    return F.mse_loss(paddle.nn.Linear(16, 1)(hidden), y)


# model -> (its function, x: (shape, dtype, classes), y: (shape, dtype, classes)); classes None: normal floats
MODELS = {"mlp": (mlp, ([-1, 8], "float32", None), ([-1, 1], "int64", 4)),
          "cnn": (cnn, ([-1, 1, 8, 8], "float32", None), ([-1, 1], "int64", 3)),
          "block": (block, ([-1, 6, 8], "float32", None), ([-1, 6, 1], "float32", None)),
          "zoo": (zoo, ([-1, 4], "int64", 10), ([-1, 1], "float32", None)),
          "cond": (cond, ([-1, 8], "float32", None), ([-1, 1], "float32", None)),
          "loop": (loop, ([-1, 8], "float32", None), ([-1, 1], "float32", None))}
CASES = {
    "mlp_o1_float16_adam": ("mlp", "O1", "float16", lambda: paddle.optimizer.Adam(0.01), (2, 3)),
    "cnn_o1_float16_momentum": ("cnn", "O1", "float16", lambda: paddle.optimizer.Momentum(0.05, 0.9), (3,)),
    "mlp_o1_bfloat16_sgd": ("mlp", "O1", "bfloat16", lambda: paddle.optimizer.SGD(0.1), ()),
    "block_o2_float16_adam": ("block", "O2", "float16", lambda: paddle.optimizer.Adam(0.01), (4,)),
    "block_o2_bfloat16_adamw": ("block", "O2", "bfloat16", lambda: paddle.optimizer.AdamW(0.01, weight_decay=0.05),
                                ()),
    "zoo_o1_float16_adam": ("zoo", "O1", "float16", lambda: paddle.optimizer.Adam(0.01), (3,)),
    "zoo_o2_bfloat16_momentum": ("zoo", "O2", "bfloat16", lambda: paddle.optimizer.Momentum(0.05, 0.9), ()),
    "zoo_od_float16_sgd": ("zoo", "OD", "float16", lambda: paddle.optimizer.SGD(0.1), (2,)),
    "zoo_o1_float16_custom_adam": ("zoo", "O1", "float16", lambda: paddle.optimizer.Adam(0.01), (3,)),
    "cnn_o2_float16_momentum": ("cnn", "O2", "float16", lambda: paddle.optimizer.Momentum(0.05, 0.9), (1,)),
    "mlp_o2_bfloat16_sgd": ("mlp", "O2", "bfloat16", lambda: paddle.optimizer.SGD(0.1), ()),
    "block_o2_float16_custom_momentum": ("block", "O2", "float16", lambda: paddle.optimizer.Momentum(0.05, 0.9), (2,)),
    "mlp_o0_float16_adam": ("mlp", "O0", "float16", lambda: paddle.optimizer.Adam(0.01), (2,)),
    "block_o2_float16_master_adam": ("block", "O2", "float16", lambda: paddle.optimizer.Adam(0.01), (3,)),
    "zoo_o2_bfloat16_master_sgd": ("zoo", "O2", "bfloat16", lambda: paddle.optimizer.SGD(0.1), ()),
    "cond_o1_float16_adam": ("cond", "O1", "float16", lambda: paddle.optimizer.Adam(0.01), (2,)),
    "cond_o2_float16_sgd": ("cond", "O2", "float16", lambda: paddle.optimizer.SGD(0.1), (3,)),
    "loop_o2_float16_adam": ("loop", "O2", "float16", lambda: paddle.optimizer.Adam(0.01), (3,)),
    "loop_o1_float16_sgd": ("loop", "O1", "float16", lambda: paddle.optimizer.SGD(0.1), (2,)),
}
CUSTOM = {   # case -> decorate's custom lists (amp_lists=CustomOpLists(...))
    "zoo_o1_float16_custom_adam": {"custom_white_list": ["exp"], "custom_black_list": ["tanh", "matmul_v2"]},
    "block_o2_float16_custom_momentum": {"custom_white_list": ["softmax"], "custom_black_list": ["gelu", "matmul_v2"]},
}
MASTER_GRAD = {"block_o2_float16_master_adam", "zoo_o2_bfloat16_master_sgd"}   # decorate(..., master_grad=True)


def programs(case: str, cuda: bool):
    model, level, dtype, make, _ = CASES[case]
    if model in ("cond", "loop") and not cuda:   # the CPU build's O2 program with a sub-block stops (no memory);
        level = "O1"                             # float32 throughout, its O1 computes the same
    build, (x_shape, x_dtype, _), (y_shape, y_dtype, _) = MODELS[model]
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss = build(paddle.static.data("x", x_shape, x_dtype), paddle.static.data("y", y_shape, y_dtype))
        forward = main.clone()
        with CudaBuild() if cuda else contextlib.nullcontext():   # only the CUDA build's decorate casts
            lists = amp.CustomOpLists(**CUSTOM[case], dtype=dtype) if case in CUSTOM else None
            optimizer = amp.decorate(make(), lists, level=level, dtype=dtype,
                                     use_dynamic_loss_scaling=dtype == "float16",
                                     master_grad=case in MASTER_GRAD, **OPTIONS)
            optimizer.minimize(loss)
    return main, startup, optimizer, forward, loss.name


def batches(case: str) -> list[dict]:
    model, *_, bad = CASES[case]
    _, *specs = MODELS[model]
    rng = np.random.default_rng(SEED)
    feeds = []
    for step in range(STEPS):
        x, y = ((rng.integers(0, classes, [BATCH, *shape[1:]]) if classes else
                 rng.standard_normal([BATCH, *shape[1:]])).astype(dtype) for shape, dtype, classes in specs)
        if step in bad:   # an inf in the float input
            (x if x.dtype == np.float32 else y).flat[5 if x.dtype == np.float32 else 0] = np.inf
        feeds.append({"x": x, "y": y})
    return feeds


def cpu_run(main, startup, loss: str, feeds: list[dict]) -> tuple[dict, dict | None]:
    """Paddle's CPU build trains the CPU build's program: each step's loss and loss-scaling state, and every
    persistable after the last step; or, where the CPU build has no kernel (zoo at O2: its embedding table is
    bfloat16, whose check_finite_and_unscale and multi-precision momentum the CPU lacks), its error in meta."""
    scope, executor = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    record = {"losses": [], **{name: [] for name in SCALING}}
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        try:
            for feed in feeds:
                record["losses"].append(float(executor.run(main, feed=feed, fetch_list=[loss])[0]))
                for name in SCALING:
                    var = scope.find_var(name)
                    if var is not None:
                        record[name].append(np.asarray(var.get_tensor()).reshape(-1)[0].item())
        except (NotImplementedError, RuntimeError) as error:   # no kernel, or (a cond at O2) no value for an input
            return {"cpu_error": next(line.strip() for line in str(error).splitlines() if "Error:" in line)}, None
        return record, Persistables(main, scope).read()


def write(case: str) -> str:
    main, startup, optimizer, forward, loss = programs(case, cuda=True)
    scope, executor = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        if optimizer._use_pure_fp16:
            optimizer.amp_init(paddle.CPUPlace(), scope=scope)
        init = Persistables(main, scope).read()
    cpu_main, cpu_startup, _, _, _ = programs(case, cuda=False)
    # the CPU build computes every op in float32 (O2 lowers an embedding's table and casts it back: zoo's)
    cpu_casts = [op.type for op in cpu_main.global_block().ops].count("cast")
    feeds = batches(case)
    record, final = cpu_run(cpu_main, cpu_startup, loss, feeds)
    out = OUT / case
    out.mkdir(parents=True, exist_ok=True)
    for name, program in (("forward.pb.gz", forward), ("train.pb.gz", main), ("startup.pb.gz", startup)):
        (out / name).write_bytes(gzip.compress(serialize(program), mtime=0))
    np.savez_compressed(out / "init.npz", **init)
    np.savez_compressed(out / "feeds.npz", **{key: np.stack([f[key] for f in feeds]) for key in feeds[0]})
    if final is not None:
        np.savez_compressed(out / "final.npz", **final)
    model, level, dtype, _, bad = CASES[case]
    meta = {"case": case, "model": model, "level": level, "dtype": dtype, "seed": SEED, "steps": STEPS,
            "bad_steps": list(bad), "loss": loss, "options": OPTIONS, "lists": CUSTOM.get(case, {}),
            "master_grad": case in MASTER_GRAD,
            "paddle_version": paddle.__version__,
            "ops_train": [op.type for op in main.global_block().ops], "cpu_casts": cpu_casts, **record}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{case}: losses {np.round(record.get('losses', []), 4).tolist()}, casts {meta['ops_train'].count('cast')}"


if __name__ == "__main__":
    paddle_legacy_shim.install()
    paddle.enable_static()
    for name in sys.argv[1:] or CASES:
        print(write(name), flush=True)
    sys.exit(0)
