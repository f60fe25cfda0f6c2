"""bfloat16 training fixtures from a real PaddlePaddle: paddle.static.amp.bf16's legacy training programs
(decorate_bf16, level O1 with SGD, Momentum and Adam, and pure bfloat16 with SGD after amp_init), trained on
Paddle 3.3.1's CPU kernels, with every value a test needs to replay them. The model is static.nn.fc's (the mul op):
Paddle 3.3.1's CPU bfloat16 matmul_v2_grad crashes, its bfloat16 conv2d and multi-precision optimizers have no CPU
kernels.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_bf16_fixtures.py tests/data/paddle/bf16 [case ...]

Each case directory holds train.pb and startup.pb (without op_callstack), and for O1 forward.pb, the forward program
with the casts decorate_bf16 writes (rewrite_program_bf16); init.npz, every persistable after the
startup program (and amp_init); feeds.npz, one batch per step (step as leading axis); states.npz, every persistable
after each step; values.npz, every var the first step writes (activations, gradients), fetched; losses.npy; meta.json.
A bfloat16 value is stored as Paddle hands it to numpy: uint16 bits.

ops/ holds one program per op of OPS that Paddle 3.3.1 runs in bfloat16 on CPU with its grad: x (and y) [16, 48]
cast to bfloat16, the op, the result cast back to float32 and loss = sum(result * w). <op>.pb is the forward
program; <op>.npz the result, w and the grads Paddle's append_backward gave (float32, after the casts back), but for
the ops Paddle's run fails on (meta.json's paddle_fails, with its message); inputs.npz x and y; meta.json each op's
result, loss and grad names. RANDOM's ops (dropout in training) are under meta.json's random_ops: their masks are
Paddle's draws. meta.json's paddle_off names the ops whose Paddle values are off (PADDLE_OFF).

sparse/ is a bfloat16 embedding table trained by SGD through a sparse gradient (write_sparse).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.base.layer_helper import LayerHelper
from paddle.static import amp
from paddle_legacy_shim import install
from paddle_optimizer_fixtures import SEED, Persistables, serialize, stacked

paddle.enable_static()
install()   # paddle.tanh, F.gelu, ... append their legacy ops again
F = paddle.nn.functional
STEPS = 3
CASES = {   # name -> (optimizer, pure bfloat16)
    "o1_sgd": (lambda: paddle.optimizer.SGD(0.1), False),
    "o1_momentum": (lambda: paddle.optimizer.Momentum(0.1, momentum=0.9), False),
    "o1_adam": (lambda: paddle.optimizer.Adam(0.01), False),
    "pure_sgd": (lambda: paddle.optimizer.SGD(0.1), True),
}


UNARY = {
    "relu": F.relu, "tanh": paddle.tanh, "sigmoid": F.sigmoid, "exp": paddle.exp,
    "sqrt": lambda x: paddle.sqrt(paddle.abs(x)), "scale": lambda x: paddle.scale(x, 1.7, 0.3),
    "sum_all": paddle.sum, "sum_axis": lambda x: paddle.sum(x, axis=1), "mean": paddle.mean,
    "mean_axis": lambda x: paddle.mean(x, axis=0), "max_axis": lambda x: paddle.max(x, axis=1),
    "softmax": F.softmax, "log_softmax": F.log_softmax, "gelu": F.gelu, "silu": F.silu,
    "transpose": lambda x: paddle.transpose(x, [1, 0]), "layer_norm": lambda x: F.layer_norm(x, [48]),
    "cumsum": lambda x: paddle.cumsum(x, axis=1), "log": lambda x: paddle.log(paddle.abs(x) + 1),
    "reshape": lambda x: paddle.reshape(x, [-1]), "abs": paddle.abs, "clip": lambda x: paddle.clip(x, -0.5, 0.5),
    "leaky_relu": lambda x: F.leaky_relu(x, 0.1), "dropout_eval": lambda x: F.dropout(x, 0.5, training=False),
}
# unary ops with constants Paddle's bfloat16 kernels round (dropout's 1 - p, full_like's value), after BINARY so the
# earlier ops' w draws stay as they were
CONSTANTS = {
    "dropout_downscale": lambda x: F.dropout(x, 0.3, training=False, mode="downscale_in_infer"),
    "full_like": lambda x: x * paddle.full_like(x, 0.7), "elu": lambda x: F.elu(x, 0.7),
    "hardswish": F.hardswish, "swish": F.swish,
}
# ops whose Paddle 3.3.1 bfloat16 kernel is less accurate: reduce_sum of float32 to bfloat16 (out_dtype) adds in
# bfloat16, rounding each partial sum
def sum_to_bfloat16(x):
    """reduce_sum with out_dtype bfloat16 of a float32 X (the shim's paddle.sum drops dtype)."""
    helper = LayerHelper("reduce_sum")
    out = helper.create_variable_for_type_inference(paddle.bfloat16)
    helper.append_op(type="reduce_sum", inputs={"X": paddle.cast(x, "float32")}, outputs={"Out": out},
                     attrs={"dim": [1], "keep_dim": False, "reduce_all": False, "in_dtype": -1, "out_dtype": 22})
    return out


PADDLE_OFF = {"sum_to_bfloat16": sum_to_bfloat16}
# ops with a random mask: Paddle's draws are not gradc's, so a test compares the units both keep
RANDOM = {"dropout_train": lambda x: F.dropout(x, 0.3, training=True)}
BINARY = {
    "add": paddle.add, "multiply": paddle.multiply, "subtract": paddle.subtract,
    "divide": lambda x, y: x / (paddle.abs(y) + 1), "concat": lambda x, y: paddle.concat([x, y]),
    "matmul": lambda x, y: paddle.matmul(x, y, transpose_y=True), "maximum": paddle.maximum,
}


def op_case(name: str, rng, inputs: dict) -> tuple:
    """(forward program, names, Paddle's values or the error Paddle's run raised) of one op in bfloat16."""
    binary = name in BINARY
    main = paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, paddle.static.Program()):
        x, y = (paddle.static.data(n, [16, 48], "float32") for n in ("x", "y"))
        x.stop_gradient = y.stop_gradient = False
        x16, y16 = paddle.cast(x, "bfloat16"), paddle.cast(y, "bfloat16")
        unary = {**UNARY, **CONSTANTS, **RANDOM, **PADDLE_OFF}
        result = paddle.cast(BINARY[name](x16, y16) if binary else unary[name](x16), "float32")
        w = paddle.static.data("w", result.shape, "float32")
        loss = paddle.sum(result * w)
        forward = main.clone()
        grads = [g.name for _, g in paddle.static.append_backward(loss, parameter_list=[x, y] if binary else [x])]
    feed = {**inputs, "w": rng.standard_normal(result.shape).astype(np.float32)}
    try:
        values = paddle.static.Executor(paddle.CPUPlace()).run(main, feed=feed, fetch_list=[result, *grads])
    except Exception as error:  # noqa: BLE001 - Paddle's missing bfloat16 kernels, recorded
        lines = str(error).strip().splitlines() or [type(error).__name__]
        return forward, [result.name, loss.name, grads], next((line.strip() for line in lines if "operator <" in line),
                                                               lines[0][:120])
    return forward, [result.name, loss.name, grads], {"out": values[0], "w": feed["w"], **dict(zip(grads, values[1:]))}


