"""Paddle 3.3.1's own AMP + gradient-merge static program: GradientMergeOptimizer(k_steps=2, avg=True) over
paddle.static.amp.decorate(AdamW, level, float16, dynamic loss scaling) of week 41's GPT pretraining (the same model,
loss, clipping and schedule as its amp/ programs), as a CUDA build writes it (a CPU build casts nothing, and cannot run
the float16 kernels): the scaled gradients are summed each run; the conditional block divides them by k, unscales
them, checks them for Inf and NaN, updates the loss scaling and skips or applies the update, once every k runs.
Writes amp_gm/<level>.pb and <level>_startup.pb into week 41's folder.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_amp_gradient_merge.py \
        tests/data/paddle/user_week41
"""

import sys
from pathlib import Path

import paddle
import paddle.nn.functional as F
from paddle_programs import without_callstacks, write_gz
from paddle_user_week41 import GPT, PAD, adamw, schedule

K_STEPS = 2


def main(out: Path) -> None:
    import paddle_legacy_shim
    from paddle.static import amp
    from paddle_gpu_amp_static import CudaBuild
    paddle_legacy_shim.install()
    paddle.enable_static()
    folder = out / "amp_gm"
    folder.mkdir(parents=True, exist_ok=True)
    for level in ("O1", "O2"):
        main_program, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(main_program, startup), paddle.utils.unique_name.guard():
            tokens = paddle.static.data("tokens", [-1, -1], "int64")
            labels = paddle.static.data("labels", [-1, -1], "int64")
            _, logits = GPT()(tokens)
            loss = F.cross_entropy(logits, labels, ignore_index=PAD, label_smoothing=0.1)
            with CudaBuild():
                decorated = amp.decorate(adamw(schedule()), level=level, dtype="float16")
                paddle.incubate.optimizer.GradientMergeOptimizer(decorated, k_steps=K_STEPS, avg=True).minimize(loss)
        write_gz(folder / f"{level}.pb", without_callstacks(main_program))
        write_gz(folder / f"{level}_startup.pb", without_callstacks(startup))
        print(level, [[op.type for op in block.ops][-12:] for block in main_program.blocks])


if __name__ == "__main__":
    main(Path(sys.argv[1]))
