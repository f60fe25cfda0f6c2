"""Paddle's side: run each case interop.export wrote in Paddle's executor and compare with Paddle's own numbers,
by the rule of tests/layer_fixtures.py: rtol 1e-5 / atol 1e-6, or, where Paddle's float64 run is kept, at most 4x
Paddle's own float32 error from it. A case with reference.pb is compared with Paddle's own backward of that
forward program, run from the same seed (its random draws are then Paddle's draws in both runs)."""

from __future__ import annotations

import fnmatch
import json
import multiprocessing
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import paddle
from paddle.base import framework

RTOL, ATOL, FLOAT64_SLACK = 1e-5, 1e-6, 4
TRAINABLE_STATISTICS = ("Paddle's batch_norm_grad takes is_test to mean the running statistics, though with "
                        "trainable_statistics the forward normalised with the batch's (tests/test_ops_vs_paddle.py): "
                        "wrong in any program; gradc's program hands it the statistics the forward read, Paddle's own "
                        "the ones the forward then updated, so the two wrong answers differ too")
UNSEEDED_NEIGHBOURS = ("Paddle 3.3.1's graph_sample_neighbors and weighted_sample_neighbors draw without paddle.seed: "
                       "three runs of Paddle's own sample_neighbors program after paddle.seed(123) drew [2 1 3 1], "
                       "[0 1 3 1], [2 1 3 1]")
UNWRITTEN_EIDS = ("only the sampled edge ids differ, which the op writes only with return_eids (False here): the fetch "
                  "reads whatever the var held")
# cases where Paddle's run of gradc's program cannot give Paddle's own numbers, and why
EXPLAINED = {
    "ops/math/scale_bias_tensor": "Paddle's own scale grad adds BiasTensor to the gradient; gradc's program "
                                  "differentiates scale with a scale op without the bias, and Paddle's run of it "
                                  "gives gradc's (right) gradient",
    "fixtures/tensor_ops": "Paddle's kldiv_loss_grad gives kl_div's target (softmax(y), y a fed var with a "
                           "gradient) none; gradc's program adds it (docs/ops.md, equal to central differences), and "
                           "Paddle's run of it gives gradc's y@GRAD",
    "ops/norm/batch_norm2d_eval_trainable_statistics": TRAINABLE_STATISTICS,
    "ops/norm/batch_norm_legacy_trainable_statistics": TRAINABLE_STATISTICS,
    "layers/class_center_sample": "Paddle 3.3.1 draws class_center_sample's classes without its seed (fix_seed "
                                  "False): three runs of Paddle's own program after paddle.seed(123) drew three sets",
    **dict.fromkeys(("layers/sample_neighbors", "layers/sample_neighbors_eids", "layers/weighted_sample_neighbors",
                     "layers/weighted_sample_neighbors_eids"), UNSEEDED_NEIGHBOURS),
    "layers/sample_neighbors_all": UNWRITTEN_EIDS,
    "layers/incubate_jvp": "Paddle's legacy backward of jvp's tanh(a) * a is wrong (known_issues.PADDLE_WRONG); "
                           "gradc's program differentiates the grad ops with plain ops, and Paddle's run of it gives "
                           "gradc's (central-difference) gradient",
}
# cases whose program Paddle's executor crashes on: run in a child process, so the crash is the case's result
CRASHES = {"layers/sparse_*": "Paddle 3.3.1's legacy executor segfaults choosing the kernel of the sparse grad ops "
                              "(in SparseToDenseGradOpArgumentMapping), which its own append_backward never writes"}
# seen on an AMD EPYC without AVX-512: Paddle 3.3.1's CPU wheel dies with SIGILL in FusedLayerNormAvxKernel
UNKNOWN_CRASH = "not one CRASHES explains (exit code -4 is SIGILL: a kernel using instructions this CPU lacks)"


@dataclass
class Result:
    name: str
    compared: int = 0
    differ: list[str] = field(default_factory=list)
    error: str = ""
    like_gradc: bool = False   # where it differs from Paddle's own numbers, Paddle's run equals gradc's own run
    crashed: bool = False      # Paddle's executor crashed (CRASHES explains the known ones)


def agrees(ours: np.ndarray, paddle32: np.ndarray, paddle64: np.ndarray | None) -> bool:
    if ours.shape != paddle32.shape or object in (ours.dtype, paddle32.dtype):   # a fetch Paddle left empty
        return False
    if ours.dtype.kind in "biu" or paddle32.dtype.kind in "biu":
        return np.array_equal(ours, paddle32)
    if np.allclose(ours, paddle32, rtol=RTOL, atol=ATOL, equal_nan=True):
        return True
    return paddle64 is not None and np.abs(ours - paddle64).max() <= FLOAT64_SLACK * np.abs(paddle32 - paddle64).max()


def load_program(path: Path):
    return framework.Program.parse_from_string(path.read_bytes())


def feed_vars(program) -> list:
    return [v for v in program.global_block().vars.values() if v.desc.need_check_feed()]


def invented_values(program, feed: dict, params: dict, seed: int) -> tuple[dict, dict]:
    """A full-size model has no stored numbers: normal inputs, He-scaled weights, batch norm's statistics 0 and 1."""
    rng = np.random.default_rng(seed)
    block = program.global_block()
    ones = {n for op in block.ops if op.type == "batch_norm" for n in op.input("Variance") + op.input("Scale")}
    zeros = {n for op in block.ops if op.type == "batch_norm" for n in op.input("Mean") + op.input("Bias")}
    for var in feed_vars(program):
        feed.setdefault(var.name, rng.standard_normal([max(d, 1) for d in var.shape]).astype("float32"))
    for var in program.list_vars():
        if not var.persistable or var.name in ("feed", "fetch") or var.name in params:
            continue
        shape = list(var.shape)
        fan_in = int(np.prod(shape[1:])) if len(shape) == 4 else shape[0] if len(shape) == 2 else 0
        value = (np.ones(shape) if var.name in ones else np.zeros(shape) if var.name in zeros or not fan_in
                 else rng.standard_normal(shape) * np.sqrt(2.0 / fan_in))
        params[var.name] = value.astype("float32")
    return feed, params


