"""Programs of each rank of a 2-way sharded (ZeRO stage 1) data-parallel job, as Paddle 3.3.1's static fleet
ShardingOptimizer writes them (strategy.sharding, sharding_degree 2): each rank owns half the parameters and their
Momentum states; the forward starts with a broadcast of every parameter from its owner (into a zero-filled
@BroadCast_0 buffer at the others), the backward ends with a reduce (sum) of every gradient to its owner, the loss
seed is 1 / 2, and each rank steps its own parameters. The launch environment is faked as
tools/paddle_tensor_parallel.py does, and ShardingOptimizer._init_comm (which only appends c_gen_nccl_id /
c_comm_init to the startup program, and refuses a CPU build: "comm_id must be generated in paddlepaddle-xpu or
paddlepaddle-xpu.") is skipped. Paddle cannot run the programs (broadcast needs a communicator); the numbers are
the single-device model's on both ranks' rows (a mean over 8 rows is the mean of the ranks' means over 4), one
Momentum step, which Paddle runs on CPU.

Written to tests/data/paddle/sharding/:
    rank<r>/train.pb, startup.pb   rank r's programs (startup: its own parameters, states and learning rate)
    rank<r>/train.json             train.pb translated to PIR by paddle.pir.translate_to_pir, fetching the loss
    meta.json                      each rank's parameters, the loss var, the ops; reference.npz (feeds: x0, x1, ...)
Not part of the package: needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_sharding.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paddle_tensor_parallel import fetching, seeded_reference, translated, without_callstacks  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "sharding"
NRANKS, ROWS, WIDTH, CLASSES, LR, MOMENTUM = 2, 4, 6, 5, 0.1, 0.9


def build(paddle, rows: int):
    """(main, startup, loss): fc-relu-fc-relu-fc, cross entropy, mean."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [rows, WIDTH], "float32")
        label = paddle.static.data("label", [rows, 1], "int64")
        h = paddle.nn.functional.relu(paddle.static.nn.fc(x, 8))
        h = paddle.nn.functional.relu(paddle.static.nn.fc(h, 7))
        logits = paddle.static.nn.fc(h, CLASSES)
        loss = paddle.mean(paddle.nn.functional.cross_entropy(logits, label, reduction="none"))
    return main, startup, loss


def rank_programs(rank: int) -> dict:
    """Run in a process of its own (the faked environment names one rank): write the rank's programs."""
    os.environ.update(PADDLE_TRAINER_ID=str(rank), PADDLE_TRAINERS_NUM=str(NRANKS), FLAGS_selected_gpus=str(rank),
                      PADDLE_TRAINER_ENDPOINTS=",".join(f"127.0.0.1:{6170 + r}" for r in range(NRANKS)),
                      PADDLE_CURRENT_ENDPOINT=f"127.0.0.1:{6170 + rank}")
    import paddle
    from paddle.base import core
    from paddle.distributed import fleet
    from paddle.distributed.fleet.meta_optimizers import sharding_optimizer

    paddle.enable_static()
    sharding_optimizer.ShardingOptimizer._init_comm = lambda self: None
    strategy = fleet.DistributedStrategy()
    strategy.sharding = True
    strategy.sharding_configs = {"sharding_degree": NRANKS, "segment_broadcast_MB": 32}
    fleet.init(is_collective=True, strategy=strategy)
    main, startup, loss = build(paddle, ROWS)
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        fleet.distributed_optimizer(paddle.optimizer.Momentum(LR, momentum=MOMENTUM), strategy).minimize(loss)
    directory = OUT / f"rank{rank}"
    directory.mkdir(parents=True)
    for program, name in ((main, "train"), (startup, "startup")):
        without_callstacks(program)
        (directory / f"{name}.pb").write_bytes(program.desc.serialize_to_string())
    core.serialize_pir_program(fetching(paddle, translated(paddle, main.desc), [loss.name]),
                               str(directory / "train.json"), True, False, True)
    owned = sorted(op.input("Param")[0] for op in main.global_block().ops if op.type == "momentum")
    return {"params": owned, "loss": loss.name, "ops": [op.type for op in main.global_block().ops]}


def reference() -> dict:
    """The single-device model on both ranks' rows, one Momentum step (Paddle on CPU)."""
    import paddle

    paddle.enable_static()
    main, startup, loss = build(paddle, NRANKS * ROWS)
    with paddle.static.program_guard(main, startup):
        _, pairs = paddle.optimizer.Momentum(LR, momentum=MOMENTUM).minimize(loss)
    reference = seeded_reference(paddle, main, startup, loss, pairs, 13, NRANKS * ROWS, WIDTH, CLASSES)
    x, label = reference.pop("feed.x"), reference.pop("feed.label")   # each rank's rows
    out = {f"feed.x{r}": x[r * ROWS:(r + 1) * ROWS] for r in range(NRANKS)}
    return out | {f"feed.label{r}": label[r * ROWS:(r + 1) * ROWS] for r in range(NRANKS)} | reference


def main() -> None:
    os.environ["FLAGS_enable_pir_api"] = "0"   # legacy static programs, before paddle is imported
    if len(sys.argv) == 2:   # a child: one rank
        print(json.dumps(rank_programs(int(sys.argv[1]))))
        return
    import numpy as np

    if OUT.exists():
        shutil.rmtree(OUT)
    with tempfile.TemporaryDirectory() as scratch:   # ShardingOptimizer dumps its programs into the working directory
        ranks = [json.loads(subprocess.run([sys.executable, str(Path(__file__).resolve()), str(rank)], check=True,
                                           capture_output=True, text=True, cwd=scratch).stdout.splitlines()[-1])
                 for rank in range(NRANKS)]
    meta = {"paddle_version": __import__("paddle").__version__, "ranks": ranks}
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    np.savez_compressed(OUT / "reference.npz", **reference())


if __name__ == "__main__":
    main()
