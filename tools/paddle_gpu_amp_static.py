"""Legacy static AMP training programs as a CUDA build of Paddle 3.3.1 writes them: paddle.static.amp.decorate with
dynamic loss scaling (check_finite_and_unscale, update_loss_scaling) at level O1 (float16 and bfloat16) and O2
(float16 parameters with float32 master weights), on tools/paddle_optimizer_extra_fixtures.py's linear model and
batches (an inf in x at the bad steps).

Where the casts go is decided by the ops the device runs in the format: decorate asks core.op_supported_infos("GPU",
dtype), which on a CPU build lists no op as supported, so the CPU build casts nothing (docs/optimizers.md). The tool
answers as a CUDA build does for this model's ops (every op supported: matmul_v2, elementwise_add / sub, square,
reduce_mean, their grads and cast all have float16 and bfloat16 CUDA kernels) and reports is_compiled_with_cuda, so
decorate writes the CUDA build's casts: O1 casts x, y, the weights and the bias into the format before matmul_v2,
keeps square and reduce_mean (black list) in float32; O2 declares the parameters in the format, gives the optimizer
float32 master weights, and casts the startup's values (amp_init).

Paddle's CPU build cannot run the float16 / bfloat16 matmul_v2 (grad) of these programs, so the numbers are its run
of the same decorate on the CPU build (no casts, float32), with the same seed and batches, which the test compares
at the format's tolerance; loss scaling and its counters must match exactly (the same steps overflow). init.npz is
every persistable of the CUDA build's program after Paddle ran its startup (and amp_init, O2). Into
tests/data/paddle/gpu_amp/<case>/: train.pb, startup.pb, init.npz, feeds.npz, states.npz (the CPU build's
persistables after each step but the last), final.npz, losses.npy, meta.json. Not part of the package: it needs
paddlepaddle.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_gpu_amp_static.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.base import core
from paddle.static import amp
from paddle_optimizer_extra_fixtures import STEPS, batches, linear
from paddle_optimizer_fixtures import SEED, Persistables, run_steps, serialize, stacked

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "gpu_amp"
CASES = {   # name -> (level, dtype, optimizer, bad steps)
    "o1_float16_adam": ("O1", "float16", lambda: paddle.optimizer.Adam(0.01), (2, 3)),
    "o1_bfloat16_sgd": ("O1", "bfloat16", lambda: paddle.optimizer.SGD(0.1), ()),   # no loss scaling in bfloat16
    "o2_float16_momentum": ("O2", "float16", lambda: paddle.optimizer.Momentum(0.05, 0.9), (3,)),
    "o2_bfloat16_adamw": ("O2", "bfloat16", lambda: paddle.optimizer.AdamW(0.01, weight_decay=0.05), ()),
}


class CudaBuild:
    """Within it, decorate sees a CUDA build whose kernels take every op of the model in float16 and bfloat16."""

    def __enter__(self):
        self.saved = core.op_supported_infos, paddle.is_compiled_with_cuda, core.is_compiled_with_cuda
        self.devices = getattr(core, "get_cuda_device_count", None)
        real = core.op_supported_infos

        def supported(device, dtype):
            every_op, _, _ = real(device, dtype)
            return every_op, every_op, set()
        core.op_supported_infos = supported
        paddle.is_compiled_with_cuda = core.is_compiled_with_cuda = lambda: True
        core.get_cuda_device_count = lambda: 0   # paddle.seed seeds each GPU's generator
        return self

    def __exit__(self, *exc):
        core.op_supported_infos, paddle.is_compiled_with_cuda, core.is_compiled_with_cuda = self.saved
        if self.devices is None:
            del core.get_cuda_device_count


def _programs(case: str):
    level, dtype, make, _ = CASES[case]
    paddle.seed(SEED)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        optimizer = amp.decorate(make(), init_loss_scaling=1024.0, use_dynamic_loss_scaling=True, level=level,
                                 dtype=dtype, incr_every_n_steps=2, decr_every_n_nan_or_inf=1)
        loss = linear()
        optimizer.minimize(loss)
    return main, startup, optimizer, loss.name


def _cuda_init(main, startup, optimizer) -> dict:
    """The CUDA build's persistables after Paddle's startup and, at O2, amp_init's casts."""
    scope, executor = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        if optimizer._use_pure_fp16:   # level O2, either format
            optimizer.amp_init(paddle.CPUPlace(), scope=scope)
        return Persistables(main, scope).read()


def write(case: str) -> str:
    level, dtype, _, bad = CASES[case]
    with CudaBuild():
        main, startup, optimizer, loss = _programs(case)
        init = _cuda_init(main, startup, optimizer)
    cpu_main, cpu_startup, _, cpu_loss = _programs(case)
    assert not any(op.type == "cast" for op in cpu_main.global_block().ops)   # the CPU build casts nothing
    feeds = batches(np.random.default_rng(SEED), STEPS, bad)
    _, losses, states, _, _ = run_steps(cpu_main, cpu_startup, cpu_loss, feeds, "learning_rate_0")
    out = OUT / case
    out.mkdir(parents=True, exist_ok=True)
    (out / "train.pb").write_bytes(serialize(main))
    (out / "startup.pb").write_bytes(serialize(startup))
    np.savez_compressed(out / "init.npz", **init)
    np.savez_compressed(out / "feeds.npz", **stacked(feeds))
    np.savez_compressed(out / "states.npz", **stacked(states[:-1]))
    np.savez_compressed(out / "final.npz", **states[-1])
    np.save(out / "losses.npy", np.array(losses, np.float32))
    meta = {"case": case, "seed": SEED, "paddle_version": paddle.__version__, "steps": STEPS, "level": level,
            "dtype": dtype, "bad_steps": list(bad), "loss": loss, "feeds": sorted(feeds[0]),
            "ops_train": [op.type for op in main.global_block().ops],
            "description": f"{linear.__doc__} paddle.static.amp.decorate(level={level}, dtype={dtype}) as a CUDA "
                           "build writes it; the numbers are the CPU build's float32 run of the same decorate"}
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    return f"{case}: losses {np.round(losses, 4).tolist()}, casts {meta['ops_train'].count('cast')}"


if __name__ == "__main__":
    paddle.enable_static()
    for name in sys.argv[1:] or CASES:
        print(write(name), flush=True)
    sys.exit(0)
