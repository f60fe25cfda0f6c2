"""Check in a real PaddlePaddle 3.x (PIR mode) that the PIR JSON gradc writes loads and runs with the
numbers of the fixtures in tests/data/paddle/pir. Needs paddlepaddle, which gradc does not depend on.

    /path/to/paddle/python tools/run_pir_in_paddle.py [case ...]     (a case: "mlp", "pir_layers/celu")

For each case gradc reads Paddle's file, translates it, and writes it back as PIR with gradc.pir.save_pir:
- inference models (model.json + model.pdiparams): Paddle's load_inference_model reads gradc's file and
  its output must equal the fixture's;
- training fixtures, forward: the loss Paddle computes from gradc's file must equal the fixture's;
- training fixtures, with gradc's backward (append_backward) exported too: Paddle's deserializer reads
  it and the loss and every gradient must equal the fixture's;
- Paddle's own training programs (backward.json.gz) read by gradc and written back: the same;
- Paddle's PIR training programs with an optimizer (optim_*: train.json.gz) read by gradc and written back:
  from Paddle's persistables after its startup, the loss at each step and every persistable after the last;
- whole models as a CUDA build saves them (tests/data/paddle/gpu_build, "gpu_build/<model>"; every parameter seeded
  by name as tests/seeded_params.py draws it): the inference program, gradc's backward of the forward and Paddle's
  training program, each read by gradc and written back, to the fixture's output, loss and gradients;
- Paddle's PIR programs of second and third derivatives (tests/data/paddle/double_grad_ops/higher/pir, "higher/<case>")
  read by gradc and written back: their float64 gradients;
- gradc's own training programs (gradc.minimize with each optimizer of `gradc compile --optimizer`, over the
  PIR MLP) and their startup programs, written as PIR: Paddle runs
  the startup, takes the MLP's parameters and trains 5 steps with gradc's losses and persistables.
"""

from __future__ import annotations

import gzip
import json
import multiprocessing
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from paddle_pir_translated import run_with_inputs  # noqa: E402

import gradc  # noqa: E402
from gradc.pir import load_pir, save_pir  # noqa: E402
from seeded_params import param_value, stored_grad  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "paddle" / "pir"
LAYERS = DATA.parent / "pir_layers"   # coverage rows built in PIR mode (tools/paddle_pir_coverage.py)
paddle.enable_static()


def case_dir(case: str) -> Path:
    return DATA.parent / case if "/" in case else DATA / case


def run_program(path: Path, case_dir: Path, fetch_count: int) -> list[np.ndarray]:
    program = paddle.static.Program()
    paddle.base.core.deserialize_pir_program(str(path), program)
    fetch = [op.operand_source(0) for op in program.global_block().ops if op.name() == "pd_op.fetch"]
    meta = json.loads((case_dir / "meta.json").read_text()) if (case_dir / "meta.json").exists() else {}
    return run_with_inputs(program, case_dir, meta, fetch[:fetch_count])


def check(name: str, got, expected, rtol: float = 1e-5, atol: float = 1e-6) -> bool:
    ok = np.allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)   # an AMP step of inf grads: NaN loss
    if not ok:
        print(f"    {name}: max difference {np.max(np.abs(np.asarray(got) - expected)):.3g}")
    return ok


def inference(case: str, workdir: Path) -> bool:
    source = case_dir(case)
    save_pir(load_pir(source / "model.json"), workdir / "model.json")
    shutil.copy(source / "model.pdiparams", workdir / "model.pdiparams")
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope), np.load(source / "feed.npz") as feed:
        executor = paddle.static.Executor(paddle.CPUPlace())
        program, _, fetches = paddle.static.load_inference_model(str(workdir / "model"), executor)
        (out,) = executor.run(program, feed=dict(feed), fetch_list=fetches)
    return check("output", out, np.load(source / "expected.npy"))