def run(program, startup, feed: dict, params: dict, meta: dict, after: list[str], draws=None) -> dict[str, np.ndarray]:
    """Seeded as the fixture was (``draws``: the fixture's own startup, run first in a scope of its own); the fetched
    vars (the loss of a multi-step run: one value per step) and after/."""
    place = paddle.CPUPlace()
    scope, executor = paddle.static.Scope(), paddle.static.Executor(place)
    fetch, steps = meta["fetch"], meta["steps"]
    with paddle.static.scope_guard(scope):
        paddle.seed(meta["seed"])
        if draws is not None:
            with paddle.static.scope_guard(paddle.static.Scope()):
                executor.run(draws)
        if startup is not None:
            executor.run(startup)
        for name, value in params.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        losses, first = [], {}
        lods = meta.get("lods", {})
        feed = {name: paddle.base.create_lod_tensor(value, [list(np.diff(level)) for level in lods[name]], place)
                if name in lods else value for name, value in feed.items()}
        for _ in range(steps):
            values = [np.array(value) for value in executor.run(program, feed=feed, fetch_list=fetch,
                                                                return_numpy=not lods)]
            losses.append(values[0])
            first = first or dict(zip(fetch, values))
        if steps > 1:
            first[meta["loss"]] = np.stack([np.reshape(v, ()) for v in losses])
        first |= {f"after/{n}": np.array(scope.find_var(n).get_tensor()) for n in after}
    return first


def paddle_backward(forward, loss: str):
    """Paddle's own backward of a forward program (what the fixture's Paddle run differentiated)."""
    program = forward.clone()
    with paddle.static.program_guard(program):
        paddle.static.append_backward(program.global_block().var(loss))
    return program


def run_case(directory: Path, name: str) -> Result:
    meta = json.loads((directory / "case.json").read_text())
    result = Result(name)
    with np.load(directory / "arrays.npz") as archive:
        arrays = {k: archive[k] for k in archive.files}
    feed, params = {k[5:]: v for k, v in arrays.items() if k.startswith("feed/")}, \
        {k[6:]: v for k, v in arrays.items() if k.startswith("param/")}
    expect = {k[7:]: v for k, v in arrays.items() if k.startswith("expect/")}
    expect64 = {k[9:]: v for k, v in arrays.items() if k.startswith("expect64/")}
    gradc_run = {k[6:]: v for k, v in arrays.items() if k.startswith("gradc/")}
    program = load_program(directory / "program.pb")
    startup = load_program(directory / "startup.pb") if (directory / "startup.pb").exists() else None
    draws = load_program(directory / "draws.pb") if (directory / "draws.pb").exists() else None
    after = [k[6:] for k in expect if k.startswith("after/")]
    try:
        if (directory / "reference.pb").exists():
            forward = load_program(directory / "reference.pb")
            if not params:
                feed, params = invented_values(forward, feed, params, meta["seed"])
            expect = run(paddle_backward(forward, meta["loss"]), None, feed, params, meta, after)
        ours = run(program, startup, feed, params, meta, after, draws)
    except Exception as error:  # noqa: BLE001 - Paddle's refusal is the case's result
        lines = [line.strip() for line in str(error).splitlines() if line.strip()]
        result.error = next((line for line in reversed(lines) if "Error" in line), lines[-1] if lines else "")[:300]
        return result
    result.compared = len(expect)
    result.differ = [n for n, v in expect.items() if not agrees(np.asarray(ours[n]), np.asarray(v), expect64.get(n))]
    result.like_gradc = bool(gradc_run) and all(agrees(np.asarray(ours[n]), gradc_run[n], None) for n in result.differ)
    return result


def run_all(out: Path, patterns: list[str]) -> list[Result]:
    paddle.enable_static()
    names = sorted(str(d.parent.relative_to(out)) for d in out.rglob("case.json"))
    results = []
    for name in [n for n in names if not patterns or any(fnmatch.fnmatch(n, p) for p in patterns)]:
        crash = next((why for pattern, why in CRASHES.items() if fnmatch.fnmatch(name, pattern)), UNKNOWN_CRASH)
        results.append(run_apart(out / name, name, crash))
        r = results[-1]
        if r.error or r.differ:
            verdict = "gradc's own run agrees" if r.like_gradc else "so does gradc's own run"
            print(f"{name}: {r.error or 'differs from Paddle in ' + ', '.join(r.differ) + '; ' + verdict}", flush=True)
    return results


def run_apart(directory: Path, name: str, crash: str) -> Result:
    """run_case in a forked child, so that a crash of Paddle's executor ends only its case: a child killed by a
    signal gives the case the error `crash` explains."""
    reader, writer = multiprocessing.get_context("fork").Pipe(duplex=False)
    child = multiprocessing.get_context("fork").Process(target=lambda: writer.send(run_case(directory, name)))
    child.start()
    child.join()
    if child.exitcode == 0 and reader.poll():
        return reader.recv()
    return Result(name, error=f"Paddle's executor crashes (exit code {child.exitcode}): {crash}", crashed=True)
