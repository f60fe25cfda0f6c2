"""Run gradc's compilations of the loss fixtures (tests/data/paddle/ops/loss) in a real PaddlePaddle and
compare with the loss and gradients Paddle computed for its own backward. Needs paddlepaddle.

    for f in tests/data/paddle/ops/loss/*.forward.pb; do
        name=$(basename "$f" .forward.pb)
        .venv/bin/gradc compile "$f" -o "/tmp/losses/$name.pb" --loss "$(jq -r --arg n "$name" \\
            '.cases[] | select(.name == $n) | .loss' tests/data/paddle/ops/loss/cases.json)" > /dev/null
    done
    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/run_losses_in_paddle.py /tmp/losses
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.base import framework

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "ops" / "loss"

paddle.enable_static()


def run(case: dict, program_file: Path) -> str | None:
    """None if Paddle gives the fixture's loss and gradients for gradc's program, else what differs."""
    program = framework.Program.parse_from_string(program_file.read_bytes())
    with np.load(DATA / f"{case['name']}.npz") as archive:
        arrays = {k: archive[k] for k in archive.files}
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for key, value in arrays.items():
            if key.startswith("param/"):
                scope.var(key.removeprefix("param/")).get_tensor().set(value, paddle.CPUPlace())
        feed = {k.removeprefix("feed/"): v for k, v in arrays.items() if k.startswith("feed/")}
        values = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed,
                                                               fetch_list=[case["loss"], *case["grads"]])
    expected = [arrays["loss"], *(arrays[f"grad/{g}"] for g in case["grads"])]
    differ = [name for name, got, want in zip(["loss", *case["grads"]], values, expected)
              if not np.allclose(got, want, rtol=1e-5, atol=1e-6)]
    return ", ".join(differ) or None


def main(compiled: str) -> int:
    cases = json.loads((DATA / "cases.json").read_text())["cases"]
    ran, failed = 0, []
    for case in cases:
        program_file = Path(compiled) / f"{case['name']}.pb"
        if not program_file.exists():
            continue
        ran += 1
        try:
            problem = run(case, program_file)
        except Exception as e:  # noqa: BLE001 - a program Paddle cannot run is reported with the others
            problem = f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}"
        if problem:
            failed.append(f"{case['name']}: {problem}")
    print(f"Paddle {paddle.__version__} ran gradc's compilation of {ran} loss fixtures: {ran - len(failed)} match")
    print("\n".join(failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