def forward(case: str, workdir: Path) -> bool:
    source = case_dir(case)
    save_pir(load_pir(source / "forward.json"), workdir / "forward.json")
    (loss,) = run_program(workdir / "forward.json", source, 1)
    return check("loss", loss, np.load(source / "loss.npy"))


def training(case: str, workdir: Path) -> bool:
    source = case_dir(case)
    program = load_pir(source / "forward.json")
    # kl_div's target gets a gradient in gradc, none from Paddle's grad op: detached here, as in Paddle's program
    targets = [op.input("Target")[0] for op in program.global_block.ops if op.type == "kldiv_loss"]
    gradc.append_backward(program, "loss", no_grad_set=targets)
    with np.load(source / "grads.npz") as archive:
        grads = {name: archive[name] for name in archive.files}
    if json.loads((source / "meta.json").read_text()).get("paddle_program_wrong"):   # Paddle's backward of the
        with np.load(source / "grads_reference.npz") as archive:   # row is wrong as written; gradc's is right
            grads.update((name, archive[name]) for name in archive.files)
    save_pir(program, workdir / "train.json", fetch=list(grads))
    loss, *values = run_program(workdir / "train.json", source, 1 + len(grads))
    results = [check("loss", loss, np.load(source / "loss.npy"))]
    results += [check(name, value, grads[name]) for name, value in zip(grads, values)]
    return all(results)


def round_trip(case: str, workdir: Path) -> bool:
    source = case_dir(case)
    with np.load(source / "grads.npz") as archive:
        grads = {name: archive[name] for name in archive.files}
    save_pir(load_pir(gzip.decompress((source / "backward.json.gz").read_bytes())), workdir / "train.json")
    loss, *values = run_program(workdir / "train.json", source, 1 + len(grads))
    results = [check("loss", loss, np.load(source / "loss.npy"))]
    results += [check(name, value, grads[name]) for name, value in zip(grads, values)]
    return all(results)


def optimizer_steps(case: str, workdir: Path) -> bool:
    source = case_dir(case)
    save_pir(load_pir(gzip.decompress((source / "train.json.gz").read_bytes())), workdir / "train.json")
    program = paddle.static.Program()
    paddle.base.core.deserialize_pir_program(str(workdir / "train.json"), program)
    loss = next(op.operand_source(0) for op in program.global_block().ops if op.name() == "pd_op.fetch")
    scope, executor, losses = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace()), []
    with paddle.static.scope_guard(scope), np.load(source / "init.npz") as init, \
            np.load(source / "feeds.npz") as feeds, np.load(source / "final.npz") as final:
        for name in init.files:
            scope.var(name).get_tensor().set(init[name], paddle.CPUPlace())
        for step in range(len(feeds["x"])):
            (value,) = executor.run(program, feed={n: feeds[n][step] for n in feeds.files}, fetch_list=[loss])
            losses.append(float(np.asarray(value)))
        results = [check("losses", losses, np.load(source / "losses.npy"))]
        results += [check(n, np.array(scope.find_var(n).get_tensor()), final[n]) for n in final.files]
    return all(results)


def compiled_optimizer(case: str, workdir: Path) -> bool:
    name, source = case.split("/")[1], DATA / "mlp"
    program = load_pir(source / "forward.json")
    startup = gradc.minimize(program, "loss", name, lr=0.05)
    save_pir(program, workdir / "train.json")
    save_pir(startup, workdir / "startup.json")
    with np.load(source / "params.npz") as archive:
        params = {n: archive[n] for n in archive.files}
    with np.load(source / "feed.npz") as archive:
        feed = {n: archive[n] for n in archive.files}
    scope, executor = gradc.Scope(), gradc.Executor()
    executor.run(startup, scope=scope)
    for n, value in params.items():
        scope[n] = value
    ours = [float(executor.run(program, feed=feed, fetch_list=["loss"], scope=scope)[0]) for _ in range(5)]
    main_program, startup_program = paddle.static.Program(), paddle.static.Program()
    paddle.base.core.deserialize_pir_program(str(workdir / "train.json"), main_program)
    paddle.base.core.deserialize_pir_program(str(workdir / "startup.json"), startup_program)
    loss = next(op.operand_source(0) for op in main_program.global_block().ops if op.name() == "pd_op.fetch")
    paddle_scope, runner = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    with paddle.static.scope_guard(paddle_scope):
        runner.run(startup_program)
        for n, value in params.items():
            paddle_scope.var(n).get_tensor().set(value, paddle.CPUPlace())
        theirs = [float(np.asarray(runner.run(main_program, feed=feed, fetch_list=[loss])[0])) for _ in range(5)]
        results = [check("losses", theirs, ours)]
        results += [check(n, np.array(paddle_scope.find_var(n).get_tensor()), np.asarray(scope[n]))
                    for n in startup.global_block.vars if startup.global_block.vars[n].persistable]
    return all(results)


