"""fleet's RNG state tracker (paddle.distributed.fleet.meta_parallel.get_rng_state_tracker) and a 2-way
tensor-parallel program with dropout, Paddle 3.3.1 on CPU, one Paddle process a rank.

How the tracker's seed reaches a run: it does not reach the program. RNGStatesTracker.add(name, seed) registers a
new state of Paddle's CPU generator (paddle.incubate.register_rng_state_as_index), seeds it with paddle.seed(seed)
and switches back; rng_state(name) switches the generator's current state index for the block's duration
(paddle.incubate.set_rng_state(index, use_index=True)). All of it is Python around the generator: a static program's
dropout (no seed attribute, fix_seed false) draws from whichever state is current when the executor runs it. So a
rank's program run inside rng_state("model_parallel_rng") draws from a stream seeded with the rank's local seed
(fleet's model_parallel_random_seed: seed + 1 + mp_rank * pp_size + pp_rank), and outside it from paddle.seed's
("global_seed", the same on every rank).

Each rank's program is built by Paddle's mp layers (ColumnParallelLinear -> relu -> dropout -> RowParallelLinear
-> mean), the launch environment faked as tools/paddle_tensor_parallel.py fakes it. Paddle cannot run it on CPU
(c_identity has no CPU kernel), so each rank's process runs a program of the rank's dropout alone, of the rank's
block shape, inside the tracker's rng_state (then once outside it, from the global stream), and the numbers come
from the single-device model with the two ranks' masks joined and fed (Paddle's CPU run).

Written to tests/data/paddle/rng_tracker/:
    rank<r>/forward.pb   the rank's program (feed x [4, 6]; loss, dropout mask names in meta.json)
    meta.json            per rank: params (shape, split axis), loss, mask; the seeds
    reference.npz        x, param.<name> (whole), rank<r>/mask (Paddle's, in rng_state), rank<r>/global_mask (the
                         global stream's), loss and grad.<name> (the single-device model with those masks)
Not part of the package: needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_rng_tracker.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paddle_tensor_parallel import model_parallel_rank, single_device_step, without_callstacks  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "rng_tracker"
NRANKS, ROWS, HIDDEN, FFN, PROB, GLOBAL_SEED = 2, 4, 6, 8, 0.5, 100


def local_seed(mp_rank: int, pp_rank: int = 0, pp_size: int = 1) -> int:
    """fleet's model_parallel_random_seed(GLOBAL_SEED): the tracker's seed of a rank."""
    return GLOBAL_SEED + 1 + mp_rank * pp_size + pp_rank


def dropout_alone(paddle, shape: list[int]):
    """(program, mask name): one dropout of a ones tensor of ``shape``, as the rank's program draws its mask."""
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        ones = paddle.ones(shape, "float32")
        paddle.nn.functional.dropout(ones, p=PROB)
    return main, next(op for op in main.global_block().ops if op.type == "dropout").output("Mask")[0]


