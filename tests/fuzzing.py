"""Hostile inputs for the CLI contract (issue: zero internal errors, hangs or memory blowups).

A case is a CLI command over copies of committed fixtures, one of them mutated at the byte level or
at the protobuf / npz level. ``run_case`` runs it in a forked child (gradc already imported, so it
starts at once) under a memory cap and a time limit, and ``verdict`` classifies what happened:

    ok, error           the contract holds (exit 0, or exactly one `gradc: error:` line with exit 1/2)
    internal, multiline, traceback, partial_output, accepted_invalid, timeout, crash   it does not

Used by tests/test_fuzz.py (a short hypothesis run in `make test`) and tests/fuzz_run.py (`make fuzz`).
"""

from __future__ import annotations

import functools
import io
import json
import os
import random
import resource
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import click
import numpy as np

from fuzzing_json import json_scenarios, json_verdict
from fuzzing_mutations import declared_shapes, mutate_bytes, mutate_npz, mutate_program
from fuzzing_pir import mutate_pir, pir_scenarios

DATA = Path(__file__).parent / "data" / "paddle"
MEMORY_CAP = 3 << 30          # the child's address space: a blowup dies here, not on the machine
GRADC_LIMITS = ["--max-memory", "256M", "--max-iterations", "2000"]
BAD = {"internal", "multiline", "traceback", "partial_output", "accepted_invalid", "timeout", "crash", "bad_json"}


@dataclass
class Case:
    files: dict[str, bytes]       # name -> content, written into a fresh directory
    args: list[str]               # the gradc command line (after the limits)
    must_fail: bool = False       # the mutation makes the input invalid: exit 0 would accept it
    output: str | None = None     # a file the command writes: absent unless it succeeds
    label: str = ""


@dataclass
class Outcome:
    code: int | None
    stderr: str
    seconds: float
    output_written: bool
    signal: int | None = None
    notes: list[str] = field(default_factory=list)
    stdout: str = ""


# ------------------------------------------------------------------ scenarios over the fixtures
def _read(path: Path) -> bytes:
    return path.read_bytes()


@functools.cache
def scenarios() -> tuple[Case, ...]:
    """Unmutated commands over real Paddle programs; each mutation starts from one of these."""
    mlp, cond, loop, conv = DATA / "mlp", DATA / "cond", DATA / "while_loop", DATA / "conv"
    inference, sgd = DATA / "inference", DATA / "train_sgd"
    cases = []
    for fixture, loss in ((mlp, "mean_0.tmp_0"), (cond, None), (loop, None), (conv, None)):
        files = {"forward.pb": _read(fixture / "forward.pb"), "feed.npz": _read(fixture / "feed.npz"),
                 "params.npz": _read(fixture / "params.npz")}
        meta = json.loads((fixture / "meta.json").read_text())
        loss = loss or meta["loss"]
        cases.append(Case(files, ["compile", "forward.pb", "-o", "out.pb", "--loss", loss], output="out.pb"))
        cases.append(Case(files, ["run", "forward.pb", "--feed", "feed.npz", "--params", "params.npz",
                                  "--fetch", loss, "--out", "out.npz"], output="out.npz"))
        cases.append(Case(files, ["check", "forward.pb", "--feed", "feed.npz", "--params", "params.npz",
                                  "--loss", loss, "--max-elements", "2"]))
        cases.append(Case(files, ["run", "forward.pb", "--feed", "feed.npz", "--params", "params.npz",
                                  "--fetch", loss, "--out", "out.npz", "--json"], output="out.npz"))
        cases.append(Case(files, ["check", "forward.pb", "--feed", "feed.npz", "--params", "params.npz",
                                  "--loss", loss, "--max-elements", "2", "--json"]))
    for fixture in (mlp, cond):   # the tools that read a program: verify, view, show --dot/--memory, diff
        files = {"forward.pb": _read(fixture / "forward.pb"), "feed.npz": _read(fixture / "feed.npz"),
                 "params.npz": _read(fixture / "params.npz"), "other.pb": _read(fixture / "forward.pb")}
        cases.append(Case(files, ["verify", "forward.pb"]))
        cases.append(Case(files, ["verify", "forward.pb", "--json"]))
        cases.append(Case(files, ["diff", "forward.pb", "other.pb", "--json"]))
        cases.append(Case(files, ["view", "forward.pb", "-o", "out.html", "--feed", "feed.npz", "--params",
                                  "params.npz"], output="out.html"))
        cases.append(Case(files, ["show", "forward.pb", "--dot", "out.dot"], output="out.dot"))
        cases.append(Case(files, ["show", "forward.pb", "--memory", "--batch-size", "4"]))
        cases.append(Case(files, ["diff", "forward.pb", "other.pb"]))
        cases.append(Case(files, ["precision", "forward.pb", "--feed", "feed.npz", "--params", "params.npz", "--top",
                                  "3"]))
    infer = {name: _read(inference / name) for name in ("model.pdmodel", "model.pdiparams", "feed.npz")}
    cases.append(Case(infer, ["run", "model.pdmodel", "--params", "model.pdiparams", "--feed", "feed.npz"]))
    cases.append(Case(infer, ["convert", "model.pdmodel", "out.pbtxt"], output="out.pbtxt"))
    cases.append(Case(infer, ["show", "model.pdmodel"]))
    train = {"train.pb": _read(sgd / "train.pb"), "startup.pb": _read(sgd / "startup.pb"),
             "feed.npz": _read(sgd / "feed.npz"), "params.npz": _read(sgd / "params.npz")}
    cases.append(Case(train, ["train", "train.pb", "--startup", "startup.pb", "--params", "params.npz",
                              "--feed", "feed.npz", "--steps", "2", "--save-params", "out.npz"], output="out.npz"))
    cases.append(Case(train, ["train", "train.pb", "--startup", "startup.pb", "--data", "feed.npz", "--batch-size", "8",
                              "--shuffle", "--eval", "feed.npz", "--checkpoint-dir", "ck", "--save-params",
                              "out.pdiparams"], output="out.pdiparams"))
    export = {name: _read(DATA / "export" / name) for name in ("model.pdmodel", "model.pdiparams")}
    cases.append(Case(export, ["export", "model.pdmodel", "--params", "model.pdiparams", "--input", "img", "--fetch",
                               "softmax_0.tmp_0", "-o", "out"], output="out.pdmodel"))
    cases += [Case(files, args, output=output) for files, args, output in pir_scenarios(DATA) + json_scenarios(DATA)]
    return tuple(cases + row_scenarios())