def gpu_build(case: str, workdir: Path) -> bool:
    """A CUDA build's model (gpu_build/<model>): gradc's writing of its inference program, of its forward with gradc's
    backward and of Paddle's training program, each run by Paddle with the seeded parameters."""
    source = DATA.parent / case
    meta = json.loads((source / "meta.json").read_text())
    with np.load(source / "feed.npz") as archive:
        feed = {name: archive[name] for name in archive.files}
    with np.load(source / "grads.npz") as archive:
        grads = {name: archive[name] for name in archive.files}
    with np.load(source / "expected.npz") as archive:
        expected = archive["out"]
    forward = load_pir(gzip.decompress((source / "forward.json.gz").read_bytes()))
    gradc.append_backward(forward, "loss")
    programs = {"model": load_pir(gzip.decompress((source / "model.json.gz").read_bytes())), "gradc_train": forward,
                "paddle_train": load_pir(gzip.decompress((source / "train.json.gz").read_bytes()))}
    results = []
    for kind, program in programs.items():
        save_pir(program, workdir / f"{kind}.json", fetch=list(grads) if kind == "gradc_train" else ())
        loaded = paddle.static.Program()
        paddle.base.core.deserialize_pir_program(str(workdir / f"{kind}.json"), loaded)
        fetches = [op.operand_source(0) for op in loaded.global_block().ops if op.name() == "pd_op.fetch"]
        scope = paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            for op in loaded.global_block().ops:
                if op.name() == "builtin.parameter":
                    name = op.attrs()["parameter_name"]
                    value = param_value(name, [int(d) for d in op.result(0).shape], meta["seed"])
                    scope.var(name).get_tensor().set(value, paddle.CPUPlace())
            values = paddle.static.Executor(paddle.CPUPlace()).run(
                loaded, feed={n: v for n, v in feed.items() if n in _data_names(loaded)}, fetch_list=fetches)
        if kind == "model":
            results.append(check("output", values[0], expected))
            continue
        results.append(check(f"{kind} loss", values[0], np.load(source / "loss.npy")))
        share = 1e-2 if case.endswith("mobilenet_v2") else 1e-4   # of a gradient's norm, as tests/test_gpu_build.py
        for name, value in zip(grads, values[1:]):
            got = stored_grad(name, value)
            ok = np.linalg.norm(got - grads[name]) <= share * np.linalg.norm(grads[name]) + 1e-5 * np.sqrt(got.size)
            results.append(ok or check(f"{kind} {name}", got, grads[name]))
    return all(results)


HIGHER = DATA.parent / "double_grad_ops" / "higher" / "pir"   # tools/paddle_higher_order_ops.py's PIR programs


