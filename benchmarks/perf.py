"""Issue 13's table: gradc's compile, load, save and executor against Paddle 3.3.1, protobuf and numpy, every
figure a ratio measured side by side in one run (the median over rounds; in each round the peers take turns).

Workers answer one JSON request per round (perf_gradc.py, perf_paddle.py): gradc as it is now, optionally a
baseline gradc (--baseline: a source tree holding the `gradc` package, e.g. `git archive` of an older commit,
measured with the same worker in the same rounds), and Paddle when --paddle-python names an interpreter that
has it (otherwise the Paddle rows say why they are skipped). BLAS and OpenMP run one thread in every worker:
on a shared 2-core machine threaded BLAS makes the ratios meaningless.

    python benchmarks/perf.py --out benchmarks/results/perf.txt
    python benchmarks/perf.py --paddle-python /work/paddle-venv/bin/python --baseline build/baseline/src
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

import workers
from workers import WorkerError

HERE = Path(__file__).parent
THREADS = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
PAIRED_STEPS = 40   # the MLP step against numpy: pairs of steps a round, gradc's and numpy's in turns
MLP_STEPS = 10   # a round of the MLP step rows times this many steps back to back (a training loop's), the median


class Worker(workers.Worker):
    """A worker of this table: ask(row, **args) sends one request and returns its answer; BLAS runs one thread."""

    def __init__(self, name: str, command: list[str], env: dict[str, str]):
        super().__init__(name, command, {**THREADS, **env})

    def ask(self, row: str, **args) -> dict:
        answer = self.request({"row": row, "args": args}, row)
        if "error" in answer:
            raise WorkerError(f"{self.name}, {row}: {answer['error']}")
        return answer


def median(values) -> float:
    return statistics.median(values)


class Table:
    """Rows of (figure, baseline, now, target), printed as they come."""

    def __init__(self, has_baseline: bool):
        self.has_baseline = has_baseline
        self.lines = ["| figure | " + ("baseline | " if has_baseline else "") + "now | target |",
                      "|---|" + ("---|" if has_baseline else "") + "---|---|"]
        print("\n".join(self.lines), flush=True)

    def row(self, figure: str, values: dict[str, str], target: str) -> None:
        cells = [values.get("base", "-")] if self.has_baseline else []
        line = f"| {figure} | " + " | ".join(cells + [values.get("now", "-"), target]) + " |"
        self.lines.append(line)
        print(line, flush=True)

    def note(self, text: str) -> None:
        self.lines.append(f"\n{text}")
        print(text, flush=True)


def run_rows(args, gradcs: dict[str, Worker], paddle: Worker | None, why_no_paddle: str, folder: Path,
             table: Table) -> None:
    rounds = args.rounds

    def each(fn, n=rounds):
        """fn(worker) for every gradc worker, the workers taking turns, n rounds: {name: [answers]}."""
        answers = {name: [] for name in gradcs}
        for _ in range(n):
            for name, worker in gradcs.items():
                answers[name].append(fn(worker))
        return answers

    def fmt(per_worker: dict, key, form: str) -> dict[str, str]:
        return {name: form.format(median(key(a) for a in answers)) for name, answers in per_worker.items()}

    now = gradcs["now"]
    # 1. append_backward alone, N=1000 (Paddle's own program when Paddle is here)
    mlp1000 = str(folder / "mlp1000.pb")
    if paddle is not None:
        ratios = {name: [] for name in gradcs}
        times = {"paddle": [], **{name: [] for name in gradcs}}
        for _ in range(args.backward_rounds):
            answer = paddle.ask("backward", layers=1000, width=64, path=mlp1000)
            times["paddle"].append(answer["seconds"])
            for name, worker in gradcs.items():
                seconds = worker.ask("backward", path=mlp1000, loss=answer["loss"])["seconds"]
                times[name].append(seconds)
                ratios[name].append(answer["seconds"] / seconds)
        table.row("append_backward alone, N=1000: Paddle / gradc",
                  {name: f"{median(ratios[name]):.0f}x ({median(times['paddle']):.2f} s / "
                         f"{1e3 * median(times[name]):.1f} ms)" for name in gradcs}, ">= 100x")
    else:
        loss = now.ask("write_mlp", path=mlp1000, layers=1000)["loss"]
        answers = each(lambda w: w.ask("backward", path=mlp1000, loss=loss))
        table.row(f"append_backward alone, N=1000 (Paddle skipped: {why_no_paddle})",
                  fmt(answers, lambda a: 1e3 * a["seconds"], "{:.1f} ms"), ">= 100x")

    # 2-4. load + compile + save of N=3000, against protobuf's own parse and serialise
    mlp3000 = str(folder / "mlp3000.pb")
    now.ask("write_mlp", path=mlp3000, layers=3000)
    answers = each(lambda w: w.ask("pipeline", path=mlp3000))
    ops = answers["now"][0]["forward_ops"]
    table.row(f"load + compile + save, N=3000 ({ops:,} ops): wall (CPU)",
              {name: f"{median(a['total'] for a in runs):.3f} s ({median(a['cpu'] for a in runs):.3f} s)"
               for name, runs in answers.items()}, "<= 0.3 s")
    table.row("load / protobuf ParseFromString (N=3000)", fmt(answers, lambda a: a["load"] / a["parse"], "{:.1f}x"),
              "<= 4x")
    table.row("load with every block read at once (lazy=False, as the command line does) / ParseFromString",
              fmt(answers, lambda a: a.get("eager_load", a["load"]) / a["parse"], "{:.1f}x"), "-")
    # CPU time, as the compile row below: a save runs three times as long as protobuf's serialisation, and on a shared
    # machine a neighbour's burst lands on it more often (wall times, the row's earlier measure, in parentheses)
    table.row("save / protobuf SerializeToString (N=3000, compiled): CPU (wall)",
              {name: f"{median(a['save_cpu'] / a['serialize_cpu'] for a in runs):.1f}x "
                     f"({median(a['save'] / a['serialize'] for a in runs):.1f}x)" for name, runs in answers.items()},
              "<= 3x")
    table.row("load-time validation (required fields, structure, names) / load + compile + save (N=3000)",
              fmt(answers, lambda a: 100 * a["validation"] / a["total"], "{:.1f}%"), "<= 10%")

    # 5. compile time per op from 300 to 90,000 ops: a round times every size back to back (the small ones thrice,
    # their median) and the row is the median of five rounds' own ratios, so that a slow spell of the shared
    # machine falls on both sides of a ratio rather than on one size's rounds
    paths = {layers: str(folder / f"gradc_mlp{layers}.pb") for layers in (100, 1000, 30000)}
    for layers, path in paths.items():
        now.ask("write_mlp", path=path, layers=layers)

    steps = ("read_cpu", "verify_cpu", "backward_cpu", "save_cpu")
    phases = ("cpu", "protobuf_cpu", *steps)

    def per_op(worker, path: str, times: int) -> dict[str, float]:
        """Median CPU µs per forward op of gradc's load + compile + save, of protobuf's parse + serialise, and of
        gradc's steps apart: the blocks' read (the load itself is lazy), the verify and backward passes, the save."""
        answers = [worker.ask("pipeline", path=path) for _ in range(times)]
        return {key: median(1e6 * a[key] / a["forward_ops"] for a in answers) for key in phases}
    sizes = each(lambda w: {layers: per_op(w, path, 1 if layers == 30000 else 3) for layers, path in paths.items()},
                 n=5)

    def growth(runs: list[dict], key: str, form: str) -> str:
        return (f"{median(r[30000][key] / r[1000][key] for r in runs):.2f}x ("
                + " / ".join(form.format(median(r[n][key] for r in runs)) for n in paths) + " µs/op")
    table.row("compile (load + compile + save) CPU time per forward op, N=30,000 vs N=1000",
              {name: growth(runs, "cpu", "{:.0f}") + " at 300 / 3k / 90k ops)" for name, runs in sizes.items()},
              "within 1.3x")
    table.row("the same, step by step: the blocks' read; verify; backward; save",
              {name: "; ".join(growth(runs, key, "{:.1f}") + ")" for key in steps)
               for name, runs in sizes.items()}, "-")
    # the machine's own growth for a program of that size held in memory: protobuf's C parser and serialiser
    # (upb) over the same bytes in the same rounds, which make no Python objects per op
    table.row("for reference: protobuf's parse + serialise CPU time per forward op, N=30,000 vs N=1000",
              {name: growth(runs, "protobuf_cpu", "{:.2f}") + ")" for name, runs in sizes.items()}, "-")

    # not in the table: what a user of the command line waits for, start-up included
    for program, ops, n in (("gradc_mlp100.pb", 301, rounds), (mlp3000, 9001, 3)):
        answers = each(lambda w, p=str(folder / program): w.ask("cli_compile", path=p), n=n)
        table.row(f"`gradc compile` in a new process ({ops:,} ops, its output checked): wall, CPU "
                  f"(a bare `python -c pass`)",
                  {name: f"{1e3 * median(a['seconds'] for a in runs):.0f} ms, "
                         f"{1e3 * median(a['cpu'] for a in runs):.0f} ms "
                         f"({1e3 * median(a['bare'] for a in runs):.0f} ms)" for name, runs in answers.items()}, "-")

    memory = {layers: each(lambda w, n=layers: w.ask("compile_memory", path=str(folder / f"gradc_mlp{n}.pb")), n=1)
              for layers in (1000, 30000)}
    small, large = ({name: memory[n][name][0]["per_op"] / 1024 for name in gradcs} for n in (1000, 30000))
    table.row("peak memory of load + compile + save per op, N=30,000 vs N=1000 (tracemalloc)",
              {name: f"{large[name] / small[name]:.2f}x ({small[name]:.1f} / {large[name]:.1f} KiB)"
               for name in gradcs}, "linear (1.0x)")

    # 6-8. training step of the deep MLP, N=100, batch 64; the executor's own cost per op
    if paddle is not None:
        paddle.ask("step", model="mlp", folder=str(folder), batch=64, layers=100)
        mlp = {"path": str(folder / "mlp.pb"), "feed": str(folder / "mlp_feed.npz"),
               "params": str(folder / "mlp_params.npz")}
    else:
        now.ask("write_mlp", path=str(folder / "mlp.pb"), layers=100, startup=str(folder / "mlp.startup.pb"))
        now.ask("write_mlp_feed", path=str(folder / "mlp_feed.npz"), batch=64)
        mlp = {"path": str(folder / "mlp.pb"), "feed": str(folder / "mlp_feed.npz"),
               "startup": str(folder / "mlp.startup.pb")}
    step_rows(each, gradcs, paddle, why_no_paddle, table, mlp, folder, rounds)
    answers = each(lambda w: w.ask("scale", count=10000))
    table.row("executor overhead per op: 10,000 scale ops on 1 element, minus the same numpy calls",
              fmt(answers, lambda a: 1e6 * a["per_op"], "{:.2f} µs"), "<= 1.5 µs")

    # 9. LeNet-like CNN step, batch 512
    if paddle is not None:
        paddle.ask("step", model="lenet", folder=str(folder), batch=512)
        cnn = {"path": str(folder / "lenet.pb"), "feed": str(folder / "lenet_feed.npz"),
               "params": str(folder / "lenet_params.npz")}
        ratios, times = paired(gradcs, paddle, "step", {"model": "lenet", "folder": str(folder), "batch": 512},
                               cnn, rounds)
        table.row("CNN step (LeNet-like, batch 512): gradc / Paddle",
                  {name: f"{median(ratios[name]):.2f} ({1e3 * median(times[name]):.1f} / "
                         f"{1e3 * median(times['paddle']):.1f} ms)" for name in gradcs}, "<= 1.0")
    else:
        now.ask("write_lenet", folder=str(folder), batch=512)
        cnn = {"path": str(folder / "lenet.pb"), "feed": str(folder / "lenet_feed.npz"),
               "startup": str(folder / "lenet.startup.pb")}
        answers = each(lambda w: w.ask("step", **cnn))
        table.row(f"CNN step (LeNet-like, batch 512) (Paddle skipped: {why_no_paddle})",
                  fmt(answers, lambda a: 1e3 * a["seconds"], "{:.1f} ms"), "<= 1.0")

    # 10. peak memory of a training step against the liveness minimum
    for label, model in (("MLP N=100", mlp), ("LeNet", cnn)):
        answers = each(lambda w, m=model: w.ask("memory", **m), n=1)
        least = answers["now"][0]["minimum"]   # the current gradc knows which reads need only a shape
        table.row(f"peak memory of a training step / liveness minimum ({label})",
                  {name: f"{a[0]['peak'] / least:.2f} ({a[0]['peak'] / 2**20:.1f} / {least / 2**20:.1f} MiB)"
                   for name, a in answers.items()}, "<= 1.25")


def paired(gradcs, paddle, paddle_row, paddle_args, model, rounds):
    """gradc / Paddle per round, each gradc worker against the Paddle time of the same round."""
    ratios = {name: [] for name in gradcs}
    times = {"paddle": [], **{name: [] for name in gradcs}}
    for _ in range(rounds):
        theirs = paddle.ask(paddle_row, **paddle_args)
        times["paddle"].append(theirs["seconds"])
        for name, worker in gradcs.items():
            ours = worker.ask("step", **model)
            check_agree(name, ours["loss"], theirs["loss"])
            times[name].append(ours["seconds"])
            ratios[name].append(ours["seconds"] / theirs["seconds"])
    return ratios, times


def check_agree(name: str, ours: float, theirs: float) -> None:
    if abs(ours - theirs) > 1e-4 * max(1.0, abs(theirs)):
        raise WorkerError(f"{name}: gradc's loss {ours} differs from the peer's {theirs}: not the same computation")


def step_rows(each, gradcs, paddle, why_no_paddle, table, mlp, folder, rounds) -> None:
    mlp_steps = {**mlp, "steps": MLP_STEPS}
    if paddle is not None:
        ratios, times = paired(gradcs, paddle, "step", {"model": "mlp", "folder": str(folder), "batch": 64,
                                                        "layers": 100, "steps": MLP_STEPS}, mlp_steps, rounds)
        table.row(f"training step N=100 (median of {MLP_STEPS} back to back): gradc / Paddle's executor",
                  {name: f"{median(ratios[name]):.2f} ({1e3 * median(times[name]):.2f} / "
                         f"{1e3 * median(times['paddle']):.2f} ms)" for name in gradcs}, "<= 0.5")
    else:
        table.row(f"training step N=100: gradc / Paddle's executor (skipped: {why_no_paddle})", {}, "<= 0.5")
    answers = each(lambda w: w.ask("step_against_numpy", **{**mlp_steps, "steps": PAIRED_STEPS}))
    for name, runs in answers.items():
        for run in runs:
            check_agree(name, run["loss"], run["numpy_loss"])
    table.row(f"training step N=100 (gradc's and numpy's steps in turns, {PAIRED_STEPS} pairs a round, the median "
              f"pair): gradc / hand-written numpy of the same math",
              {name: f"{median(a['ratio'] for a in runs):.2f} ({1e3 * median(a['seconds'] for a in runs):.2f} / "
                     f"{1e3 * median(a['numpy'] for a in runs):.2f} ms)" for name, runs in answers.items()}, "<= 1.15")
    answers = each(lambda w: w.ask("trainer_step", **{**mlp_steps, "steps": PAIRED_STEPS}))
    table.row(f"training step N=100 (in turns, {PAIRED_STEPS} pairs a round): gradc.training's step (gradc train's "
              f"loop) / the executor's run of it",
              {name: f"{median(a['ratio'] for a in runs):.2f} ({1e3 * median(a['seconds'] for a in runs):.2f} / "
                     f"{1e3 * median(a['executor'] for a in runs):.2f} ms)" for name, runs in answers.items()}, "-")


def machine(paddle_version: str | None) -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else "?"
    import google.protobuf
    import numpy
    return (f"# {model}, {os.cpu_count()} CPUs, {platform.system()} {platform.machine()}; Python "
            f"{platform.python_version()}, numpy {numpy.__version__}, protobuf {google.protobuf.__version__}"
            f"{', Paddle ' + paddle_version if paddle_version else ''}; BLAS threads 1")


def start_paddle(python: str | None) -> tuple[Worker | None, str, str | None]:
    if not python:
        return None, "no --paddle-python given", None
    if not Path(python).exists():
        return None, f"{python} does not exist", None
    worker = Worker("paddle", [python, str(HERE / "perf_paddle.py")], {"FLAGS_enable_pir_api": "0",
                                                                         "GLOG_minloglevel": "2"})
    try:
        return worker, "", worker.ask("describe")["paddle"]
    except WorkerError as error:
        return None, f"paddle does not run under {python} ({error})", None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=7, help="rounds per figure (the median is reported)")
    # five: gradc's 30-50 ms calls meet the shared machine's spells one by one (66-113x round by round in one run)
    parser.add_argument("--backward-rounds", type=int, default=5, help="rounds of Paddle's slow append_backward")
    parser.add_argument("--paddle-python", help="an interpreter with paddlepaddle 3.3.1 (optional)")
    parser.add_argument("--baseline", help="a source tree holding an older `gradc` package, measured alongside")
    parser.add_argument("--out", help="also write the table to this file")
    args = parser.parse_args()

    paddle, why_no_paddle, paddle_version = start_paddle(args.paddle_python)
    worker = [sys.executable, str(HERE / "perf_gradc.py")]
    gradcs = {"now": Worker("gradc", worker, {})}
    if args.baseline:
        gradcs["base"] = Worker("baseline gradc", worker, {"PYTHONPATH": str(Path(args.baseline).resolve())})
    homes = {name: w.ask("describe")["gradc"] for name, w in gradcs.items()}
    header = [machine(paddle_version), f"# load average at the start {os.getloadavg()}",
              "# gradc: " + ", ".join(f"{name} {home}" for name, home in homes.items())]
    print("\n".join(header), flush=True)
    table = Table("base" in gradcs)
    try:
        with tempfile.TemporaryDirectory() as folder:
            run_rows(args, gradcs, paddle, why_no_paddle, Path(folder), table)
    finally:
        for w in [*gradcs.values(), *([paddle] if paddle else [])]:
            w.close()
    table.note(f"# load average at the end {os.getloadavg()}; medians of {args.rounds} rounds "
               f"({args.backward_rounds} for Paddle's append_backward; compile per op: the median of 5 rounds' "
               f"own ratios)")
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text("\n".join(header + table.lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
