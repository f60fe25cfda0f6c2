"""Run programs gradc compiled in a real PaddlePaddle and compare with a fixture's gradients:
checks that what gradc writes, Paddle loads and executes. Needs paddlepaddle (not a gradc dependency).

    gradc compile tests/data/paddle/vision/forward.pb -o /tmp/vision_train.pb
    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/run_in_paddle.py /tmp/vision_train.pb tests/data/paddle/vision
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.base import framework

paddle.enable_static()


def main(program_file: str, fixture: str) -> int:
    directory = Path(fixture)
    program = framework.Program.parse_from_string(Path(program_file).read_bytes())
    scope = paddle.static.Scope()
    executor = paddle.static.Executor(paddle.CPUPlace())
    with np.load(directory / "grads.npz") as archive:
        grads = {name: archive[name] for name in archive.files}
    with paddle.static.scope_guard(scope), np.load(directory / "params.npz") as params, \
            np.load(directory / "feed.npz") as feed:
        for name in params.files:
            scope.var(name).get_tensor().set(params[name], paddle.CPUPlace())
        values = executor.run(program, feed=dict(feed), fetch_list=list(grads))
    failed = [name for name, value in zip(grads, values)
              if not np.allclose(value, grads[name], rtol=1e-5, atol=1e-6)]
    print(f"Paddle {paddle.__version__} ran {program_file}: {len(grads) - len(failed)}/{len(grads)} gradients match"
          + (f"; differ: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
