"""gradc's side: compile every Paddle fixture with gradc and write it as a case Paddle's executor can run
(interop.paddle_side). Runs in gradc's environment, without Paddle.

OUT/<group>/<name>/ holds
  program.pb    gradc's compilation of the fixture's forward program (backward; Adam for training fixtures)
  startup.pb    gradc's startup program (training fixtures)
  draws.pb      Paddle's own startup program, where the fixture's steps draw (dropout): run first after the seed, in
                a scope of its own, it leaves the engine where the fixture's run left it
  reference.pb  where Paddle's numbers are not stored (random draws, full-size models): Paddle's forward program;
                Paddle appends its own backward to it and its run, seeded alike, is the reference
  arrays.npz    feed/<var>, param/<var>, expect/<name>, expect64/<name> (Paddle's float64 run, where kept),
                gradc/<name> (gradc's own run: where Paddle's numbers differ, is it gradc's program that differs?)
  case.json     fetch (vars fetched each step), loss, steps, seed; an expect name is a fetched var (the loss of a
                training fixture: one value per step) or after/<var>, the var after the last step
OUT/skipped.json lists the fixtures gradc cannot compile, with its error.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import gradc
from gradc.backward import append_grad_ops
from gradc.optimizers import Adam

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "paddle"
# top-level fixtures with the layout of tools/paddle_fixtures.py (forward.pb, feed, params, grads, loss)
SINGLE = ("mlp", "conv", "cond", "while_loop", "shared_param", "stop_grad_branch", "tensor_ops", "transformer",
          "vision")
VALUE_FAMILIES = ("activation", "math", "reduce", "logic", "dropout", "interp", "norm", "pad", "pool", "vision")


@dataclass
class Case:
    group: str
    name: str
    forward: bytes                       # Paddle's forward program
    loss: str | None
    feed: dict
    params: dict = field(default_factory=dict)
    fetch: list[str] = field(default_factory=list)
    expect: dict = field(default_factory=dict)
    expect64: dict = field(default_factory=dict)
    random: bool = False                 # Paddle's own run of its backward is the reference
    steps: int = 1
    seed: int = 0
    train: dict | None = None            # Adam's hyper-parameters: compile a training step
    weighted: list[str] = field(default_factory=list)   # no loss: the backward of sum(out * out@GRAD), fed
    lods: dict = field(default_factory=dict)   # the offsets of each LoD input (a coverage row's meta.json "lods")
    draws: bytes | None = None           # Paddle's startup, whose draws come before the steps' (see draws.pb)


def npz(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        return {}
    with np.load(path) as archive:
        return {k: archive[k] for k in archive.files}


def part(values: dict, prefix: str) -> dict[str, np.ndarray]:
    return {k[len(prefix):]: v for k, v in values.items() if k.startswith(prefix)}


def fixture_dir(directory: Path, group: str) -> Case:
    """A coverage row or a top-level fixture: forward.pb, feed, params, grads, loss (+ float64, random draws)."""
    meta = json.loads((directory / "meta.json").read_text())
    grads = npz(directory / "grads.npz")
    case = Case(group, directory.name, (directory / "forward.pb").read_bytes(), meta["loss"],
                npz(directory / "feed.npz"), npz(directory / "params.npz"), seed=meta.get("seed", 0),
                lods=meta.get("lods", {}))
    if meta.get("program_only") or meta.get("random_outputs"):
        wanted = [g for _, g in meta["params_grads"]] + list(meta.get("input_grads", {}).values())
        case.random, case.fetch = True, [meta["loss"], *wanted, *meta.get("random_outputs", [])]
        return case
    case.fetch = [meta["loss"], *grads]
    case.expect = {meta["loss"]: np.load(directory / "loss.npy"), **grads}
    if (directory / "loss64.npy").exists():
        case.expect64 = {meta["loss"]: np.load(directory / "loss64.npy"), **npz(directory / "grads64.npz")}
    return case


def layer_cases() -> Iterator[Case]:
    for directory in sorted((DATA / "layers").iterdir()):
        if (directory / "forward.pb").exists():
            yield fixture_dir(directory, "layers")
    for name in SINGLE:
        yield fixture_dir(DATA / name, "fixtures")


def value_family_cases(family: str) -> Iterator[Case]:
    """The families whose cases.json lists cases whose arrays are <case>/feed|param|grad|after/<var>, loss, out."""
    directory = DATA / "ops" / family
    values = npz(directory / "values.npz")
    for meta in json.loads((directory / "cases.json").read_text())["cases"]:
        mine = part(values, meta["name"] + "/")
        program = directory / f"{meta['name']}.pb"
        forward = program.read_bytes() if program.exists() else mine["program"].tobytes()
        grads, after = part(mine, "grad/"), part(mine, "after/")
        case = Case(f"ops/{family}", meta["name"], forward, meta["loss"], part(mine, "feed/"), part(mine, "param/"))
        case.random = bool(meta.get("random") or meta.get("random_op"))
        case.fetch = [n for n in (meta.get("out"), meta["loss"]) if n] + list(grads)
        case.expect = {**grads, **{f"after/{k}": v for k, v in after.items()}}
        case.expect |= {n: mine[k] for n, k in ((meta.get("out"), "out"), (meta["loss"], "loss")) if n and k in mine}
        yield case


def shape_cases() -> Iterator[Case]:
    """Programs without a loss: the backward of sum(output * W), W fed as the output's gradient."""
    directory = DATA / "ops" / "shape"
    values = npz(directory / "values.npz")
    for meta in json.loads((directory / "cases.json").read_text())["cases"]:
        mine = part(values, meta["name"] + "/")
        feed = {k: mine[k] for k in meta["feeds"]} | {f"{o}@GRAD": mine[f"{o}@W"] for o in meta["weighted"]}
        fetch = meta["outputs"] + [f"{k}@GRAD" for k in meta["grads"]]
        yield Case("ops/shape", meta["name"], (directory / f"{meta['name']}.pb").read_bytes(), None, feed,
                   fetch=fetch, expect={n: mine[n] for n in fetch}, weighted=meta["weighted"])


