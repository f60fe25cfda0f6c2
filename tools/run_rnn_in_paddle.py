"""Run the programs gradc compiles from the recurrent fixtures (tests/data/paddle/rnn) in a real PaddlePaddle
and compare with the fixtures' gradients: checks that what gradc writes for the fused rnn op, tensor arrays and
while loops, Paddle loads, executes and differentiates alike. Needs paddlepaddle (not a gradc dependency).

    for case in tests/data/paddle/rnn/*/; do
        .venv/bin/gradc compile $case/forward.pb -o /tmp/rnn/$(basename $case).pb
    done
    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/run_rnn_in_paddle.py \\
        $(for case in tests/data/paddle/rnn/*/; do echo /tmp/rnn/$(basename $case).pb $case; done)

Arguments are (program, fixture) pairs. A gradient that differs from the fixture's is still right when the
fixture lists it among ``paddle_wrong_grads`` (Paddle's own backward is wrong there) and it matches the
fixture's float64 central differences (grads_fd64.npz; the float32 run is held to rtol 1e-4 there). A
fixture with a random dropout mask (dropout_state.npy) is compared with Paddle's own backward program run
with the same seed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.base import framework

paddle.enable_static()


def _npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def _verdict(name: str, value, grads: dict, meta: dict, central: dict) -> str | None:
    """None when the gradient is Paddle's; 'central' when it is the right one where Paddle's is wrong."""
    if np.allclose(value, grads[name], rtol=1e-5, atol=1e-6):
        return None
    if name in meta.get("paddle_wrong_grads", ()) and name in central and \
            np.allclose(value, central[name], rtol=1e-4, atol=1e-6):
        return "central"
    return "differs"


def _run(program_file: Path, directory: Path, fetch: list[str], seed: int | None) -> list[np.ndarray]:
    """The fetched values of one run; with ``seed``, every rnn op draws its dropout mask from it."""
    program = framework.Program.parse_from_string(program_file.read_bytes())
    for op in program.global_block().ops:
        if seed is not None and op.type in ("rnn", "rnn_grad"):
            op._set_attr("seed", seed)
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for name, value in _npz(directory / "params.npz").items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        return paddle.static.Executor(paddle.CPUPlace()).run(program, feed=_npz(directory / "feed.npz"),
                                                              fetch_list=fetch)


def run_one(program_file: str, fixture: str) -> bool:
    directory = Path(fixture)
    meta = json.loads((directory / "meta.json").read_text()) if (directory / "meta.json").exists() else {}
    grads = _npz(directory / "grads.npz")
    central = _npz(directory / "grads_fd64.npz") if (directory / "grads_fd64.npz").exists() else {}
    random = (directory / "dropout_state.npy").exists()   # the recorded mask is one random draw:
    if random:                                            # compare with Paddle's own program, seeded alike
        grads = dict(zip(grads, _run(directory / "backward.pb", directory, list(grads), seed=7)))
    values = _run(Path(program_file), directory, list(grads), seed=7 if random else None)
    verdicts = {name: _verdict(name, value, grads, meta, central) for name, value in zip(grads, values)}
    failed = [name for name, verdict in verdicts.items() if verdict == "differs"]
    right = [name for name, verdict in verdicts.items() if verdict == "central"]
    print(f"Paddle {paddle.__version__} ran {program_file}: {len(grads) - len(failed)}/{len(grads)} gradients match"
          + (" (dropout: against Paddle's own backward program, both seeded alike)" if random else "")
          + (f" ({len(right)} of them the central differences, where Paddle's own backward is wrong)" if right else "")
          + (f"; differ: {failed}" if failed else ""))
    return not failed


def main(args: list[str]) -> int:
    if not args or len(args) % 2:
        print(__doc__)
        return 2
    results = [run_one(program, fixture) for program, fixture in zip(args[::2], args[1::2])]
    if len(results) > 1:
        print(f"{sum(results)}/{len(results)} programs give Paddle's gradients")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
