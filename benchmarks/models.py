"""One training step (forward + backward) of Paddle's models through gradc, against Paddle 3.3.1.

The programs are committed forward programs Paddle wrote: paddle.vision.models' (tests/data/paddle/layers/<row>/
forward.pb, loss named by its meta.json), and models of paddle.nn's layers at working sizes (benchmarks/programs/
<row>: a BERT-style encoder, an LSTM language model, a U-Net; tools/paddle_bench_programs.py). Per model:
gradc.load, gradc.append_backward on the loss, parameters drawn from their declared shapes, the feed (every var with
need_check_feed; the committed rows declare batch 2, --batch sizes only dims of -1), then the median of --repeats
steps after 2 warm-up steps, each fetching the loss and the first parameter's grad. With --paddle-python, a
subprocess parses the very same forward.pb (paddle.static.Program.parse_from_string), runs Paddle's append_backward,
puts the same parameters into a scope and runs the same feed; the two take their timed steps in turn, a gradc step
then a Paddle step, so that a slow spell of this shared machine falls on both, and the ratio is the median of the
pairs' ratios. A Paddle time is reported only when its loss agrees with gradc's (rtol 1e-4). Dropout's probability
is set to 0 in both (their masks are still drawn), else the two random masks would make the losses differ.

BLAS and OpenMP run one thread unless OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS say otherwise
(Paddle's subprocess inherits them): on a 2-core machine shared with other jobs threaded BLAS makes the timings
swing and the ratios meaningless. With one thread each, Paddle's executor also runs its ops one at a time
(FLAGS_new_executor_serial_run): by default it runs independent ops on threads of its own, which took 1.2-1.4 CPU
seconds a second of a GoogLeNet step with one OpenMP thread. Each side's CPU time a step (user + system, all its
threads) is in the table, so a side using more than one core shows. The default 7 steps stay below the 50 runs
after which gradc's executor turns a plan into straight-line code; at these models' op sizes (milliseconds each)
that code's saving is negligible.

    python benchmarks/models.py --paddle-python /work/paddle-venv/bin/python --out benchmarks/results/models.txt
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
for _threads in THREAD_VARS:  # before numpy loads its BLAS
    os.environ.setdefault(_threads, "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from workers import Worker, WorkerError  # noqa: E402

import gradc  # noqa: E402
from gradc.ir import VarType, dtype_name  # noqa: E402

LAYERS = Path(__file__).resolve().parent.parent / "tests" / "data" / "paddle" / "layers"
PROGRAMS = Path(__file__).resolve().parent / "programs"   # models at working sizes (tools/paddle_bench_programs.py)
# about 90 s with Paddle on 2 cores; vgg11 alone would add 40 s, vgg16 75 s, inception_v3 25 s
DEFAULT_MODELS = ["resnet18", "resnet50", "mobilenet_v1", "mobilenet_v2", "mobilenet_v3_small", "shufflenet_v2_x0_25",
                  "squeezenet1_1", "densenet121", "googlenet", "alexnet", "bert_mini", "lstm_lm", "unet_small"]
WARMUP = 2
RTOL = 1e-4
NORMS = ("batch_norm", "layer_norm", "group_norm", "instance_norm", "sync_batch_norm")
ZEROED_ATTRS = {"dropout": "dropout_prob"}   # op type -> attr set to 0 in both, so the losses can be compared

# Runs under the Paddle interpreter as a worker: says its Paddle version, then answers each request on stdin (a JSON
# line) with one JSON line. A model's job (forward.pb, loss, first parameter, parameters and feed .npz, zeroed
# attrs, warm-up steps) builds its program and scope and runs the warm-up steps: {"ready": true}. A step request
# times one step: its seconds and loss, and with "last" it saves the first parameter's grad to an .npz. Either may
# answer the error that stopped it.
PADDLE_SCRIPT = """
import json, sys, time
import numpy as np
import paddle
paddle.enable_static()
from paddle.base.backward import append_backward
place = paddle.CPUPlace()
print(json.dumps({"version": paddle.__version__}), flush=True)
model = None
for line in sys.stdin:
    job = json.loads(line)
    try:
        if "forward" in job:
            model = None
            main = paddle.static.Program.parse_from_string(open(job["forward"], "rb").read())
            for op in main.global_block().ops:
                if op.type in job["zeroed"]:
                    op._set_attr(job["zeroed"][op.type], 0.0)
            loss = main.global_block().var(job["loss"])
            with paddle.static.program_guard(main, paddle.static.Program()):
                grads = dict((p.name, g.name) for p, g in append_backward(loss))
            scope, exe = paddle.static.Scope(), paddle.static.Executor(place)
            with paddle.static.scope_guard(scope):
                for name, value in np.load(job["params"]).items():
                    scope.var(name).get_tensor().set(value, place)
                feed = dict(np.load(job["feed"]))
                fetch = [job["loss"], grads[job["first_param"]]]
                for k in range(job["warmup"]):
                    exe.run(main, feed=feed, fetch_list=fetch)
            model = (main, scope, exe, feed, fetch, job["grad_out"])
            answer = {"ready": True}
        else:
            main, scope, exe, feed, fetch, grad_out = model
            with paddle.static.scope_guard(scope):
                start, cpu = time.perf_counter(), time.process_time()
                values = exe.run(main, feed=feed, fetch_list=fetch)
                seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
            if job.get("last"):
                np.savez(grad_out, grad=values[1])
            answer = {"seconds": seconds, "cpu": cpu, "loss": float(values[0])}
    except Exception as error:
        message = (str(error).strip().splitlines() or [type(error).__name__])[-1]
        answer = {"error": f"{type(error).__name__}: {message}"[:200]}
    print(json.dumps(answer), flush=True)