def loss_cases() -> Iterator[Case]:
    directory = DATA / "ops" / "loss"
    for meta in json.loads((directory / "cases.json").read_text())["cases"]:
        values = npz(directory / f"{meta['name']}.npz")
        expect = {meta["loss"]: values["loss"], **{g: values[f"grad/{g}"] for g in meta["grads"]}}
        yield Case("ops/loss", meta["name"], (directory / f"{meta['name']}.forward.pb").read_bytes(), meta["loss"],
                   part(values, "feed/"), part(values, "param/"), fetch=list(expect), expect=expect)


def training_cases() -> Iterator[Case]:
    for directory in sorted((DATA / "vision_train").iterdir()):
        meta = json.loads((directory / "meta.json").read_text())
        grads = npz(directory / "grads.npz")
        startup = directory / "startup.pb"   # the dropout fixtures': their masks follow its draws
        case = Case("vision_train", directory.name, (directory / "forward.pb").read_bytes(), meta["loss"],
                    npz(directory / "feed.npz"), npz(directory / "init.npz"), fetch=[meta["loss"], *grads],
                    steps=meta["steps"], train=meta["hyperparameters"], seed=meta["seed"],
                    draws=startup.read_bytes() if startup.exists() else None)
        for suffix, target in (("", case.expect), ("64", case.expect64)):
            if (directory / f"losses{suffix}.npy").exists():
                target[meta["loss"]] = np.load(directory / f"losses{suffix}.npy")
                target |= npz(directory / f"grads{suffix}.npz")
                target |= {f"after/{k}": v for k, v in npz(directory / f"final{suffix}.npz").items()}
        yield case


def bfloat16_cases() -> Iterator[Case]:
    """decorate_bf16's forward programs (O1) and the single ops in bfloat16 of tests/data/paddle/bf16: their float32
    results and gradients (Paddle fetches bfloat16 vars as uint16 bits)."""
    for directory in sorted((DATA / "bf16").glob("*/forward.pb")):
        directory = directory.parent
        meta, values = json.loads((directory / "meta.json").read_text()), npz(directory / "values.npz")
        feeds = npz(directory / "feeds.npz")
        expect = {name: value for name, value in values.items() if value.dtype == np.float32 and "@GRAD" in name}
        yield Case("bf16", directory.name, (directory / "forward.pb").read_bytes(), meta["loss"],
                   {name: value[0] for name, value in feeds.items()}, npz(directory / "init.npz"),
                   fetch=list(expect), expect=expect)
    ops = json.loads((DATA / "bf16" / "ops" / "meta.json").read_text())
    inputs = npz(DATA / "bf16" / "ops" / "inputs.npz")
    for name, (out, loss, grads) in ops["ops"].items():
        if name not in ops["paddle_fails"]:
            values = npz(DATA / "bf16" / "ops" / f"{name}.npz")
            yield Case("bf16/ops", name, (DATA / "bf16" / "ops" / f"{name}.pb").read_bytes(), loss,
                       {**inputs, "w": values["w"]}, fetch=[out, *grads],
                       expect={out: values["out"], **{grad: values[grad] for grad in grads}})


