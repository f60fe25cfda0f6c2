"""The mixed-precision trainer's programs of docs/tools.md's 'A mixed-precision trainer's week', written with Paddle
3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0) and paddle.static.amp.decorate (Adam, dynamic loss
scaling: init_loss_scaling 1024, incr_every_n_steps 2, decr_every_n_nan_or_inf 1):

- cnn: Conv2D(1, 4, 3), relu, max_pool2d, flatten, Linear(64, 3), cross_entropy over 8x8 images, at level O1 in
  float16: O1 casts the inputs of the white-list ops (conv2d, matmul_v2) to float16 and back.
- mlp: a transformer-ish MLP over 6 tokens of 8 features (Linear, LayerNorm, a softmax self-attention by matmul,
  Linear + gelu, Linear to 1, mse_loss), at level O2 in float16 (float16 parameters, float32 master weights).

Where the casts go is decided by the ops the device runs in the format, and a CPU build supports none: its decorate
casts nothing (tools/paddle_gpu_amp_static.py). So each model is written twice: as a CUDA build writes it
(<model>_amp.pb: tools/paddle_gpu_amp_static.py's CudaBuild around decorate and minimize), and as this CPU build
writes it (<model>_cpu.pb: float32 with the loss-scaling ops), which Paddle's executor trains, with an inf in the
batch at step BAD. The CPU program trained from a loss scale of 3e38 (the scaled gradients overflow float32) is
'huge'. The mlp's forward alone, trained by Paddle, is saved by save_inference_model (mlp_infer.pdmodel) and run by
its Predictor.

Written (programs gzipped): <model>_amp.pb, <model>_amp_startup.pb, <model>_cpu.pb, <model>_startup.pb (the CPU
build's), <model>_forward.pb (the float32 forward before decorate), mlp_infer.pdmodel, data.npz (each model's
batches), <model>_init.npz and <model>_amp_init.npz (every persistable after Paddle's startup; O2's after amp_init),
paddle.npz (Paddle's persistables after the last step of each CPU run, the model's name a prefix), predictor.npz,
meta.json (losses, loss scales and counters per step, the vars' names, the casts of each CUDA program).

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week26.py tests/data/paddle/user_week26
"""

import json
import sys
import tempfile
from functools import partial
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle.static import amp
from paddle_gpu_amp_static import CudaBuild
from paddle_optimizer_fixtures import Persistables, serialize
from paddle_programs import predict, write_gz

STEPS, BAD, BATCH, SEED = 6, 3, 4, 26
SCALING = ("loss_scaling_0", "num_good_steps_0", "num_bad_steps_0")


def cnn(x, y):
    conv = paddle.nn.Conv2D(1, 4, 3, padding=1)
    hidden = paddle.flatten(F.max_pool2d(F.relu(conv(x)), 2), 1)
    return None, F.cross_entropy(paddle.nn.Linear(64, 3)(hidden), y)


def mlp(x, y):
    """Linear, LayerNorm, softmax(h h^T / 4) h, Linear + gelu, Linear to one output per token."""
    hidden = paddle.nn.LayerNorm(16)(paddle.nn.Linear(8, 16)(x))
    attended = paddle.matmul(F.softmax(paddle.matmul(hidden, hidden, transpose_y=True) / 4.0), hidden)
    out = paddle.nn.Linear(16, 1)(F.gelu(paddle.nn.Linear(16, 16)(attended)))
    return out, F.mse_loss(out, y)


MODELS = {"cnn": (cnn, ([-1, 1, 8, 8], "float32"), ([-1, 1], "int64"), "O1"),
          "mlp": (mlp, ([-1, 6, 8], "float32"), ([-1, 6, 1], "float32"), "O2")}


def programs(model: str, cuda: bool, init_loss_scaling: float = 1024.0):
    build, x_spec, y_spec, level = MODELS[model]
    main, startup = paddle.static.Program(), paddle.static.Program()
    main.random_seed = startup.random_seed = SEED   # initial weights gradc's startup run draws as Paddle's does
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        x, y = paddle.static.data("x", *x_spec), paddle.static.data("y", *y_spec)
        out, loss = build(x, y)
        forward = main.clone()
        with CudaBuild() if cuda else tempfile.TemporaryDirectory():   # only the CUDA build's decorate casts
            optimizer = amp.decorate(paddle.optimizer.Adam(0.01), init_loss_scaling=init_loss_scaling, level=level,
                                     dtype="float16", use_dynamic_loss_scaling=True, incr_every_n_steps=2,
                                     decr_every_n_nan_or_inf=1)
            optimizer.minimize(loss)
    return main, startup, optimizer, forward, {"loss": loss.name, "out": out.name if out is not None else None}