# coverage rows of the op families: the tensor API's (einsum, grid sampling, decompositions, scans, special
# functions), detection and graph ops, quantization, complex and fft, pylayer, LoD sequences (fed through the
# CLI's `<var>@LOD<k>` arrays), eigen and triangular solves, random distributions and graph sampling, Paddle 1.x
# detection
ROWS = ("einsum_matmul", "grid_sample_reflection_corners", "affine_grid", "svd_values", "cholesky", "median",
        "logcumsumexp", "lerp_broadcast", "masked_fill", "polygamma", "yolo_box", "roi_align", "deform_conv2d_mask",
        "send_ue_recv_mul_mean", "multiclass_nms3", "matrix_nms", "yolo_loss", "fake_quant_moving_average",
        "fft_fft2", "complex_angle", "frame", "static_pylayer_two_inputs", "sequence_pool_max", "text_cnn",
        "crf_decoding_lod", "beam_search_log_probs", "dynamic_lstm", "lu_solve", "eig_both", "matrix_rank_tol_tensor",
        "tril_indices", "sample_neighbors", "reindex_graph", "TruncatedNormal", "binomial", "anchor_generator",
        "bipartite_match", "generate_proposals_v1", "collect_fpn_proposals", "gammaincc", "multiplex", "swiglu",
        "fused_rms_norm", "kthvalue", "repeat_interleave_tensor", "unique_all", "arange_float", "affine_channel_nchw")


def _feed_with_lods(fixture: Path, meta: dict) -> bytes:
    """The row's feed.npz, with each LoD input's offsets as the CLI reads them."""
    if not meta.get("lods"):
        return _read(fixture / "feed.npz")
    with np.load(fixture / "feed.npz") as archive:
        arrays = {name: archive[name] for name in archive.files}
    for name, levels in meta["lods"].items():
        arrays |= {f"{name}@LOD{k}": np.array(level, np.int64) for k, level in enumerate(levels)}
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def row_scenarios() -> list[Case]:
    cases = []
    for row in ROWS:
        fixture = DATA / "layers" / row
        meta = json.loads((fixture / "meta.json").read_text())
        files = {"forward.pb": _read(fixture / "forward.pb"), "feed.npz": _feed_with_lods(fixture, meta)}
        params = ["--params", "params.npz"] if (fixture / "params.npz").exists() else []
        if params:
            files["params.npz"] = _read(fixture / "params.npz")
        loss = meta["loss"]
        cases.append(Case(files, ["compile", "forward.pb", "-o", "out.pb", "--loss", loss], output="out.pb"))
        cases.append(Case(files, ["run", "forward.pb", "--feed", "feed.npz", *params, "--fetch", loss, "--out",
                                  "out.npz"], output="out.npz"))
        cases.append(Case(files, ["check", "forward.pb", "--feed", "feed.npz", *params, "--loss", loss,
                                  "--max-elements", "2"]))
    return cases


RUNS = {"compile", "run", "check", "train", "precision"}   # commands that verify and execute what they read


