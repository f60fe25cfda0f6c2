"""The gradc side of benchmarks/perf.py: a worker that reads one JSON request a line on stdin and answers one
JSON line, so the driver can interleave it with the Paddle worker and with a baseline gradc (the same file
run with PYTHONPATH at an older source tree). Each request is one round of one row; what a row needs is
built on its first request and kept."""

from __future__ import annotations

import gc
import inspect
import json
import os
import resource
import statistics
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np

import gradc
from gradc.io import parse_program, serialize
from gradc.passes import BackwardPass, Pipeline, VerifyPass
from gradc.proto import framework_pb2 as pb
from gradc.verify import check_structure

sys.path.insert(0, str(Path(__file__).parent))
from perf_models import deep_mlp, lenet, mlp_layers, mlp_numpy, scale_chain, scale_chain_numpy  # noqa: E402

try:
    from gradc.executor.kernels import SHAPE_ONLY
except ImportError:   # an older gradc (perf.py divides every peak by the current gradc's minimum)
    SHAPE_ONLY = {}

from gradc.executor import executor as _executor  # noqa: E402

# runs before timing a step: the executor's steady state, as a training loop reaches it (a plan becomes
# straight-line code after STRAIGHT_AFTER_RUNS runs; an older gradc has no such stage)
WARM_RUNS = getattr(_executor, "STRAIGHT_AFTER_RUNS", 0) + 2

_CACHE: dict = {}


def cached(key, make):
    if key not in _CACHE:
        _CACHE[key] = make()
    return _CACHE[key]


def clock(fn):
    start = time.perf_counter()
    result = fn()
    return time.perf_counter() - start, result


def cpu_clock(fn):
    """Wall and CPU seconds: on a shared machine the CPU time is what a size comparison can trust."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def write_mlp(path: str, layers: int, startup: str | None = None) -> dict:
    """The deep MLP's forward program (and its startup) as gradc builds it, for every worker to read."""
    net = deep_mlp(layers)
    gradc.save(net.program, path)
    if startup:
        gradc.save(net.startup, startup)
    return {"ops": net.program.num_ops(), "loss": net.loss}


def backward(path: str, loss: str) -> dict:
    """append_backward alone, on a fresh copy of the forward program."""
    program = cached(("forward", path), lambda: gradc.load(path))
    copy = program.clone()
    gc.collect()
    seconds, _ = clock(lambda: gradc.append_backward(copy, loss))
    return {"seconds": seconds}


# every block read at load; a baseline tree from before lazy loads knows no other load
EAGER = {"lazy": False} if "lazy" in inspect.signature(parse_program).parameters else {}


def pipeline(path: str) -> dict:
    """`gradc compile` in process: load, verify, backward, save; and protobuf's own parse and serialise of the
    same bytes, and the load-time validation of hostile input (required fields and enums, then structure and
    names), timed again on their own."""
    data = Path(path).read_bytes()
    gc.collect()
    load, load_cpu, program = cpu_clock(lambda: parse_program(data, "pb", path))
    # the compile, step by step: a lazy load's blocks read (on first use: here rather than in the verify pass), the
    # verify pass, the backward pass (Pipeline([VerifyPass(), BackwardPass()]) runs the two passes in turn)
    read, read_cpu, _ = cpu_clock(lambda: [block.ops for block in program.blocks])
    verify, verify_cpu, _ = cpu_clock(lambda: VerifyPass()(program))
    backward, backward_cpu, _ = cpu_clock(lambda: BackwardPass()(program))
    compile_, compile_cpu = read + verify + backward, read_cpu + verify_cpu + backward_cpu
    save, save_cpu, saved = cpu_clock(lambda: serialize(program, "pb"))
    message = pb.ProgramDesc()
    parse, parse_cpu, _ = cpu_clock(lambda: message.ParseFromString(data))
    required, _ = clock(message.IsInitialized)
    eager, loaded = clock(lambda: parse_program(data, "pb", path, **EAGER))
    structure, _ = clock(lambda: check_structure(loaded, path))
    compiled = pb.ProgramDesc.FromString(saved)
    serialise, serialise_cpu, _ = cpu_clock(lambda: compiled.SerializeToString(deterministic=True))
    return {"load": load, "compile": compile_, "save": save, "total": load + compile_ + save, "parse": parse,
            "eager_load": eager, "cpu": load_cpu + compile_cpu + save_cpu, "serialize": serialise,
            "read_cpu": read_cpu, "verify_cpu": verify_cpu, "backward_cpu": backward_cpu, "save_cpu": save_cpu,
            "serialize_cpu": serialise_cpu,
            "protobuf_cpu": parse_cpu + serialise_cpu,
            "validation": required + structure,
            "forward_ops": len(message.blocks[0].ops)}


