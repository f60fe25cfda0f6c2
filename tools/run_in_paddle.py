"""Run programs gradc compiled in a real PaddlePaddle and compare with a fixture: checks that what gradc writes,
Paddle loads and executes. Needs paddlepaddle (not a gradc dependency).

Gradients of a compiled forward program against a fixture's grads.npz:

    gradc compile tests/data/paddle/vision/forward.pb -o /tmp/vision_train.pb
    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/run_in_paddle.py /tmp/vision_train.pb tests/data/paddle/vision

Every fixture (coverage rows, top-level fixtures, op families, vision training) compiled by gradc
(tools/compile_for_paddle.py), against Paddle's own numbers or its own backward of the same forward program:

    .venv/bin/python tools/compile_for_paddle.py /tmp/interop
    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/run_in_paddle.py --fixtures /tmp/interop [GLOB ...]

Programs with second- and third-order backwards, recomputation and eager accumulation (tests/interop_cases.py,
written by tools/higher_order_programs.py) against gradc's own numbers; --save keeps Paddle's numbers for
tests/test_higher_order_vs_paddle.py:

    .venv/bin/python tools/higher_order_programs.py /tmp/gradc_higher
    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/run_in_paddle.py --higher /tmp/gradc_higher \
        [--save tests/data/paddle/higher_order]

Training programs with gradc's optimizers (tools/gradc_optim_programs.py) against the optimizer fixtures: Paddle
runs gradc's startup program, takes the parameters from the fixture's init.npz, writes each step's learning rate
as its LRScheduler would, trains on the fixture's batches and must reach Paddle's own losses and persistables:

    .venv/bin/python tools/gradc_optim_programs.py /tmp/gradc_optim
    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/run_in_paddle.py --optim /tmp/gradc_optim [case ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle.base import framework

paddle.enable_static()
OPTIM = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "optim"


def _npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def _program(path: Path):
    return framework.Program.parse_from_string(path.read_bytes())


def gradients(program_file: str, fixture: str) -> int:
    directory = Path(fixture)
    program = _program(Path(program_file))
    scope = paddle.static.Scope()
    executor = paddle.static.Executor(paddle.CPUPlace())
    grads = _npz(directory / "grads.npz")
    with paddle.static.scope_guard(scope):
        for name, value in _npz(directory / "params.npz").items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        values = executor.run(program, feed=_npz(directory / "feed.npz"), fetch_list=list(grads))
    failed = [name for name, value in zip(grads, values)
              if not np.allclose(value, grads[name], rtol=1e-5, atol=1e-6)]
    print(f"Paddle {paddle.__version__} ran {program_file}: {len(grads) - len(failed)}/{len(grads)} gradients match"
          + (f"; differ: {failed}" if failed else ""))
    return 1 if failed else 0


def train_case(programs: Path, name: str) -> list[str]:
    """Paddle trains gradc's program of one case; the names that differ from Paddle's own training."""
    fixture = OPTIM / name
    meta = json.loads((fixture / "meta.json").read_text())
    program, startup = _program(programs / name / "train.pb"), _program(programs / name / "startup.pb")
    init, feeds, lrs = _npz(fixture / "init.npz"), _npz(fixture / "feeds.npz"), np.load(fixture / "lrs.npy")
    final, lr_var = _npz(fixture / "final.npz"), meta["learning_rate_var"]
    scope = paddle.static.Scope()
    executor = paddle.static.Executor(paddle.CPUPlace())
    losses = []
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        for var, value in init.items():
            if scope.find_var(var) is None:   # parameters and batch-norm stats: Paddle's random initialisers
                scope.var(var).get_tensor().set(value, paddle.CPUPlace())
        for step in range(meta["steps"]):
            scope.find_var(lr_var).get_tensor().set(np.float32(lrs[step]).reshape(init[lr_var].shape),
                                                    paddle.CPUPlace())
            feed = {var: batches[step] for var, batches in feeds.items()}
            losses.append(float(executor.run(program, feed=feed, fetch_list=[meta["loss"]])[0]))
        trained = {var: np.array(scope.find_var(var).get_tensor()).reshape(value.shape) for var, value in final.items()}
    failed = [] if np.allclose(losses, np.load(fixture / "losses.npy"), rtol=1e-4, atol=1e-6) else ["losses"]
    return failed + [var for var, value in final.items() if not np.allclose(trained[var], value, rtol=1e-4, atol=1e-6)]


def optim(programs: str, names: list[str]) -> int:
    directory = Path(programs)
    names = names or sorted(p.name for p in directory.iterdir() if (p / "train.pb").is_file())
    failed = {name: diff for name in names if (diff := train_case(directory, name))}
    for name, diff in failed.items():
        print(f"{name}: differs from Paddle's training in {diff}")
    print(f"Paddle {paddle.__version__} trained gradc's programs of {len(names)} cases: "
          f"{len(names) - len(failed)} match Paddle's own training")
    return 1 if failed else 0


def fixtures(compiled: str, patterns: list[str]) -> int:
    from collections import Counter

    from interop.paddle_side import EXPLAINED, run_all
    results = run_all(Path(compiled), patterns)
    skipped = json.loads((Path(compiled) / "skipped.json").read_text())
    groups = Counter(r.name.rsplit("/", 1)[0] for r in results)
    matched = Counter(r.name.rsplit("/", 1)[0] for r in results if not r.error and not r.differ)
    for group in sorted(groups):
        print(f"  {group}: {matched[group]}/{groups[group]} match")
    different = [r for r in results if r.error or r.differ]
    explained = [r for r in different if r.differ and r.name in EXPLAINED]
    for r in explained:
        print(f"explained, {r.name}: {EXPLAINED[r.name]}")
    crashed = [r for r in different if r.crashed]
    for r in crashed:
        print(f"crashed, {r.name}: {r.error}")
    failed = [r for r in different if r not in explained and r not in crashed]
    print(f"Paddle {paddle.__version__} ran {len(results)} programs gradc compiled: {len(results) - len(different)} "
          f"give Paddle's numbers, {len(explained)} differ where Paddle is wrong, {len(crashed)} crash Paddle's "
          f"executor (all listed above), "
          f"{sum(bool(r.error) for r in failed)} do not run, {sum(bool(r.differ) for r in failed)} differ otherwise; "
          f"gradc cannot compile {len(skipped)} fixtures: {', '.join(skipped)}")
    return 1 if failed else 0


def higher(programs: str, save: str | None) -> int:
    """Paddle runs each case's program on its feed and parameters; its gradients against gradc's."""
    failed = []
    cases = sorted(p for p in Path(programs).iterdir() if (p / "program.pb").is_file())
    for case in cases:
        fetch = json.loads((case / "fetch.json").read_text())
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            for name, value in _npz(case / "params.npz").items():
                scope.var(name).get_tensor().set(value, paddle.CPUPlace())
            values = paddle.static.Executor(paddle.CPUPlace()).run(
                _program(case / "program.pb"), feed=_npz(case / "feed.npz"), fetch_list=fetch)
        ours = _npz(case / "gradc.npz")
        differ = [name for name, value in zip(fetch, values)
                  if not np.allclose(value, ours[name], rtol=1e-6, atol=1e-8)]   # float64 programs
        print(f"{case.name}: {len(fetch) - len(differ)}/{len(fetch)} gradients match gradc's"
              + (f"; differ: {differ}" if differ else ""))
        failed += [case.name] if differ else []
        if save:
            Path(save).mkdir(parents=True, exist_ok=True)
            np.savez(Path(save) / f"{case.name}.npz", **{name: np.asarray(v) for name, v in zip(fetch, values)})
    print(f"Paddle {paddle.__version__} ran gradc's programs of {len(cases)} cases: {len(cases) - len(failed)} match")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:   # each mode names a directory (or a program and its meta) after it
        sys.exit(f"usage: see the docstring of {sys.argv[0]}:\n{__doc__}")
    if sys.argv[1] == "--fixtures":
        sys.exit(fixtures(sys.argv[2], sys.argv[3:]))
    if sys.argv[1] == "--optim":
        sys.exit(optim(sys.argv[2], sys.argv[3:]))
    if sys.argv[1] == "--higher":
        sys.exit(higher(sys.argv[2], sys.argv[4] if sys.argv[3:4] == ["--save"] else None))
    sys.exit(gradients(*sys.argv[1:3]))