def mutated(base: Case, rng: random.Random) -> Case:
    """One of the files the command reads, mutated."""
    files = dict(base.files)
    target = rng.choice(sorted(name for name in files if name in base.args))
    must_fail, kind = None, "bytes"
    program = next((n for n in files if n.endswith((".pb", ".pdmodel"))), None)
    level = rng.random()
    if target.endswith((".pb", ".pdmodel")) and level < 0.6:
        try:
            files[target], must_fail, kind = mutate_program(files[target], rng)
        except Exception:  # noqa: BLE001 - a structural edit that protobuf refuses: mutate bytes instead
            files[target] = mutate_bytes(files[target], rng)
    elif target.endswith(".json") and level < 0.8:
        try:
            files[target], must_fail, kind = mutate_pir(files[target], rng)
        except (ValueError, KeyError, IndexError, TypeError):  # not a PIR file to edit: mutate bytes instead
            files[target] = mutate_bytes(files[target], rng)
    elif target.endswith(".npz") and level < 0.6:
        declared = declared_shapes(files[program]) if program else {}
        files[target], must_fail = mutate_npz(files[target], rng, declared)
        kind = "arrays"
    else:
        files[target] = mutate_bytes(files[target], rng)
    rejected = must_fail == "load" or (must_fail == "use" and base.args[0] in RUNS)
    return Case(files, base.args, rejected, base.output, f"{' '.join(base.args[:2])} ~{target} {kind}")


# ------------------------------------------------------------------ running and judging
def run_case(case: Case, timeout: float = 30.0) -> Outcome:
    """Run in a forked child under MEMORY_CAP and ``timeout``; the parent never runs gradc code."""
    from gradc.cli import main

    _import_on_first_use()

    with tempfile.TemporaryDirectory() as tmp:
        for name, content in case.files.items():
            Path(tmp, name).write_bytes(content)
        err_path, out_path = Path(tmp, ".stderr"), Path(tmp, ".stdout")
        start = time.monotonic()
        pid = os.fork()
        if pid == 0:   # the child: run the command, exit with its code
            try:
                os.chdir(tmp)
                resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
                fd = os.open(err_path, os.O_WRONLY | os.O_CREAT)
                os.dup2(fd, 2)
                os.dup2(os.open(out_path, os.O_WRONLY | os.O_CREAT), 1)
                sys.stderr = open(2, "w", closefd=False)   # not a test runner's capture object
                sys.stdout = open(1, "w", closefd=False)
                sys.argv = ["gradc", *GRADC_LIMITS, *case.args]
                main()
                os._exit(0)
            except SystemExit as exit_:
                os._exit(exit_.code if isinstance(exit_.code, int) else 1)
            except BaseException:  # noqa: BLE001 - anything escaping main() is a contract breach
                import traceback
                traceback.print_exc()
                os._exit(3)
        code, sig = _wait(pid, timeout)
        seconds = time.monotonic() - start
        stderr = err_path.read_text(errors="replace") if err_path.exists() else ""
        written = case.output is not None and Path(tmp, case.output).exists()
        stdout = out_path.read_text(errors="replace") if "--json" in case.args and out_path.exists() else ""
        return Outcome(code, stderr, seconds, written, sig, stdout=stdout)


@functools.cache
def _import_on_first_use() -> None:
    """What gradc imports on first use (every command's module, the PIR readers and writers), imported once in
    the parent, so that no forked child pays for it."""
    from gradc.cli import cli
    from gradc.pir import dump, export, reader, translate  # noqa: F401

    context = click.Context(cli)
    for name in cli.list_commands(context):
        cli.get_command(context, name)


def _wait(pid: int, timeout: float) -> tuple[int | None, int | None]:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if os.WIFSIGNALED(status):
                return None, os.WTERMSIG(status)
            return os.WEXITSTATUS(status), None
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return None, -1
        time.sleep(0.005)


def verdict(case: Case, outcome: Outcome) -> str:
    lines = outcome.stderr.strip().splitlines()
    if outcome.signal == -1:
        return "timeout"
    if outcome.signal is not None or outcome.code not in (0, 1, 2, 130):
        return "crash" if "Traceback" not in outcome.stderr else "traceback"
    if "Traceback" in outcome.stderr:
        return "traceback"
    if "--json" in case.args and (judged := json_verdict(case.args, outcome.code, outcome.stdout, lines)):
        return judged
    if outcome.code == 0:
        return "accepted_invalid" if case.must_fail else "ok"
    if case.args[0] == "diff" and outcome.code == 1 and not lines:   # diff's answer "they differ"
        return "ok"
    if any("internal error" in line for line in lines):
        return "internal"
    if len(lines) != 1 or not lines[0].startswith("gradc: error: "):
        return "multiline"
    if outcome.output_written:
        return "partial_output"
    return "error"


def cause(outcome: Outcome) -> str:
    """The error line with numbers and quoted names folded, to count distinct causes."""
    import re

    line = (outcome.stderr.strip().splitlines() or [""])[-1]
    return re.sub(r"'[^']*'|\d+", "#", line)[:160]


def random_case(seed: int) -> Case:
    rng = random.Random(seed)
    base = rng.choice(scenarios())
    return mutated(base, rng)
