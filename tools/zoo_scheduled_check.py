"""gradc's side of tools/zoo_train_scheduled.py: Paddle's training program and gradc's compile of the training
forward (a PIR case: its forward.json) run through the steps from the seeded parameters, against Paddle's numbers."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
from zoo_train_scheduled import ROOT  # noqa: F401 - puts tests/ on the path for seeded_params

from seeded_params import param_value, stored_grad  # noqa: E402


def gradc_optimizer(settings: dict):
    """gradc's optimizer of the same settings (gradc.optimizers and gradc.schedules take Paddle's names)."""
    from gradc import optimizers, schedules

    def schedule(spec):
        return schedules.make(spec["name"], **{k: schedule(v) if isinstance(v, dict) else v
                                                for k, v in spec.items() if k != "name"})
    arguments = {k: v for k, v in settings.items() if k not in ("type", "schedule", "weight_decay", "clip")}
    decay, clip = settings["weight_decay"], settings["clip"]
    return getattr(optimizers, settings["type"])(
        learning_rate=schedule(settings["schedule"]), **arguments,
        weight_decay=getattr(optimizers, decay["name"])(decay["coeff"]),
        grad_clip=clip and getattr(optimizers, clip["name"])(**{k: v for k, v in clip.items() if k != "name"})), \
        schedule(settings["schedule"])


def param_attrs(meta: dict) -> dict:
    """gradc's ParamAttr of each parameter the fixture names: the batch norms' L2Decay(0.0), and the others' own
    rate multiplier and L2 coefficient."""
    from gradc.optimizers import L2Decay, ParamAttr
    attrs = {name: ParamAttr(regularizer=L2Decay(0.0)) for name in meta["no_decay"]}
    for name, own in meta.get("param_attrs", {}).items():
        decay = own["decay"]
        regularizer = None if decay is None else L2Decay(decay)
        attrs[name] = ParamAttr(learning_rate=own["learning_rate"], regularizer=regularizer)
    return attrs


def _read(case: Path, name: str) -> bytes:
    plain = case / f"{name}.pb"
    return plain.read_bytes() if plain.exists() else gzip.decompress((case / f"{name}.pb.gz").read_bytes())


def gradc_step(case: Path) -> dict:
    """Paddle's training program and gradc's compile of the training forward (a PIR case: its forward.json, with the
    legacy case's startup), each run STEPS steps: the distances ``run`` measures."""
    import gradc
    from gradc.io import parse_program
    meta, paddle = json.loads((case / "meta.json").read_text()), np.load(case / "paddle.npz")
    pir = (case / "forward.json").exists()
    shared = case.with_name(case.name.removesuffix("_pir")) if pir else case
    forward = gradc.load(case / "forward.json") if pir else parse_program(_read(case, "forward"))
    optimizer, schedule = gradc_optimizer(meta["optimizer"])
    startup = optimizer.minimize(forward, meta["loss"], param_attrs=param_attrs(meta))
    report = {"gradc_compile": run(forward, startup, schedule, case, shared, meta, paddle, not pir)}
    if pir:   # Paddle's PIR fetches the gradients before clipping, its legacy program after (clipped in place)
        backward = gradc.load(case / "forward.json")
        grads = [grad for _, grad in gradc.append_backward(backward, meta["loss"])]
        values = gradc.Executor().run(backward, dict(np.load(case / "feed.npz")), grads,
                                      seeded_scope(backward, shared, meta))
        report["gradc_compile"]["grads"] = grad_distance(dict(zip(grads, values)), paddle)
    else:
        train = parse_program(_read(case, "train"))
        report.update(paddle_program=run(train, None, schedule, case, shared, meta, paddle),
                      train_ops=meta["train_ops"], problems=gradc.verify(train)[:3])
    return report


def seeded_scope(program, shared: Path, meta: dict, startup=None):
    """A scope after Paddle's startup (run by gradc: its constants), the drawn parameters replaced by the seeded
    values in their dtype, then ``startup``'s (gradc's optimizer accumulators)."""
    import gradc
    from gradc.io import parse_program
    from gradc.ir.types import NUMPY_DTYPE_NAMES
    scope, executor, block = gradc.Scope(), gradc.Executor(), program.global_block
    executor.run(parse_program(_read(shared, "startup")), {}, [], scope)
    for name in meta["seeded"]:
        var = block.var(name)
        scope[name] = param_value(name, list(var.shape), meta["seed"]).astype(NUMPY_DTYPE_NAMES[var.dtype])
    if startup is not None:
        executor.run(startup, {}, [], scope)
    return scope


def run(program, startup, schedule, case: Path, shared: Path, meta: dict, paddle, grads_after_clipping=True) -> dict:
    """The steps of ``program``: the largest distance of the rates from Paddle's, of each step's loss, of the first
    step's gradients (each of its own largest, or of 100 ulps of the largest gradient for one zero but for rounding)
    and of the persistables after the last step (each of its own largest)."""
    import gradc
    from gradc.schedules import run_step
    scope, executor = seeded_scope(program, shared, meta, startup), gradc.Executor()
    feed = dict(np.load(case / "feed.npz"))
    grads = sorted(name.removeprefix("@grad:") for name in paddle.files if name.startswith("@grad:"))
    steps = range(meta["steps"])
    report = {"lr": max(abs(float(np.float32(schedule(step)) - paddle[f"@lr:{step}"])) for step in steps), "loss": []}
    for step in steps:
        value, *grad_values = run_step(executor, program, scope, schedule, step, feed,
                                       [meta["loss"], *(grads if step == 0 else [])])
        report["loss"].append(_distance(value, paddle[f"@loss:{step}"]))
        if step == 0 and grads_after_clipping:
            report["grads"] = grad_distance(dict(zip(grads, grad_values)), paddle)
    report["after"] = max(((_distance(stored_grad(n, scope[n]), paddle[n]), n) for n in paddle.files
                           if not n.startswith("@") and n in scope), default=None)
    return report


def grad_distance(ours: dict, paddle) -> tuple[float, str]:
    ours = {name: stored_grad(name, value) for name, value in ours.items()}
    theirs = {name: np.asarray(paddle[f"@grad:{name}"], np.float64) for name in ours}
    eps = float(np.finfo(paddle[f"@grad:{next(iter(ours))}"].dtype).eps)
    floor = 100 * eps * max(float(np.abs(v).max()) for v in theirs.values())
    return max((float(np.abs(np.asarray(ours[n], np.float64) - v).max()) / max(float(np.abs(v).max()), floor), n)
               for n, v in theirs.items())


def _distance(ours, theirs) -> float:
    theirs = np.asarray(theirs, np.float64)
    return float(np.abs(np.asarray(ours, np.float64) - theirs).max() / max(np.abs(theirs).max(), 1e-30))