"""


def initial_values(program: gradc.Program, seed: int) -> dict[str, np.ndarray]:
    """Every persistable tensor the program reads, drawn from its declared shape in name order."""
    block = program.global_block
    by_slot = {}   # a norm's operands found by slot, not name: scales one (a zero scale passes no grad back),
    for op in block.ops:   # biases and means zero, variances one
        if op.type in NORMS:
            for slot, value in (("Scale", 1.0), ("Bias", 0.0), ("Mean", 0.0), ("Variance", 1.0)):
                by_slot.update(dict.fromkeys(op.inputs.get(slot, []), value))
    rng, values = np.random.default_rng(seed), {}
    for var in sorted(block.vars.values(), key=lambda v: v.name):
        if not var.persistable or var.need_check_feed or var.type != VarType.DENSE_TENSOR:
            continue
        dtype = np.dtype(dtype_name(var.dtype))
        if var.name in by_slot or len(var.shape) < 2:   # and other biases zero
            values[var.name] = np.full(var.shape, by_slot.get(var.name, 0.0), dtype)
            continue
        # a Linear weight is [in, out]; a conv filter [out, in / groups, kh, kw]
        fan_in = var.shape[0] if len(var.shape) == 2 else math.prod(var.shape[1:])
        values[var.name] = (rng.standard_normal(var.shape) / math.sqrt(fan_in)).astype(dtype)
    return values


def feed_values(program: gradc.Program, batch: int, seed: int) -> dict[str, np.ndarray]:
    """Every var with need_check_feed: batch dims of -1 become ``batch``; floats standard normal, integers 0 or 1
    (a label in range for any classifier of two or more classes)."""
    rng, feed = np.random.default_rng(seed), {}
    for var in sorted(program.global_block.vars.values(), key=lambda v: v.name):
        if var.need_check_feed:
            shape, dtype = [batch if d == -1 else d for d in var.shape], np.dtype(dtype_name(var.dtype))
            feed[var.name] = (rng.standard_normal(shape).astype(dtype) if dtype.kind == "f"
                              else rng.integers(0, 2, shape).astype(dtype))
    return feed


def zero_attrs(program: gradc.Program) -> None:
    for op in program.global_block.ops:
        if op.type in ZEROED_ATTRS:
            op.set_attr(ZEROED_ATTRS[op.type], 0.0)


def row_folder(row: str) -> Path:
    """A row's forward.pb and meta.json: benchmarks/programs' where it has one, else the layers rows'."""
    return PROGRAMS / row if (PROGRAMS / row / "meta.json").exists() else LAYERS / row


