"""Load gradc's exports (tests/data/paddle/export, from tools/gradc_export_fixture.py) with Paddle 3.3.1's
paddle.static.load_inference_model, run them on the fixture's feed, and record Paddle's outputs in
paddle_outputs.npz (pb: the legacy .pdmodel, loaded with FLAGS_enable_pir_api=0; pir: the PIR .json).

    /path/to/paddle/python tools/run_export_in_paddle.py tests/data/paddle/export
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

RUN = """
import sys, numpy as np, paddle
paddle.enable_static()
executor = paddle.static.Executor(paddle.CPUPlace())
program, feeds, fetches = paddle.static.load_inference_model(sys.argv[1], executor)
feed = dict(np.load(sys.argv[2]))
(out,) = executor.run(program, feed={name: feed[name] for name in feeds}, fetch_list=fetches)
assert feeds == ["img"], feeds
np.save(sys.argv[3], out)
"""


def main(directory: Path) -> None:
    outputs = {}
    for name, prefix, pir in (("pb", "model", "0"), ("pir", "pir", "1")):
        target = directory / f"{name}_out.npy"
        subprocess.run([sys.executable, "-c", RUN, str(directory / prefix), str(directory / "feed.npz"), str(target)],
                       check=True, env={**os.environ, "FLAGS_enable_pir_api": pir})
        outputs[name] = np.load(target)
        target.unlink()
    np.savez(directory / "paddle_outputs.npz", **outputs)
    print({name: value.shape for name, value in outputs.items()})


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/export"))