def all_cases() -> Iterator[Case]:
    yield from layer_cases()
    for family in VALUE_FAMILIES:
        yield from value_family_cases(family)
    yield from shape_cases()
    yield from loss_cases()
    yield from training_cases()
    yield from bfloat16_cases()


def compile_case(case: Case) -> tuple[gradc.Program, gradc.Program | None]:
    program = gradc.io.parse_program(case.forward)
    if case.train is not None:
        return program, Adam(**case.train).minimize(program, case.loss)
    if case.weighted:
        for out in case.weighted:  # Paddle's compile-time shape of a tensor-decided output can be stale
            program.global_block.var(out).shape = list(case.feed[f"{out}@GRAD"].shape)
        append_grad_ops(program, case.weighted)
    elif case.loss is not None:
        gradc.append_backward(program, case.loss)
    return program, None


def run(case: Case, program: gradc.Program, startup: gradc.Program | None) -> dict[str, np.ndarray]:
    """gradc's own run of its program, as interop.paddle_side runs it in Paddle (not for random draws)."""
    scope, executor = gradc.Scope(), gradc.Executor()
    if case.draws is not None:
        gradc.seed(case.seed)
        executor.run(gradc.io.parse_program(case.draws), scope=gradc.Scope())
    if startup is not None:
        executor.run(startup, scope=scope)
    for name, value in case.params.items():
        scope[name] = value
    losses, first = [], {}
    feed = {name: gradc.LoDTensor(value, case.lods[name]) if name in case.lods else value
            for name, value in case.feed.items()}
    for _ in range(case.steps):
        values = executor.run(program, feed=feed, fetch_list=case.fetch, scope=scope)
        losses.append(np.asarray(values[0]))
        first = first or {n: np.asarray(v) for n, v in zip(case.fetch, values)}
    if case.steps > 1:
        first[case.loss] = np.stack([loss.reshape(()) for loss in losses])
    return first | {k: np.asarray(scope[k[6:]]) for k in case.expect if k.startswith("after/")}


def write(case: Case, out: Path) -> None:
    program, startup = compile_case(case)
    try:
        ours = {} if case.random else run(case, program.clone(), startup)
    except gradc.GradcError:  # an op gradc cannot run yet: Paddle still can
        ours = {}
    target = out / case.group / case.name
    target.mkdir(parents=True, exist_ok=True)
    gradc.save(program, target / "program.pb")
    if startup is not None:
        gradc.save(startup, target / "startup.pb")
    if case.random:
        (target / "reference.pb").write_bytes(case.forward)
    if case.draws is not None:
        (target / "draws.pb").write_bytes(case.draws)
    arrays = {f"{kind}/{k}": v for kind, values in (("feed", case.feed), ("param", case.params),
                                                     ("expect", case.expect), ("expect64", case.expect64),
                                                     ("gradc", ours))
              for k, v in values.items()}
    np.savez_compressed(target / "arrays.npz", **arrays)
    (target / "case.json").write_text(json.dumps({"fetch": case.fetch, "loss": case.loss, "steps": case.steps,
                                                  "seed": case.seed, "lods": case.lods}) + "\n")


def export(out: Path) -> None:
    skipped, written = {}, 0
    for case in all_cases():
        try:
            write(case, out)
            written += 1
        except gradc.GradcError as error:
            skipped[f"{case.group}/{case.name}"] = str(error)
    (out / "skipped.json").write_text(json.dumps(skipped, indent=1) + "\n")
    print(f"gradc compiled {written} fixtures into {out}; cannot compile {len(skipped)} (skipped.json)")


if __name__ == "__main__":
    export(Path(sys.argv[1]))
