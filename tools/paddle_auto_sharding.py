"""Programs of each rank of a 2-way ZeRO stage 2 and stage 3 job, as Paddle 3.3.1's static auto-parallel Engine
writes them (paddle.distributed.fleet.auto: Strategy().sharding with enable, stage 2 or 3, degree 2, in legacy
static mode; the auto_parallel_sharding pass, paddle/distributed/passes/auto_parallel_sharding.py, does the
sharding). Each rank owns half the parameters and their Momentum velocities:

- stage 2: every rank holds every parameter; each gradient is reduced (sum) to its owner and scaled by 1/2, the
  owner steps it, and a broadcast from the owner after the update gives the others the new value.
- stage 3: a rank holds only its own parameters; each use of another's (forward and backward) is a broadcast from
  its owner into a fresh @BroadCast_<k> var (an `empty` op first); gradients are reduced to their owners as above.

The launch environment is faked as tools/paddle_tensor_parallel.py does. On a CPU build the Engine refuses to start
(its default cluster asks paddle.device.cuda.get_device_properties: "not supported in CPU-only PaddlePaddle"), so
the tool answers that one call with a V100's name and memory; Engine._init_comm (it instantiates NCCL groups) and
Engine._initialize (it runs the startup program, whose broadcasts need them: "NCCLCommContext is nullptr") are
skipped: the tool only writes the programs. The numbers are the single-device model's on both ranks' rows (the mean
over 8 rows), one Momentum step, which Paddle runs on CPU.

Written to tests/data/paddle/auto_sharding/stage<s>/:
    rank<r>/train.pb, startup.pb   rank r's programs (the Engine's dist_main_programs / dist_startup_programs)
    rank<r>/train.json             train.pb translated to PIR by paddle.pir.translate_to_pir, fetching the loss
    meta.json                      each rank's parameters (owned, held), the loss var, the ops; and
tests/data/paddle/auto_sharding/reference.npz (feeds: x0, x1, label0, label1).
Not part of the package: needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_auto_sharding.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paddle_tensor_parallel import fetching, seeded_reference, translated, without_callstacks  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "auto_sharding"
NRANKS, ROWS, WIDTH, CLASSES, LR, MOMENTUM, STAGES = 2, 4, 6, 5, 0.1, 0.9, (2, 3)


def network(paddle):
    """Linear-relu-Linear-relu-Linear, its parameters named linear_0 ... linear_2 in a fresh unique_name guard."""
    class MLP(paddle.nn.Layer):
        def __init__(self):
            super().__init__()
            self.first, self.second, self.third = (paddle.nn.Linear(WIDTH, 8), paddle.nn.Linear(8, 7),
                                                   paddle.nn.Linear(7, CLASSES))

        def forward(self, x):
            relu = paddle.nn.functional.relu
            return self.third(relu(self.second(relu(self.first(x)))))

    return MLP()


def rank_programs(stage: int, rank: int) -> dict:
    """Run in a process of its own (the faked environment names one rank): write the rank's programs."""
    os.environ.update(PADDLE_TRAINER_ID=str(rank), PADDLE_TRAINERS_NUM=str(NRANKS), FLAGS_selected_gpus=str(rank),
                      PADDLE_TRAINER_ENDPOINTS=",".join(f"127.0.0.1:{6170 + r}" for r in range(NRANKS)),
                      PADDLE_CURRENT_ENDPOINT=f"127.0.0.1:{6170 + rank}")
    import paddle
    from paddle.base import core
    from paddle.distributed.auto_parallel.static.engine import Engine
    from paddle.distributed.fleet import auto

    paddle.enable_static()
    paddle.device.cuda.get_device_properties = lambda *_: types.SimpleNamespace(
        name="Tesla V100-SXM2-32GB", total_memory=32 * 1000 ** 3)
    Engine._init_comm = lambda self: None
    Engine._initialize = lambda self, mode, init_parameters=True: None
    strategy = auto.Strategy()
    strategy.auto_mode = "semi"
    strategy.sharding.enable, strategy.sharding.stage, strategy.sharding.degree = True, stage, NRANKS
    with paddle.utils.unique_name.guard():
        engine = Engine(network(paddle), paddle.nn.CrossEntropyLoss(),
                        paddle.optimizer.Momentum(LR, momentum=MOMENTUM), strategy=strategy)
        engine.prepare(inputs_spec=[paddle.static.InputSpec([NRANKS * ROWS, WIDTH], "float32", "x")],
                       labels_spec=[paddle.static.InputSpec([NRANKS * ROWS, 1], "int64", "label")], mode="train",
                       init_parameters=False)
    main, startup = engine.main_program, engine.startup_program
    loss = next(op.output("Out")[0] for op in main.global_block().ops if op.type == "reduce_mean")
    directory = OUT / f"stage{stage}" / f"rank{rank}"
    directory.mkdir(parents=True)
    for program, name in ((main, "train"), (startup, "startup")):
        without_callstacks(program)
        (directory / f"{name}.pb").write_bytes(program.desc.serialize_to_string())
    core.serialize_pir_program(fetching(paddle, translated(paddle, main.desc), [loss]),
                               str(directory / "train.json"), True, False, True)
    block = main.global_block()
    owned = sorted(op.input("Param")[0] for op in block.ops if op.type == "momentum")
    held = sorted(var.name for var in block.vars.values() if var.persistable and var.name.startswith("linear_"))
    return {"owned": owned, "held": held, "loss": loss, "ops": [op.type for op in block.ops]}


def reference() -> dict:
    """The single-device model on both ranks' rows, one Momentum step (Paddle on CPU)."""
    import paddle

    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        x = paddle.static.data("x", [NRANKS * ROWS, WIDTH], "float32")
        label = paddle.static.data("label", [NRANKS * ROWS, 1], "int64")
        loss = paddle.nn.CrossEntropyLoss()(network(paddle)(x), label)
        _, pairs = paddle.optimizer.Momentum(LR, momentum=MOMENTUM).minimize(loss)
    reference = seeded_reference(paddle, main, startup, loss, pairs, 29, NRANKS * ROWS, WIDTH, CLASSES)
    x, label = reference.pop("feed.x"), reference.pop("feed.label")   # each rank's rows
    out = {f"feed.x{r}": x[r * ROWS:(r + 1) * ROWS] for r in range(NRANKS)}
    return out | {f"feed.label{r}": label[r * ROWS:(r + 1) * ROWS] for r in range(NRANKS)} | reference


def main() -> None:
    os.environ["FLAGS_enable_pir_api"] = "0"   # legacy static programs, before paddle is imported
    if len(sys.argv) == 3:   # a child: one stage's rank
        print(json.dumps(rank_programs(int(sys.argv[1]), int(sys.argv[2]))))
        return
    import numpy as np

    if OUT.exists():
        shutil.rmtree(OUT)
    meta = {"paddle_version": __import__("paddle").__version__, "stages": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for stage in STAGES:
            meta["stages"][str(stage)] = [json.loads(subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), str(stage), str(rank)], check=True,
                capture_output=True, text=True, cwd=scratch).stdout.splitlines()[-1]) for rank in range(NRANKS)]
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    np.savez_compressed(OUT / "reference.npz", **reference())


if __name__ == "__main__":
    main()