def cli_compile(path: str) -> dict:
    """`gradc compile` as a user runs it, in a new process (start-up included): its wall and CPU time (the CPU
    time moves less with the load of a shared machine), and a bare interpreter's start."""
    env = {**os.environ, "PYTHONPATH": str(Path(gradc.__file__).parent.parent)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)   # bytecode cached, as an installed gradc has it
    command = [sys.executable, "-m", "gradc", "compile", path, "-o", path + f".{os.getpid()}.cli.pb"]
    cached(("cli", path), lambda: subprocess.run(command, env=env, check=True, capture_output=True))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    seconds, _ = clock(lambda: subprocess.run(command, env=env, check=True, capture_output=True))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    bare, _ = clock(lambda: subprocess.run([sys.executable, "-c", "pass"], env=env, check=True))
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"seconds": seconds, "cpu": cpu, "bare": bare}


def compile_memory(path: str) -> dict:
    """Peak traced memory of load + compile + save, per forward op."""
    data = Path(path).read_bytes()
    gc.collect()
    tracemalloc.start()
    program = parse_program(data, "pb", path)
    Pipeline([VerifyPass(), BackwardPass()])(program)
    serialize(program, "pb")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"per_op": peak / len(program.global_block.ops)}


def _trained(path: str, params: str | None, startup: str | None) -> tuple:
    """The compiled training program of a forward program, and a scope holding its parameters."""
    program = gradc.load(path)
    pairs = gradc.append_backward(program)
    scope = gradc.Scope()
    if params:
        with np.load(params) as values:
            for name in values.files:
                scope[name] = values[name]
    if startup:
        gradc.Executor().run(gradc.load(startup), scope=scope)
    return program, pairs, scope


def _feed(feed: str) -> dict:
    with np.load(feed) as values:
        return {name: values[name] for name in values.files}


def step(path: str, feed: str, params: str | None = None, startup: str | None = None, steps: int = 1) -> dict:
    """A training step (forward + backward) through the executor, the loss and the first weight grad fetched: the
    median of ``steps`` run back to back, as a training loop runs them."""
    program, pairs, scope = cached(("step", path), lambda: _trained(path, params, startup))
    fetch = [_loss(program), pairs[0][1]]
    executor = cached(("executor", path), gradc.Executor)
    values = _feed(feed)
    cached(("warm", path), lambda: [executor.run(program, values, fetch, scope) for _ in range(WARM_RUNS)])
    timed = [clock(lambda: executor.run(program, values, fetch, scope)) for _ in range(steps)]
    loss = np.asarray(timed[-1][1][0]).reshape(-1)[0]
    return {"seconds": statistics.median(t for t, _ in timed), "loss": float(loss)}


def _loss(program: gradc.Program) -> str:
    """The var the seed op (the first backward op: fill_constant/fill_any_like of X@GRAD) differentiates."""
    for op in program.global_block.ops:
        for name in op.output_names():
            if name.endswith("@GRAD") and op.type in ("fill_constant", "fill_any_like"):
                return name.removesuffix("@GRAD")
    raise ValueError("no seed op")


def step_against_numpy(path: str, feed: str, params: str | None = None, startup: str | None = None,
                       steps: int = 1) -> dict:
    """gradc's step (as ``step`` runs it) and the hand-written numpy one taken in turns, ``steps`` of each: the median
    of the pairs' ratios, so that a slow spell of the shared machine falls on both sides of a ratio. Results are
    dropped step by step: kept, numpy's 100 weight grads made each of its steps fault in 1.6 MB of fresh memory."""
    program, pairs, scope = cached(("step", path), lambda: _trained(path, params, startup))
    fetch = [_loss(program), pairs[0][1]]
    executor = cached(("executor", path), gradc.Executor)
    values = _feed(feed)
    layers = [(scope[w], scope[b]) for w, b in mlp_layers(program)]
    cached(("warm", path), lambda: [executor.run(program, values, fetch, scope) for _ in range(WARM_RUNS)])
    timed = []
    for _ in range(steps):
        ours_seconds, ours = clock(lambda: executor.run(program, values, fetch, scope))
        theirs_seconds, theirs = clock(lambda: mlp_numpy(values["x"], values["label"], layers))
        timed.append((ours_seconds, theirs_seconds))
    return {"ratio": statistics.median(o / t for o, t in timed), "seconds": statistics.median(o for o, _ in timed),
            "numpy": statistics.median(t for _, t in timed), "loss": float(np.asarray(ours[0]).reshape(-1)[0]),
            "numpy_loss": float(theirs[0])}