def batches(model: str, rng) -> dict:
    if model == "cnn":
        data = {"x": rng.standard_normal((STEPS * BATCH, 1, 8, 8)).astype("float32"),
                "y": rng.integers(0, 3, (STEPS * BATCH, 1)).astype("int64")}
    else:
        data = {"x": rng.standard_normal((STEPS * BATCH, 6, 8)).astype("float32"),
                "y": rng.standard_normal((STEPS * BATCH, 6, 1)).astype("float32")}
    data["x"][BAD * BATCH + 1].flat[5] = np.inf   # step BAD overflows
    return data


def train(main, startup, loss: str, data: dict, after=None) -> dict:
    """Paddle's startup and STEPS steps: every persistable after the startup and after the last step, each step's
    loss and loss-scaling state; ``after(executor)`` runs last in the same scope."""
    scope, executor = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    record = {"losses": [], **{name: [] for name in SCALING}}
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        persistables = Persistables(main, scope)
        record["init"] = persistables.read()
        for step in range(STEPS):
            feed = {key: value[step * BATCH:(step + 1) * BATCH] for key, value in data.items()}
            record["losses"].append(float(executor.run(main, feed=feed, fetch_list=[loss])[0]))
            for name in SCALING:
                record[name].append(np.asarray(scope.find_var(name).get_tensor()).reshape(-1)[0].item())
        record["final"] = persistables.read()
        if after is not None:
            after(executor)
    return record


def cuda_program(out: Path, model: str) -> dict:
    """The CUDA build's program and startup, and its persistables after Paddle's startup (and O2's amp_init)."""
    main, startup, optimizer, _, _ = programs(model, cuda=True)
    scope, executor = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        if optimizer._use_pure_fp16:
            optimizer.amp_init(paddle.CPUPlace(), scope=scope)
        init = Persistables(main, scope).read()
    write_gz(out / f"{model}_amp.pb", serialize(main))
    write_gz(out / f"{model}_amp_startup.pb", serialize(startup))
    np.savez_compressed(out / f"{model}_amp_init.npz", **init)
    return {"casts": [op.type for op in main.global_block().ops].count("cast")}


def export_mlp(out: Path, forward, names: dict, executor, meta: dict) -> None:
    """The trained mlp's forward saved by save_inference_model and run by the Predictor on the first batch."""
    x = np.random.default_rng(SEED + 1).standard_normal((3, 6, 8)).astype("float32")
    with tempfile.TemporaryDirectory() as saved:
        infer = forward.clone(for_test=True)
        paddle.static.save_inference_model(f"{saved}/mlp", [infer.global_block().var("x")],
                                           [infer.global_block().var(names["out"])], executor, program=infer)
        write_gz(out / "mlp_infer.pdmodel", Path(f"{saved}/mlp.pdmodel").read_bytes())
        (output,) = predict(f"{saved}/mlp.pdmodel", f"{saved}/mlp.pdiparams", {"x": x}).values()
        np.savez(out / "predictor.npz", x=x, out=output)
    meta["infer"] = {"out": output}


def main(out: Path) -> None:
    paddle_legacy_shim.install()
    paddle.enable_static()
    rng = np.random.default_rng(SEED)
    meta, data, finals = {}, {}, {}
    for model in MODELS:
        data[model] = batches(model, rng)
        meta[model] = cuda_program(out, model)
        main_cpu, startup, _, forward, names = programs(model, cuda=False)
        assert not any(op.type == "cast" for op in main_cpu.global_block().ops)   # the CPU build casts nothing
        after = partial(export_mlp, out, forward, names, meta=meta) if model == "mlp" else None
        record = train(main_cpu, startup, names["loss"], data[model], after)
        write_gz(out / f"{model}_cpu.pb", serialize(main_cpu))
        write_gz(out / f"{model}_startup.pb", serialize(startup))
        write_gz(out / f"{model}_forward.pb", serialize(forward))
        np.savez_compressed(out / f"{model}_init.npz", **record.pop("init"))
        finals.update({f"{model}/{key}": value for key, value in record.pop("final").items()})
        meta[model].update(record, loss=names["loss"], out=names["out"])
        if model == "cnn":   # a scale too large for float32: every scaled gradient overflows until it shrinks
            huge_main, huge_startup, *_ = programs(model, cuda=False, init_loss_scaling=3e38)
            huge = train(huge_main, huge_startup, names["loss"], data[model])
            finals.update({f"huge/{key}": value for key, value in huge.pop("final").items()})
            huge.pop("init")
            meta["huge"] = huge
    np.savez_compressed(out / "data.npz", **{f"{model}_{key}": value for model, arrays in data.items()
                                             for key, value in arrays.items()})
    np.savez_compressed(out / "paddle.npz", **finals)
    meta["steps"], meta["bad_step"], meta["batch"] = STEPS, BAD, BATCH
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    Path(sys.argv[1]).mkdir(parents=True, exist_ok=True)
    main(Path(sys.argv[1]))
