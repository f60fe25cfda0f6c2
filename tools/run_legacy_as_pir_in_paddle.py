"""Check in a real PaddlePaddle 3.x that legacy training programs written as PIR by gradc (`gradc convert
train.pb train.json`) load and run with the legacy fixtures' numbers. Needs paddlepaddle.

    /path/to/paddle/python tools/run_legacy_as_pir_in_paddle.py [fixture dir ...]

For every fixture directory under tests/data/paddle with forward.pb, grads.npz and loss.npy (the default:
all of them, rows of tools/coverage included; fixtures with random draws (random.npz, an rnn's
dropout_state.npy) are skipped), each in a child
process (Paddle can crash on a program it does not accept):
- compiled: gradc compiles forward.pb (append_backward), writes it as PIR fetching the loss and the
  gradients, and Paddle's deserialize_pir_program + Executor must give loss.npy and grads.npz;
- converted: Paddle's own legacy training program (backward.pb) written as PIR the same way.
Where Paddle's legacy gradient is wrong (meta.json paddle_wrong_grads), Paddle's run of the PIR must give
what gradc's run of the same program gives, or, where the fault is Paddle's kernel, Paddle's own wrong numbers.

    /path/to/paddle/python tools/run_legacy_as_pir_in_paddle.py --optim [case ...]

Paddle's legacy training programs with an optimizer (tests/data/paddle/optim, those gradc writes as PIR)
converted: from Paddle's persistables after its startup, with its learning rate of each step, the loss at
each step and every persistable after the last must be Paddle's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
import gradc  # noqa: E402
from gradc.pir import save_pir  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "paddle"
paddle.enable_static()


def arrays(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        return {}
    with np.load(path) as archive:
        return {name: archive[name] for name in archive.files}


def run_in_paddle(path: Path, case: Path, fetch_count: int) -> list[np.ndarray]:
    program = paddle.static.Program()
    paddle.base.core.deserialize_pir_program(str(path), program)
    fetch = [op.operand_source(0) for op in program.global_block().ops if op.name() == "pd_op.fetch"]
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for name, value in arrays(case / "params.npz").items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        # a fetched LoD tensor (a sequence input's gradient) does not convert to numpy by itself
        values = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=lod_feed(case), return_numpy=False,
                                                               fetch_list=fetch[:fetch_count])
    return [np.array(value) for value in values]


def lod_feed(case: Path) -> dict:
    """The fixture's inputs, a LoD input (meta.json "lods") as a DenseTensor carrying its offsets."""
    lods = json.loads((case / "meta.json").read_text()).get("lods", {})
    feed = arrays(case / "feed.npz")
    for name in set(feed) & set(lods):
        tensor = paddle.base.core.DenseTensor()
        tensor.set(feed[name], paddle.CPUPlace())
        tensor.set_lod(lods[name])
        feed[name] = tensor
    return feed


def check(case: Path, program: gradc.Program, workdir: Path) -> str:
    loss, grads = json.loads((case / "meta.json").read_text())["loss"], arrays(case / "grads.npz")
    # Paddle cannot fetch a SelectedRows grad (a sparse embedding's): those are left out
    names = [name for name in grads if program.global_block.find_var(name) is not None
             and program.global_block.find_var(name).type != gradc.VarType.SELECTED_ROWS]
    save_pir(program, workdir / "train.json", fetch=[loss, *names])
    values = run_in_paddle(workdir / "train.json", case, 1 + len(names))
    # where Paddle's legacy gradient is wrong, the program's gradient is whatever gradc computes running it
    wrong_in_paddle = [n for n in names if n in (json.loads((case / "meta.json").read_text()).get("paddle_wrong_grads")
                                                 or [])]
    ours = dict(zip(wrong_in_paddle, gradc_run(program, case, wrong_in_paddle))) if wrong_in_paddle else {}
    expected = [np.load(case / "loss.npy"), *(grads[n] for n in names)]
    close = [np.allclose(got, want, rtol=1e-5, atol=1e-6) for got, want in zip(values, expected)]
    # a wrong program in Paddle's legacy backward is right in gradc's program: Paddle must then give gradc's
    # numbers; a wrong Paddle kernel (rnn_grad's reverse direction of shorter sequences) is wrong in PIR too
    kernel_bug = [n for n, ok in zip(names, close[1:]) if n in ours and ok]
    wrong = [name for name, got, ok in zip([loss, *names], values, close)
             if not ok and not (name in ours and np.allclose(got, ours[name], rtol=1e-5, atol=1e-6))]
    missing = sorted(set(grads) - set(names))
    notes = [f"not fetched: {missing}"] * bool(missing)
    notes += [f"Paddle's own wrong numbers: {kernel_bug}"] * bool(kernel_bug)
    return "DIFFERS: " + ", ".join(wrong) if wrong else "matches" + (f" ({'; '.join(notes)})" if notes else "")