def one_rank(rank: int, out: str) -> dict:
    """The child: write the rank's program, draw its masks under the tracker, return its meta."""
    paddle = model_parallel_rank(rank, NRANKS)
    import numpy as np
    from paddle.distributed.communication.group import Group
    from paddle.distributed.fleet.layers.mpu import mp_layers as mp
    from paddle.distributed.fleet.meta_parallel import get_rng_state_tracker

    # model_parallel_random_seed asks for the hybrid group, which static fleet.init does not make: its two steps
    tracker = get_rng_state_tracker()
    tracker.add("model_parallel_rng", local_seed(rank))
    paddle.seed(GLOBAL_SEED)
    group = Group(rank, 1, list(range(NRANKS)), name="model")
    main = paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, paddle.static.Program()):
        x = paddle.static.data("x", [ROWS, HIDDEN], "float32")
        column = mp.ColumnParallelLinear(HIDDEN, FFN, has_bias=True, gather_output=False, mp_group=group)
        row = mp.RowParallelLinear(FFN, HIDDEN, has_bias=True, input_is_parallel=True, mp_group=group)
        with tracker.rng_state("model_parallel_rng"):   # switches the generator's state now, not at run time
            hidden = paddle.nn.functional.dropout(paddle.nn.functional.relu(column(x)), p=PROB)
        loss = paddle.mean(row(hidden))
    without_callstacks(main)
    (OUT / f"rank{rank}").mkdir(parents=True)
    (OUT / f"rank{rank}" / "forward.pb").write_bytes(main.desc.serialize_to_string())
    mask = next(op for op in main.global_block().ops if op.type == "dropout").output("Mask")[0]
    alone, alone_mask = dropout_alone(paddle, [ROWS, FFN // NRANKS])
    exe = paddle.static.Executor(paddle.CPUPlace())
    with tracker.rng_state("model_parallel_rng"):
        (tracked,) = exe.run(alone, fetch_list=[alone_mask])
    (global_mask,) = exe.run(alone, fetch_list=[alone_mask])
    np.savez(out, mask=tracked, global_mask=global_mask)
    params = {p.name: {"shape": list(p.shape), "split_axis": p.split_axis if p.is_distributed else None}
              for layer in (column, row) for p in layer.parameters()}
    return {"params": params, "loss": loss.name, "mask": mask, "seed": local_seed(rank),
            "ops": [op.type for op in main.global_block().ops]}


def single_device(masks: list) -> dict:
    """Paddle's loss and gradients of the whole model, the ranks' masks joined along the hidden axis and fed."""
    import numpy as np
    import paddle

    paddle.enable_static()
    rng = np.random.default_rng(7)
    whole = {"w1": rng.standard_normal((HIDDEN, FFN)).astype("float32"),
             "b1": rng.standard_normal(FFN).astype("float32"),
             "w2": rng.standard_normal((FFN, HIDDEN)).astype("float32"),
             "b2": rng.standard_normal(HIDDEN).astype("float32")}
    x = rng.standard_normal((ROWS, HIDDEN)).astype("float32")
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        xv = paddle.static.data("x", [ROWS, HIDDEN], "float32")
        mask = paddle.static.data("mask", [ROWS, FFN], "float32")
        first, second = paddle.nn.Linear(HIDDEN, FFN), paddle.nn.Linear(FFN, HIDDEN)
        hidden = paddle.nn.functional.relu(first(xv)) * mask / (1 - PROB)   # upscale_in_train with the ranks' mask
        loss = paddle.mean(second(hidden))
        pairs = paddle.static.append_backward(loss)
    names = dict(zip(("w1", "b1", "w2", "b2"), (first.weight.name, first.bias.name, second.weight.name,
                                               second.bias.name)))
    feed = {"x": x, "mask": np.concatenate(masks, axis=1).astype("float32")}
    values, _ = single_device_step(paddle, main, startup, loss, pairs, feed, {names[k]: v for k, v in whole.items()})
    grads = dict(zip([p.name for p, _ in pairs], values[1:]))
    by_param = {names[k]: k for k in names}
    return {"x": x, "loss": values[0], **{f"param.{k}": v for k, v in whole.items()},
            **{f"grad.{by_param[name]}": grad for name, grad in grads.items()}}


def main() -> None:
    os.environ["FLAGS_enable_pir_api"] = "0"   # legacy static programs, before paddle is imported
    if len(sys.argv) == 4 and sys.argv[1] == "--rank":
        print(json.dumps(one_rank(int(sys.argv[2]), sys.argv[3])))
        return
    import numpy as np

    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    ranks, reference = [], {}
    for rank in range(NRANKS):
        part = OUT / f"rank{rank}.npz"
        report = subprocess.run([sys.executable, __file__, "--rank", str(rank), str(part)], check=True,
                                capture_output=True, text=True).stdout.splitlines()[-1]
        ranks.append(json.loads(report))
        with np.load(part) as values:
            reference |= {f"rank{rank}/{k}": v for k, v in values.items()}
        part.unlink()
    reference |= single_device([reference[f"rank{rank}/mask"] for rank in range(NRANKS)])
    meta = {"paddle_version": __import__("paddle").__version__, "global_seed": GLOBAL_SEED, "prob": PROB,
            "ranks": ranks}
    (OUT / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    np.savez_compressed(OUT / "reference.npz", **reference)


if __name__ == "__main__":
    main()