def higher_order(case: str, workdir: Path) -> bool:
    """Paddle's PIR program of a second or third derivative (pd_op.<op>_double_grad, _triple_grad) read by gradc and
    written back: Paddle's run of it gives the fixture's float64 gradients (to 1e-12)."""
    name = case.removeprefix("higher/")
    save_pir(load_pir(gzip.decompress((HIGHER / f"{name}.json.gz").read_bytes())), workdir / "program.json")
    program = paddle.static.Program()
    paddle.base.core.deserialize_pir_program(str(workdir / "program.json"), program)
    fetches = [op.operand_source(0) for op in program.global_block().ops if op.name() == "pd_op.fetch"]
    with np.load(HIGHER / "higher.npz") as paddles:
        feed = {var: paddles[f"{name}_{var}"] for var in _data_names(program)}
        expected = [paddles[f"{name}_{index}@GRAD"] for index in range(len(fetches))]
    got = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=feed, fetch_list=fetches)
    return all([check(f"grad {index}", value, want, rtol=1e-12, atol=1e-12)
                for index, (value, want) in enumerate(zip(got, expected))])


def _data_names(program) -> set[str]:
    return {op.attrs()["name"] for op in program.global_block().ops if op.name() == "pd_op.data"}


COMPILED = ["sgd", "momentum", "adam", "adamw", "adagrad", "adamax", "rmsprop", "adadelta", "lamb", "nadam", "radam",
            "rprop", "lars_momentum", "merged_momentum", "merged_adam"]


def own_failures(case: str) -> list[str]:
    """The errors with which Paddle fails to run its own translation of a legacy fixture (paddle_pir_translated.py)."""
    path = case_dir(case) / "meta.json"
    return list(json.loads(path.read_text()).get("paddle_run_errors", {}).values()) if path.exists() else []


def attempt(kind, case: str, workdir: Path) -> tuple[bool, str]:
    try:
        ok = kind(case, workdir)
        return ok, "matches" if ok else "DIFFERS"
    except (gradc.GradcError, RuntimeError, ValueError) as exc:
        if any(error and error in str(exc) for error in own_failures(case)):   # "" would match any
            return True, "fails as Paddle's own translation does (meta.json paddle_run_errors)"
        return False, f"FAILED: {str(exc).strip().splitlines()[0][:300]}"


def apart(kind, case: str, workdir: Path) -> tuple[bool, str]:
    """attempt in a forked child, so that a crash of Paddle's executor ends only its case (on a CPU without AVX-512,
    Paddle 3.3.1's fused layer/RMS norm CPU kernels die with SIGILL)."""
    context = multiprocessing.get_context("fork")
    reader, writer = context.Pipe(duplex=False)
    child = context.Process(target=lambda: writer.send(attempt(kind, case, workdir)))
    child.start()
    child.join()
    if child.exitcode == 0 and reader.poll():
        return reader.recv()
    return False, f"CRASHED: Paddle's executor died (exit code {child.exitcode}; -4 is SIGILL)"


def main(cases: list[str]) -> int:
    failures = crashes = 0
    every = sorted(p.name for p in DATA.iterdir()) + sorted(f"pir_layers/{p.name}" for p in LAYERS.iterdir())
    every += [f"compiled/{name}" for name in COMPILED]
    every += [f"gpu_build/{p.name}" for p in sorted((DATA.parent / "gpu_build").iterdir())]
    every += [f"higher/{p.name.removesuffix('.json.gz')}" for p in sorted(HIGHER.glob("*.json.gz"))]
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases or every:
            kinds = [inference] if (case_dir(case) / "model.json").exists() else [forward, training]
            if (case_dir(case) / "train.json.gz").exists():
                kinds = [optimizer_steps]
            if case.startswith("compiled/"):
                kinds = [compiled_optimizer]
            if case.startswith("gpu_build/"):
                kinds = [gpu_build]
            if case.startswith("higher/"):
                kinds = [higher_order]
            if (case_dir(case) / "backward.json.gz").exists():
                kinds.append(round_trip)
            for kind in kinds:
                workdir = Path(tmp) / f"{case.replace('/', '-')}-{kind.__name__}"
                workdir.mkdir()
                ok, message = apart(kind, case, workdir)
                failures += not ok
                crashes += message.startswith("CRASHED")
                print(f"{case:40} {kind.__name__:10} {message}", flush=True)
    print(f"Paddle {paddle.__version__}: {failures} failure(s), {crashes} of them crashes of Paddle's executor")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
