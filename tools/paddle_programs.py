"""What the Paddle fixture tools share: writing legacy programs, starting a script's PIR half, reading a PIR
program's values."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import paddle


def write_gz(path: Path, data: bytes) -> None:
    """Write ``data`` gzipped to path + ".gz", with no timestamp (the same bytes give the same file); fixtures are kept
    gzipped (a tenth of their size) and tests unpack them as a user has them."""
    path.with_name(path.name + ".gz").write_bytes(gzip.compress(data, mtime=0))


def gzip_file(path: Path) -> None:
    """Replace the file at ``path`` (what paddle.jit.save or a serialiser wrote) by its gzipped copy, path + ".gz"."""
    write_gz(path, path.read_bytes())
    path.unlink()


def write_pir_gz(program, path: Path) -> None:
    """The PIR program serialised as paddle.jit.save writes it, gzipped to path + ".gz" (no plain copy left)."""
    with tempfile.TemporaryDirectory() as tmp:
        paddle.base.core.serialize_pir_program(program, f"{tmp}/program.json", True, False, True)
        write_gz(path, Path(f"{tmp}/program.json").read_bytes())


def pir_minimized(out: Path, prefix: str, build, make_optimizer, seed: int):
    """In Paddle 3's PIR static mode, ``build()``'s loss in a new main/startup pair (both seeded ``seed``) minimized
    by ``make_optimizer()``, the loss fetched as "loss"; the pair written gzipped as out/PREFIXpir_train.json and
    out/PREFIXpir_startup.json: (main, startup, loss, optimizer)."""
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        main.random_seed = startup.random_seed = seed
        loss = build()
        optimizer = make_optimizer()
        optimizer.minimize(loss)
        paddle._pir_ops.fetch(loss, "loss", 0).persistable = True
    write_pir_gz(main, out / f"{prefix}pir_train.json")
    write_pir_gz(startup, out / f"{prefix}pir_startup.json")
    return main, startup, loss, optimizer


def without_callstacks(program) -> bytes:
    """The program's bytes without the Python stack traces Paddle records on every op (most of its size, and of no
    use to a reader); the program itself keeps them."""
    copy = paddle.static.Program.parse_from_string(program.desc.serialize_to_string())
    for block in copy.blocks:
        for op in block.ops:
            if op.desc.has_attr("op_callstack"):
                op.desc.remove_attr("op_callstack")
    return copy.desc.serialize_to_string()


def write_stripped(path, program) -> None:
    """Write the program with its ops' Python stack traces removed from the program itself (what a fixture needs of
    it is the rest; a parse and reserialise, as without_callstacks makes, can change other bytes)."""
    for block in program.blocks:
        for op in block.ops:
            op.desc.remove_attr("op_callstack")
    Path(path).write_bytes(program.desc.serialize_to_string())


def write_programs_gz(folder: Path, programs: dict) -> None:
    """Each legacy program of ``programs`` (name -> Program) to folder/NAME.pb.gz without its call stacks."""
    for name, program in programs.items():
        write_gz(folder / f"{name}.pb", without_callstacks(program))


def minimized(build, make_optimizer, seed: int | None = None):
    """``build()`` (its loss first of what it returns) in a new legacy main/startup pair (both seeded ``seed``, when
    given), the forward cloned before ``make_optimizer()`` minimizes the loss: (main, startup, forward, optimizer,
    what build returned)."""
    main, startup = paddle.static.Program(), paddle.static.Program()
    if seed is not None:
        main.random_seed = startup.random_seed = seed
    with paddle.static.program_guard(main, startup):
        built = build()
        forward = main.clone()
        optimizer = make_optimizer()
        optimizer.minimize(built[0])
    return main, startup, forward, optimizer, built


def train_saving_values(exe, folder: Path, programs: tuple, loss, batches: dict, steps: int, batch: int, optimizer):
    """In a new scope: run the startup of ``programs`` (forward, main, startup), save the forward's persistables as
    folder/init.npz, train ``steps`` batches (run_steps), save them again as folder/trained.npz: (the scope, the
    losses)."""
    forward, main, startup = programs
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        losses = run_steps(exe, main, loss, batches, steps, batch, optimizer)
        np.savez(folder / "trained.npz", **legacy_persistables(forward, scope))
    return scope, losses


def weighted_corner(exe, feeds: dict, build, draw, weights: str = "w"):
    """A float64 gradient corner in legacy static mode: each of ``feeds`` an input needing its gradient, the loss
    sum(weights * build(inputs)) with the weights (fed as ``weights``) drawn by ``draw(size)`` once a run of the
    forward tells the value's size, and Paddle's gradients (paddle.static.gradients) of every input: (the forward,
    the program with the gradients, {"loss", "value", weights, each input's name and "<input>@GRAD": its numbers})."""
    main = paddle.static.Program()
    with paddle.static.program_guard(main, paddle.static.Program()):
        inputs = {}
        for key, value in feeds.items():
            inputs[key] = paddle.static.data(key, list(value.shape), "float64")
            inputs[key].stop_gradient = False
        value = build(inputs)
        weight = paddle.static.data(weights, [-1], "float64")
        loss = paddle.sum(paddle.reshape(value, [-1]) * weight)
        forward = main.clone()
        grads = paddle.static.gradients(loss, list(inputs.values()))
    (shaped,) = exe.run(forward, feed={**feeds, weights: np.zeros(1)}, fetch_list=[value.name])
    drawn = draw(shaped.size)
    fetched = exe.run(main, feed={**feeds, weights: drawn}, fetch_list=[loss, value, *grads])
    numbers = {"loss": fetched[0], "value": fetched[1]}
    for key, grad in zip(inputs, fetched[2:]):
        numbers[key], numbers[f"{key}@GRAD"] = feeds[key], grad
    return forward, main, {**numbers, weights: drawn}


def write_training_case(out: Path, programs: dict, feed: dict):
    """Write ``programs`` (name -> Program, with "train" and "startup" among them) without call stacks, run the
    startup and save every initialised persistable var (params.npz) and the feed (feed.npz); returns (executor,
    scope, persistable names, parameter grads the train program declares)."""
    out.mkdir(parents=True, exist_ok=True)
    for name, program in programs.items():
        (out / f"{name}.pb").write_bytes(without_callstacks(program))
    main = programs["train"]
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    exe.run(programs["startup"])
    persistable = sorted(v.name for v in main.list_vars() if v.persistable and v.name not in ("feed", "fetch")
                         and scope.find_var(v.name) is not None
                         and scope.find_var(v.name).get_tensor()._is_initialized())
    np.savez(out / "params.npz", **{n: np.array(scope.find_var(n).get_tensor()) for n in persistable})
    np.savez(out / "feed.npz", **feed)
    params = [p.name for p in main.all_parameters()]
    return exe, scope, persistable, [p + "@GRAD" for p in params if main.global_block().has_var(p + "@GRAD")]


def with_fetches(program, fetches) -> bytes:
    """The PIR program's JSON with a fetch op per (name, value) of ``fetches``, in their order, added to a clone (the
    program itself is left as it is)."""
    mapping = paddle.pir.IrMapping()
    copy = program.clone(mapping)
    with paddle.static.program_guard(copy):
        for column, (name, value) in enumerate(fetches):
            paddle._pir_ops.fetch(mapping.look_up(value), name, column).persistable = True
    with tempfile.TemporaryDirectory() as tmp:
        paddle.base.core.serialize_pir_program(copy, f"{tmp}/program.json", True, False, True)
        return Path(f"{tmp}/program.json").read_bytes()


def predict(model: str, params_file: str, feed: dict) -> dict:
    """Paddle Inference's outputs, by name, for a saved model (.pdmodel or PIR .json) run on ``feed``."""
    predictor = paddle.inference.create_predictor(paddle.inference.Config(model, params_file))
    for name in predictor.get_input_names():
        predictor.get_input_handle(name).copy_from_cpu(feed[name])
    predictor.run()
    return {name: predictor.get_output_handle(name).copy_to_cpu() for name in predictor.get_output_names()}


def script_main(main, main_pir) -> None:
    """A fixture script's entry, `script.py OUT [--pir]`: its legacy half, or its PIR half (which the legacy half
    starts in a second interpreter, the mode being fixed at start-up)."""
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    (main_pir if sys.argv[2:] == ["--pir"] else main)(out)


def pir_half(script: str, out: Path) -> None:
    """Run ``script OUT --pir`` in a second interpreter: the mode is fixed at start-up, and the shim is for legacy
    mode only."""
    subprocess.run([sys.executable, script, str(out), "--pir"], check=True,
                   env={**os.environ, "FLAGS_enable_pir_api": "1"})


def persistable_values(program) -> dict:
    """Every parameter and persistable input of a PIR program as the global scope holds it."""
    scope, names = paddle.static.global_scope(), []
    for op in program.global_block().ops:
        if op.name() == "builtin.parameter":
            names.append(op.attrs()["parameter_name"])
        elif op.name() == "pd_op.data" and op.result(0).persistable:
            names.append(op.attrs()["name"])
    return {name: np.array(scope.find_var(name).get_tensor()) for name in names}


def legacy_persistables(program, scope) -> dict:
    """The persistable vars of a legacy program but feed and fetch, as ``scope`` holds them."""
    names = [v.name for v in program.list_vars() if v.persistable and v.name not in ("feed", "fetch")]
    return {name: np.array(scope.var(name).get_tensor()) for name in names}


def run_steps(exe, main, loss, data: dict, steps: int, batch: int, optimizer) -> list[float]:
    """``steps`` runs of ``main`` on consecutive batches of ``data``, the loss of each; a scheduler's rate stepped
    after each, as a static-mode user's loop does."""
    losses = []
    for step in range(steps):
        feed = {k: v[step * batch:(step + 1) * batch] for k, v in data.items()}
        (value,) = exe.run(main, feed=feed, fetch_list=[loss.name])
        losses.append(float(value))
        if isinstance(optimizer._learning_rate, paddle.optimizer.lr.LRScheduler):
            optimizer._learning_rate.step()
    return losses