def gradc_model(row: str, args, folder: Path):
    """gradc's side of one model after its warm-up steps: its facts (op counts, batch, loss name, first parameter) and
    a function timing one step, which records the step's loss and first grad in the facts; writes Paddle's job
    files."""
    meta = json.loads((row_folder(row) / "meta.json").read_text())
    program = gradc.load(row_folder(row) / "forward.pb")
    forward_ops = len(program.global_block.ops)
    zero_attrs(program)
    gradc.append_backward(program, meta["loss"])
    first_param, first_grad = meta["params_grads"][0]
    params, feed = initial_values(program, args.seed), feed_values(program, args.batch, args.seed + 1)
    np.savez(folder / f"{row}.params.npz", **params)
    np.savez(folder / f"{row}.feed.npz", **feed)
    executor, scope = gradc.Executor(), gradc.Scope()
    for name, value in params.items():
        scope[name] = value
    facts = {"row": row, "forward_ops": forward_ops, "ops": len(program.global_block.ops), "loss_name": meta["loss"],
             "first_param": first_param, "batch": next(iter(feed.values())).shape[0] if feed else None}

    def step() -> tuple[float, float]:
        """The step's wall and CPU seconds."""
        start, cpu = time.perf_counter(), time.process_time()
        loss, facts["grad"] = executor.run(program, feed, [meta["loss"], first_grad], scope)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
        facts["loss"] = float(loss)
        return seconds, cpu

    for _ in range(WARMUP):
        step()
    return facts, step


def timed(row: str, args, folder: Path, paddle: Worker | None) -> dict:
    """One model's row: gradc's and Paddle's timed steps in turn; gradc's median wall and CPU seconds, and Paddle's
    answer (its median wall and CPU seconds, last loss and the median of the pairs' ratios of wall time, or the error
    that stopped it)."""
    facts, step = gradc_model(row, args, folder)
    theirs = ask_paddle(paddle, paddle_job(facts, folder), row) if paddle else None
    ours, pairs = [], []
    for k in range(args.repeats):
        ours.append(step())
        if theirs is not None and "error" not in theirs:
            theirs = ask_paddle(paddle, {"step": k, "last": k == args.repeats - 1}, f"{row}'s step {k}")
            if "error" not in theirs:
                pairs.append((ours[-1][0], theirs["seconds"], theirs["cpu"]))
    facts["seconds"], facts["cpu"] = (statistics.median(times) for times in zip(*ours))
    if theirs is not None:
        facts["paddle"] = theirs if "error" in theirs else {
            "loss": theirs["loss"], "seconds": statistics.median(t for _, t, _ in pairs),
            "cpu": statistics.median(c for _, _, c in pairs), "ratio": statistics.median(o / t for o, t, _ in pairs)}
    return facts


def one_thread() -> bool:
    return all(os.environ[name] == "1" for name in THREAD_VARS)


def paddle_threads() -> dict[str, str]:
    """Paddle's flags for the thread budget: its ops one at a time where BLAS and OpenMP run one thread."""
    return {"FLAGS_new_executor_serial_run": "1"} if one_thread() else {}


def start_paddle(python: str | None) -> tuple[Worker | None, str, str | None]:
    """(the worker, "", Paddle's version) or (None, why not, None)."""
    if not python:
        return None, "no --paddle-python given", None
    try:
        worker = Worker("Paddle", [python, "-c", PADDLE_SCRIPT], {"FLAGS_enable_pir_api": "0", "GLOG_minloglevel": "2",
                                                                  **paddle_threads()})
    except OSError as error:
        return None, str(error), None
    try:
        return worker, "", worker.answer("its version")["version"]
    except WorkerError:
        why = f"{python}: {worker.last_error()}"
        worker.close()
        return None, why, None


def ask_paddle(paddle: Worker, request: dict, what: str) -> dict:
    """Paddle's answer to a model's job or a step request, or the error that stopped it."""
    try:
        return paddle.request(request, what)
    except WorkerError:
        return {"error": f"Paddle exited (status {paddle.process.wait()}): {paddle.last_error()}"}