def trainer_step(path: str, feed: str, params: str | None = None, startup: str | None = None,
                 steps: int = 1) -> dict:
    """A step of gradc.training's loop (what `gradc train` runs: the streams seeded per step, the scalars kept) and
    the executor's run of the same program, in turns, ``steps`` of each: the median of the pairs' ratios."""
    from gradc.training.trainer import Trainer
    program, pairs, scope = cached(("step", path), lambda: _trained(path, params, startup))
    loss, executor, values = _loss(program), cached(("executor", path), gradc.Executor), _feed(feed)
    with warnings.catch_warnings():   # "no op updates its parameters": the loop's cost is the question, not SGD's
        warnings.simplefilter("ignore")
        trainer = cached(("trainer", path), lambda: Trainer(program, (), scope, fetch=[loss], seed=0))
    cached(("warm trainer", path), lambda: [(trainer.train_step(values), executor.run(program, values, [loss], scope))
                                            for _ in range(WARM_RUNS)])
    timed = [(clock(lambda: trainer.train_step(values))[0], clock(lambda: executor.run(program, values, [loss],
                                                                                        scope))[0])
             for _ in range(steps)]
    return {"ratio": statistics.median(t / e for t, e in timed), "seconds": statistics.median(t for t, _ in timed),
            "executor": statistics.median(e for _, e in timed)}


def scale_overhead(count: int) -> dict:
    program = cached(("scale", count), lambda: scale_chain(count))
    x = np.ones([1], np.float32)
    executor = cached(("executor", "scale"), gradc.Executor)
    cached(("warm", "scale"), lambda: [executor.run(program, {"v0": x}, [f"v{count}"], gradc.Scope())
                                       for _ in range(WARM_RUNS)])
    ours, _ = clock(lambda: executor.run(program, {"v0": x}, [f"v{count}"], gradc.Scope()))
    numpy, _ = clock(lambda: scale_chain_numpy(x, count))
    return {"gradc": ours, "numpy": numpy, "per_op": (ours - numpy) / count}


def memory(path: str, feed: str, params: str | None = None, startup: str | None = None) -> dict:
    """Peak traced memory of one training step, and the least any schedule of these ops needs: at each op,
    the bytes of the values it writes plus those written earlier that it or a later op still reads (for more
    than its shape: Paddle's no-need-buffer inputs)."""
    program, pairs, scope = cached(("step", path), lambda: _trained(path, params, startup))
    values = _feed(feed)
    fetch = [_loss(program), pairs[0][1]]
    ops = program.global_block.ops
    written = {name for op in ops for name in op.output_names()} - set(values) - set(scope.keys())
    sizes = dict(zip(sorted(written), gradc.Executor().run(program, values, sorted(written), scope)))
    last_read = {name: len(ops) if name in fetch else -1 for name in written}
    for idx, op in enumerate(ops):
        for slot, names in op.inputs.items():
            for name in names:
                if name in last_read and slot not in SHAPE_ONLY.get(op.type, ()):   # a shape read needs no buffer
                    last_read[name] = max(last_read[name], idx)
    born = {}
    for idx, op in enumerate(ops):
        for name in op.output_names():
            born.setdefault(name, idx)
    minimum = max(sum(np.asarray(sizes[n]).nbytes for n in written if born[n] <= idx <= max(last_read[n], born[n]))
                  for idx in range(len(ops)))
    executor = gradc.Executor()
    executor.run(program, values, fetch, scope)
    gc.collect()
    tracemalloc.start()
    start = tracemalloc.get_traced_memory()[0]
    executor.run(program, values, fetch, scope)
    peak = tracemalloc.get_traced_memory()[1] - start
    tracemalloc.stop()
    return {"peak": peak, "minimum": minimum}


ROWS = {"write_mlp": write_mlp, "backward": backward, "pipeline": pipeline, "compile_memory": compile_memory,
        "cli_compile": cli_compile, "step": step, "step_against_numpy": step_against_numpy, "scale": scale_overhead,
        "trainer_step": trainer_step,
        "memory": memory}


def write_lenet(folder: str, batch: int) -> dict:
    """LeNet's forward and startup programs and a feed, when no Paddle builds them."""
    net = lenet()
    gradc.save(net.program, Path(folder) / "lenet.pb")
    gradc.save(net.startup, Path(folder) / "lenet.startup.pb")
    rng = np.random.default_rng(0)
    np.savez(Path(folder) / "lenet_feed.npz", x=rng.standard_normal((batch, 1, 28, 28), dtype=np.float32),
             label=rng.integers(0, 10, (batch, 1)))
    return {}


def write_mlp_feed(path: str, batch: int) -> dict:
    rng = np.random.default_rng(0)
    np.savez(path, x=rng.standard_normal((batch, 64), dtype=np.float32), label=rng.integers(0, 64, (batch, 1)))
    return {}


ROWS.update(write_lenet=write_lenet, write_mlp_feed=write_mlp_feed)


def describe() -> dict:
    return {"gradc": str(Path(gradc.__file__).parent), "numpy": np.__version__, "pid": os.getpid()}


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = describe() if request["row"] == "describe" else ROWS[request["row"]](**request["args"])
        except Exception as exc:  # noqa: BLE001 - the driver reports the row as failed, with the reason
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