def write_ops(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(SEED)
    inputs = {"x": 2 * rng.standard_normal((16, 48)).astype(np.float32),
              "y": rng.standard_normal((16, 48)).astype(np.float32)}
    meta = {"paddle_version": paddle.__version__, "ops": {}, "paddle_fails": {}, "random_ops": {},
            "paddle_off": sorted(PADDLE_OFF)}
    for name in [*UNARY, *BINARY, *CONSTANTS, *RANDOM, *PADDLE_OFF]:
        forward, names, values = op_case(name, rng, inputs)
        (out / f"{name}.pb").write_bytes(serialize(forward))
        meta["random_ops" if name in RANDOM else "ops"][name] = names
        if isinstance(values, str):
            meta["paddle_fails"][name] = values
        else:
            np.savez_compressed(out / f"{name}.npz", **values)
    np.savez_compressed(out / "inputs.npz", **inputs)
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def write_sparse(out: Path) -> None:
    """sparse/: a bfloat16 embedding table [10, 8] with a sparse gradient (SelectedRows, ids with repeats) trained by
    SGD(0.1) without master weights, two steps: main.pb, startup.pb and values.npz (ids per step, the table after
    the startup and amp_init's cast and after each step, as bits)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        ids = paddle.static.data("ids", [6, 1], "int64")
        init = paddle.nn.initializer.Assign(np.linspace(-1, 1, 80).reshape(10, 8).astype(np.float32))
        table = paddle.static.create_parameter([10, 8], "bfloat16", name="table", default_initializer=init)
        rows = paddle.cast(F.embedding(ids, table, sparse=True), "float32")
        paddle.optimizer.SGD(0.1).minimize(paddle.mean(rows * rows))
    steps = np.array([[[1], [3], [1], [7], [1], [0]], [[3], [3], [9], [2], [1], [3]]], np.int64)
    scope, executor = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    tables = []
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        tables.append(np.asarray(scope.find_var("table").get_tensor()))
        for feed in steps:
            executor.run(main, feed={"ids": feed})
            tables.append(np.asarray(scope.find_var("table").get_tensor()))
    out.mkdir(parents=True, exist_ok=True)
    (out / "main.pb").write_bytes(serialize(main))
    (out / "startup.pb").write_bytes(serialize(startup))
    np.savez_compressed(out / "values.npz", ids=steps, tables=np.stack(tables))


def bits(values: np.ndarray) -> np.ndarray:
    """float32 values (already bfloat16 numbers) as bfloat16 bits, for a pure program's uint16 feed."""
    return (values.view(np.uint32) >> 16).astype(np.uint16)


def train(name: str) -> dict:
    make_optimizer, pure = CASES[name]
    paddle.seed(SEED)
    rng = np.random.default_rng(SEED)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [8, 64], "float32")
        label = paddle.static.data("label", [8, 1], "int64")
        hidden = paddle.nn.functional.relu(paddle.static.nn.fc(x, 96))
        logits = paddle.static.nn.fc(hidden, 10)
        loss = paddle.mean(paddle.nn.functional.cross_entropy(logits, label))
        forward = main.clone()
        if not pure:   # the casts decorate_bf16 writes in the forward, for gradc's own backward of it
            amp.bf16.rewrite_program_bf16(forward)
        optimizer = amp.bf16.decorate_bf16(make_optimizer(), use_bf16_guard=False, use_pure_bf16=pure)
        optimizer.minimize(loss)
    block = main.global_block()
    written = sorted({n for op in block.ops for slot in op.output_names for n in op.output(slot)
                      if not block.var(n).persistable and n != loss.name})
    feeds = []
    for _ in range(STEPS):
        batch = rng.standard_normal((8, 64)).astype(np.float32)
        feeds.append({"x": bits(batch) if pure else batch, "label": rng.integers(0, 10, (8, 1))})
    scope, executor = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    losses, states, values = [], [], {}
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        if pure:
            optimizer.amp_init(paddle.CPUPlace(), scope=scope)
        persistables = Persistables(main, scope)
        init = persistables.read()
        for step, feed in enumerate(feeds):
            fetched = executor.run(main, feed=feed, fetch_list=[loss.name, *(written if step == 0 else [])])
            losses.append(np.asarray(fetched[0]))
            if step == 0:
                values = dict(zip(written, map(np.asarray, fetched[1:])))
            states.append(persistables.read())
    meta = {"case": name, "seed": SEED, "paddle_version": paddle.__version__, "steps": STEPS, "pure": pure,
            "optimizer": type(optimizer._optimizer).__name__, "loss": loss.name, "feeds": ["label", "x"],
            "bfloat16_vars": sorted(n for n, v in block.vars.items() if v.dtype == paddle.bfloat16),
            "ops": [op.type for op in block.ops]}
    return {"forward.pb": None if pure else serialize(forward), "train.pb": serialize(main),
            "startup.pb": serialize(startup), "init": init, "feeds": stacked(feeds),
            "states": stacked(states), "values": values, "losses": np.stack(losses), "meta": meta}


def write(out: Path, files: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in ("forward.pb", "train.pb", "startup.pb"):
        if files[name] is not None:
            (out / name).write_bytes(files[name])
    for name in ("init", "feeds", "states", "values"):
        np.savez_compressed(out / f"{name}.npz", **files[name])
    np.save(out / "losses.npy", files["losses"])
    (out / "meta.json").write_text(json.dumps(files["meta"], indent=1) + "\n")


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/bf16")
    for case in sys.argv[2:] or [*CASES, "ops", "sparse"]:
        if case == "ops":
            write_ops(target / "ops")
        elif case == "sparse":
            write_sparse(target / "sparse")
        else:
            write(target / case, train(case))
        print(case, "written")