def gradc_run(program: gradc.Program, case: Path, names: list[str]) -> list[np.ndarray]:
    scope = gradc.Scope()
    for name, value in arrays(case / "params.npz").items():
        scope[name] = value
    lods = json.loads((case / "meta.json").read_text()).get("lods", {})
    feed = {name: gradc.LoDTensor(value, lods[name]) if name in lods else value
            for name, value in arrays(case / "feed.npz").items()}
    return gradc.Executor().run(program, feed=feed, fetch_list=names, scope=scope)


def compiled(case: Path, workdir: Path) -> str:
    program = gradc.load(case / "forward.pb")
    gradc.append_backward(program, json.loads((case / "meta.json").read_text())["loss"])
    return check(case, program, workdir)


def converted(case: Path, workdir: Path) -> str:
    return check(case, gradc.load(case / "backward.pb"), workdir)


def optimizer_steps(case: Path, workdir: Path) -> str:
    meta = json.loads((case / "meta.json").read_text())
    save_pir(gradc.load(case / "train.pb"), workdir / "train.json", fetch=[meta["loss"]])   # AMP scales the loss
    program = paddle.static.Program()
    paddle.base.core.deserialize_pir_program(str(workdir / "train.json"), program)
    loss = next(op.operand_source(0) for op in program.global_block().ops
                if op.name() == "pd_op.fetch" and op.attrs()["name"] == meta["loss"])
    init, feeds, final, lrs = arrays(case / "init.npz"), arrays(case / "feeds.npz"), arrays(case / "final.npz"), \
        np.load(case / "lrs.npy")
    scope, executor, losses = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace()), []
    with paddle.static.scope_guard(scope):
        for name, value in init.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        rate = init[meta["learning_rate_var"]]
        for step in range(meta["steps"]):
            scope.var(meta["learning_rate_var"]).get_tensor().set(np.full_like(rate, lrs[step]), paddle.CPUPlace())
            value = executor.run(program, feed={n: v[step] for n, v in feeds.items()}, fetch_list=[loss])[0]
            losses.append(float(np.asarray(value)))
        wrong = [n for n, v in final.items() if not np.allclose(np.array(scope.find_var(n).get_tensor()), v,
                                                                   rtol=1e-4, atol=1e-6)]
    wrong += ["losses"] if not np.allclose(losses, np.load(case / "losses.npy"), rtol=1e-4, atol=1e-6) else []
    return "DIFFERS: " + ", ".join(wrong) if wrong else "matches"


def optim_cases() -> list[Path]:
    """The optimizer training programs gradc writes as PIR (the others have update ops without a table row)."""
    found = []
    for case in sorted(p.parent for p in (DATA / "optim").glob("*/train.pb")):
        try:
            save_pir(gradc.load(case / "train.pb"), Path(tempfile.gettempdir()) / "probe.json")
            found.append(case)
        except gradc.GradcError:
            pass
    return found


def cases() -> list[Path]:
    found = sorted(p.parent for p in DATA.rglob("forward.pb") if "pir" not in p.parts)
    return [c for c in found if (c / "grads.npz").exists() and (c / "loss.npy").exists()
            and not (c / "random.npz").exists() and not (c / "dropout_state.npy").exists()]


def one(case: Path, kind) -> str:
    with tempfile.TemporaryDirectory() as tmp:
        try:
            return kind(case, Path(tmp))
        except (gradc.GradcError, RuntimeError, ValueError) as exc:
            return f"FAILED: {str(exc).strip().splitlines()[0][:240]}"


def main(paths: list[str]) -> int:
    if paths[:1] == ["--one"]:   # a child: one case, so a crash in Paddle is that case's result
        print(one(Path(paths[1]), globals()[paths[2]]))
        return 0
    failures = total = 0
    optim = paths[:1] == ["--optim"]
    chosen = [Path(p).resolve() for p in paths[optim:]] or (optim_cases() if optim else cases())
    for case in chosen:
        kinds = (optimizer_steps,) if optim else (compiled, converted) if (case / "backward.pb").exists() \
            else (compiled,)
        for kind in kinds:
            child = subprocess.run([sys.executable, __file__, "--one", str(case), kind.__name__],
                                   capture_output=True, text=True)
            lines = child.stdout.strip().splitlines()
            message = lines[-1] if child.returncode == 0 and lines else f"CRASHED (exit {child.returncode})"
            total += 1
            failures += not message.startswith("matches")
            print(f"{case.relative_to(DATA)!s:55} {kind.__name__:9} {message}", flush=True)
    print(f"Paddle {paddle.__version__}: {total - failures} of {total} match")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
