"""Paddle 3.3.1's `seed` op with deterministic=True: its seed comes from the generator named by rng_name, which
paddle.framework.random.set_random_seed_generator(name, seed) makes (auto-parallel's init_auto_parallel_rng calls it
once a name; the kernel takes the low 32 bits of the generator's next word, again while 0). One program (3 such seed
ops, then a dropout reading the third) run twice a process by Paddle on CPU, one process a rank, each rank's
generator seeded as fleet's model_parallel_random_seed(100) seeds the model-parallel tracker of a 2-way
tensor-parallel job: 100 + 1 + mp_rank * pp_size + pp_rank (pp_size 1). A generator is set once a process, so each
rank runs in a child process of this tool.

Written to tests/data/paddle/seed_generator/:
    program.pb       the program (feed x [4, 6] float32; fetch seed0, seed1, seed2, dropped)
    reference.npz    rank<r>/run<k>/<var>: what Paddle fetched on rank r's k-th run; x; seed.rank<r>
Not part of the package: needs paddlepaddle.

    /work/paddle-venv/bin/python tools/paddle_seed_generator.py
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paddle_tensor_parallel import without_callstacks  # noqa: E402

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "seed_generator"
RNG_NAME, GLOBAL_SEED, MP_SIZE, PP_SIZE = "model_parallel_rng", 100, 2, 1
FETCHED = ["seed0", "seed1", "seed2", "dropped"]


def local_seed(mp_rank: int, pp_rank: int = 0) -> int:
    """fleet's model_parallel_random_seed: the tracker's seed of a rank."""
    return GLOBAL_SEED + 1 + mp_rank * PP_SIZE + pp_rank


def program(paddle):
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        x = paddle.static.data("x", [4, 6], "float32")
    block = main.global_block()
    for name in FETCHED[:3]:
        block.append_op(type="seed", outputs={"Out": [block.create_var(name=name, dtype="int32", shape=[1])]},
                        attrs={"deterministic": True, "rng_name": RNG_NAME, "force_cpu": True})
    outs = {"Out": [block.create_var(name="dropped", dtype="float32", shape=[4, 6])],
            "Mask": [block.create_var(name="mask", dtype="uint8", shape=[4, 6])]}
    block.append_op(type="dropout", inputs={"X": [x], "Seed": [block.var("seed2")]}, outputs=outs,
                    attrs={"dropout_prob": 0.5, "is_test": False, "dropout_implementation": "upscale_in_train"})
    return main


def one_rank(rank: int, out: str) -> None:
    """The child: set the rank's generator, run the program twice, save what it fetched."""
    import numpy as np
    import paddle

    paddle.enable_static()
    paddle.framework.random.set_random_seed_generator(RNG_NAME, local_seed(rank))
    main, x = program(paddle), np.arange(24, dtype="float32").reshape(4, 6) + 1
    exe = paddle.static.Executor(paddle.CPUPlace())
    runs = [exe.run(main, feed={"x": x}, fetch_list=FETCHED) for _ in range(2)]
    np.savez(out, x=x, **{f"run{k}/{name}": value for k, run in enumerate(runs) for name, value in zip(FETCHED, run)})


def main() -> None:
    os.environ["FLAGS_enable_pir_api"] = "0"   # legacy static programs, before paddle is imported
    if len(sys.argv) == 4 and sys.argv[1] == "--rank":
        one_rank(int(sys.argv[2]), sys.argv[3])
        return
    import numpy as np
    import paddle

    paddle.enable_static()
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    written = program(paddle)
    without_callstacks(written)
    (OUT / "program.pb").write_bytes(written.desc.serialize_to_string())
    reference = {}
    for rank in range(MP_SIZE):
        part = OUT / f"rank{rank}.npz"
        subprocess.run([sys.executable, __file__, "--rank", str(rank), str(part)], check=True)
        with np.load(part) as values:
            reference |= {"x": values["x"]} | {f"rank{rank}/{k}": v for k, v in values.items() if k != "x"}
        part.unlink()
        reference[f"seed.rank{rank}"] = np.array(local_seed(rank))
    np.savez_compressed(OUT / "reference.npz", **reference)


if __name__ == "__main__":
    main()