def paddle_job(ours: dict, folder: Path) -> dict:
    row = ours["row"]
    return {"forward": str(row_folder(row) / "forward.pb"), "loss": ours["loss_name"],
            "first_param": ours["first_param"],
            "params": str(folder / f"{row}.params.npz"), "feed": str(folder / f"{row}.feed.npz"),
            "grad_out": str(folder / f"{row}.paddle_grad.npz"), "zeroed": ZEROED_ATTRS, "warmup": WARMUP}


def compare(ours: dict, theirs: dict, folder: Path) -> tuple[str, str, str]:
    """(Paddle ms and CPU ms, gradc / Paddle, first grad's max difference over its max) cells; times only when
    losses agree."""
    if "error" in theirs:
        return f"failed: {theirs['error']}", "-", "-"
    if not math.isclose(ours["loss"], theirs["loss"], rel_tol=RTOL):
        return f"losses differ: gradc {ours['loss']:.7g}, Paddle {theirs['loss']:.7g}", "-", "-"
    with np.load(folder / f"{ours['row']}.paddle_grad.npz") as archive:
        grad = archive["grad"]
    difference = float(np.abs(ours["grad"] - grad).max() / max(np.abs(grad).max(), 1e-30))
    return (f"{1e3 * theirs['seconds']:.1f} (CPU {1e3 * theirs['cpu']:.1f})", f"{theirs['ratio']:.2f}",
            f"{difference:.1e}")


def run(argv: list[str] | None = None) -> list[str]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=DEFAULT_MODELS,
                        help=f"rows of {PROGRAMS.relative_to(PROGRAMS.parents[1])} or "
                             f"{LAYERS.relative_to(LAYERS.parents[3])} (default: %(default)s)")
    parser.add_argument("--batch", type=int, default=2, help="the batch size where a feed's dim is -1")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--paddle-python", help="an interpreter with paddlepaddle 3.3.1 installed")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args(argv)

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paddle, why, paddle_version = start_paddle(args.paddle_python)
        results = []
        for row in args.models:
            try:
                results.append(timed(row, args, folder, paddle))
            except gradc.GradcError as error:
                results.append({"row": row, "error": str(error).splitlines()[0][:200]})
        if paddle:
            paddle.close()
        lines = [f"# one training step (forward + backward, fetching the loss and the first parameter grad) of "
                 f"Paddle's models, median of {args.repeats} after {WARMUP} warm-up steps, float32"
                 + ("; gradc's and Paddle's steps in turn, gradc/Paddle the median of the pairs' ratios" if paddle
                    else ""),
                 f"# Python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
                 f"{os.cpu_count()} CPUs, load {load_before:.2f} at the start, {os.getloadavg()[0]:.2f} at the end, "
                 f"BLAS threads {os.environ['OPENBLAS_NUM_THREADS']}; "
                 + ("Paddle's ops one at a time (FLAGS_new_executor_serial_run=1); " if paddle and one_thread() else "")
                 + (f"Paddle {paddle_version}: Paddle's backward of the same forward.pb, the same parameters and feed; "
                    f"its times shown only where its loss agrees with gradc's (rtol {RTOL:g}); dropout_prob 0 in both"
                    if paddle else f"paddle: skipped: {why}"),
                 f"{'model':<20} {'batch':>5} {'fwd ops':>7} {'ops+bwd':>7} {'loss':>12} {'gradc ms':>9} "
                 f"{'CPU ms':>9} {'gradc/Paddle':>12} {'grad diff':>9}  Paddle ms (CPU ms)"]
        for r in results:
            if "error" in r:
                lines.append(f"{r['row']:<20} gradc failed: {r['error']}")
                continue
            if paddle:
                paddle_ms, ratio, difference = compare(r, r["paddle"], folder)
            else:
                paddle_ms, ratio, difference = f"skipped: {why}", "-", "-"
            lines.append(f"{r['row']:<20} {r['batch']:>5} {r['forward_ops']:>7} {r['ops']:>7} {r['loss']:>12.6g} "
                         f"{1e3 * r['seconds']:>9.1f} {1e3 * r['cpu']:>9.1f} {ratio:>12} {difference:>9}  {paddle_ms}")
    lines.append("# grad diff: max |gradc - Paddle| / max |Paddle| of the first parameter's grad")
    print("\n".join(lines))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(lines) + "\n")
    return lines


if __name__ == "__main__":
    run()
