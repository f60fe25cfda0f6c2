"""Check gradc on whole zoo detectors trained as their configs train them: the learning-rate schedule Paddle's
executor feeds each step, weight decay (with the batch norms' own L2Decay(0.0) where the zoo sets it) and gradient
clipping, over several steps from seeded parameters. Each model is built with Paddle's layers in legacy static mode
(FLAGS_enable_pir_api=0), the optimizer minimized by Paddle, and run by Paddle:

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /path/to/paddle/python tools/zoo_train_scheduled.py paddle OUT_DIR \
        [MODEL ...]
    PYTHONPATH=src:tools .venv/bin/python tools/zoo_train_scheduled.py gradc OUT_DIR
    .venv/bin/python tools/zoo_train_scheduled.py fixture OUT_DIR/MODEL tests/data/paddle/scheduled/MODEL

MODEL@f64 builds it in float64 (paddle.set_default_dtype; the same batch and seeded values, widened).

A static LRScheduler is not in the program: before each run Paddle's Executor writes the scheduler's current value
into the learning-rate var (``program.lr_scheduler``, python/paddle/base/executor.py) and the trainer calls
``scheduler.step()`` after it; gradc's Trainer and ``gradc.schedules.run_step`` write gradc's schedule of the same
name and arguments there. Parameters Paddle's startup draws at random are replaced by tests/seeded_params.py's
values (so the fixture stores seeds, not parameters); those it fills with a constant (batch norms, biases) are kept.

OUT_DIR/MODEL holds train.pb (Paddle's minimize), forward.pb (the training forward), startup.pb, feed.npz,
paddle.npz (each step's learning rate and loss, the first step's gradients and every persistable after the last
step, large ones as seeded_params.stored_grad's sampled entries) and meta.json (the optimizer's settings, the seeded
parameters).
"""

from __future__ import annotations

import gzip
import importlib
import json
import math
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from seeded_params import param_value, stored_grad  # noqa: E402

SEED, STEPS = 11, 6


def _paddledet_cosine(base_lr: float, warmup_steps: int, start_factor: float, max_iters: int) -> dict:
    """PaddleDetection's LearningRate with [CosineDecay, LinearWarmup] (ppdet/optimizer/optimizer.py): the
    warm-up's and the cosine's per-step values as one PiecewiseDecay, as it builds them."""
    boundaries, values = [], []
    for i in range(warmup_steps + 1):
        alpha = i / warmup_steps
        values.append(base_lr * (start_factor * (1 - alpha) + alpha))
        if i > 0:
            boundaries.append(i)
    for i in range(boundaries[-1], max_iters):
        boundaries.append(i)
        values.append(base_lr * 0.5 * (math.cos((i - warmup_steps) * math.pi / (max_iters - warmup_steps)) + 1))
    return {"name": "PiecewiseDecay", "boundaries": boundaries, "values": values}


MODELS = {   # model: (module, its feed and builder, the optimizer as its config makes it, shrunk to a few steps)
    # det_mv3_db.yml: Adam, Cosine 0.001 with warmup_epoch 2 (LinearWarmup from 0 over a CosineAnnealingDecay of
    # epochs x steps); two steps an epoch, four epochs. Its L2 factor 0 is PP-OCRv3 det's 5e-5 here, and PaddleOCR's
    # optional clip_norm (ClipGradByNorm) is set, so that decay and clipping are exercised.
    "db_mv3": ("paddleocr_db", {
        "type": "Adam", "beta1": 0.9, "beta2": 0.999,
        "schedule": {"name": "LinearWarmup", "warmup_steps": 4, "start_lr": 0.0, "end_lr": 0.001,
                     "learning_rate": {"name": "CosineAnnealingDecay", "learning_rate": 0.001, "T_max": 8}},
        "weight_decay": {"name": "L2Decay", "coeff": 5e-5}, "clip": {"name": "ClipGradByNorm", "clip_norm": 0.5}}),
    # ppyoloe_crn_s_300e_coco.yml: Momentum 0.9, L2 5e-4 (batch norms L2Decay(0.0)), base_lr 0.04, CosineDecay
    # after LinearWarmup(start_factor 0.001); three warm-up steps of six. PaddleDetection's optional
    # clip_grad_by_norm (ClipGradByGlobalNorm) is set.
    "ppyoloe_s": ("paddledet_cspresnet", {
        "type": "Momentum", "momentum": 0.9, "schedule": _paddledet_cosine(0.04, 3, 0.001, 6),
        "weight_decay": {"name": "L2Decay", "coeff": 5e-4},
        "clip": {"name": "ClipGradByGlobalNorm", "clip_norm": 5.0}}),
}


def _paddle_schedule(spec: dict):
    import paddle
    arguments = {k: _paddle_schedule(v) if isinstance(v, dict) else v for k, v in spec.items() if k != "name"}
    return getattr(paddle.optimizer.lr, spec["name"])(**arguments)


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
        grad_clip=clip and getattr(optimizers, clip["name"])(clip["clip_norm"])), schedule(settings["schedule"])


def paddle_step(out: Path, entry: str) -> None:
    import paddle
    from paddle_legacy_shim import install
    from paddle_programs import without_callstacks
    install()   # 3.3.1's paddle.exp, matmul, ... have no legacy static path of their own
    paddle.enable_static()
    paddle.seed(SEED)
    model, _, form = entry.partition("@")
    module_name, settings = MODELS[model]
    module = importlib.import_module(module_name)
    feed = module.whole_feed(np.random.default_rng(0))
    if form == "f64":   # the same batch and seeded parameters, widened
        paddle.set_default_dtype("float64")
        feed = {name: value.astype("float64") if value.dtype == np.float32 else value for name, value in feed.items()}
        if settings["clip"]["name"] == "ClipGradByNorm":   # legacy clip_by_norm takes float16/32 only (check_dtype)
            settings = {**settings, "clip": None}
    main, startup = paddle.static.Program(), paddle.static.Program()
    scheduler = _paddle_schedule(settings["schedule"])
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss = module.whole(feed)
        forward = main.clone()
        arguments = {k: v for k, v in settings.items() if k not in ("type", "schedule", "weight_decay", "clip")}
        decay, clip = settings["weight_decay"], settings["clip"]
        getattr(paddle.optimizer, settings["type"])(
            learning_rate=scheduler, **arguments,
            weight_decay=getattr(paddle.regularizer, decay["name"])(decay["coeff"]),
            grad_clip=clip and getattr(paddle.nn, clip["name"])(clip["clip_norm"])).minimize(loss)
    out.mkdir(parents=True, exist_ok=True)
    for name, program in {"train": main, "forward": forward, "startup": startup}.items():
        (out / f"{name}.pb").write_bytes(without_callstacks(program))
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    exe.run(startup)
    persistable = sorted(v.name for v in main.list_vars() if v.persistable and v.name not in ("feed", "fetch")
                         and scope.find_var(v.name) is not None
                         and scope.find_var(v.name).get_tensor()._is_initialized())
    drawn = {name for op in startup.global_block().ops if op.type != "fill_constant" for name in op.output_arg_names}
    seeded = sorted(p.name for p in main.all_parameters() if p.name in drawn)
    for name in seeded:
        tensor = scope.find_var(name).get_tensor()
        value = param_value(name, list(np.array(tensor).shape), SEED)
        tensor.set(value.astype(np.array(tensor).dtype), paddle.CPUPlace())
    np.savez_compressed(out / "feed.npz", **feed)
    lr_var = main.lr_scheduler._var_name
    grads = [p.name + "@GRAD" for p in main.all_parameters() if main.global_block().has_var(p.name + "@GRAD")]
    record = {}
    for step in range(STEPS):
        value, *grad_values = exe.run(main, feed=feed, fetch_list=[loss] + (grads if step == 0 else []))
        record[f"@loss:{step}"] = np.asarray(value)
        record[f"@lr:{step}"] = np.array(scope.find_var(lr_var).get_tensor())
        record.update({f"@grad:{g}": stored_grad(g, v) for g, v in zip(grads, grad_values)})
        scheduler.step()
    record.update({n: stored_grad(n, np.array(scope.find_var(n).get_tensor())) for n in persistable})
    np.savez_compressed(out / "paddle.npz", **record)
    no_decay = sorted(p.name for p in main.all_parameters() if p.regularizer is not None)
    (out / "meta.json").write_text(json.dumps({
        "loss": loss.name, "lr_var": lr_var, "optimizer": settings, "seed": SEED, "steps": STEPS,
        "seeded": seeded, "no_decay": no_decay, "train_ops": len(main.global_block().ops),
        "ops": sorted({op.type for op in forward.global_block().ops})}, indent=1))


def gradc_step(case: Path) -> dict:
    """Paddle's training program and gradc's compile of the training forward, each run STEPS steps: the largest
    distance of each step's loss, of the first step's gradients and of the persistables after the last step from
    Paddle's, each of its own largest value."""
    import gradc
    from gradc.io import parse_program
    from gradc.optimizers import L2Decay, ParamAttr
    meta = json.loads((case / "meta.json").read_text())
    programs = {name: parse_program(_read(case, name)) for name in ("train", "forward")}
    optimizer, schedule = gradc_optimizer(meta["optimizer"])
    attrs = {name: ParamAttr(regularizer=L2Decay(0.0)) for name in meta["no_decay"]}
    startup = optimizer.minimize(programs["forward"], meta["loss"], param_attrs=attrs)
    paddle = np.load(case / "paddle.npz")
    return {"paddle_program": run(programs["train"], None, schedule, case, meta, paddle),
            "gradc_compile": run(programs["forward"], startup, schedule, case, meta, paddle),
            "train_ops": meta["train_ops"], "problems": gradc.verify(programs["train"])[:3]}


def _read(case: Path, name: str) -> bytes:
    plain = case / f"{name}.pb"
    return plain.read_bytes() if plain.exists() else gzip.decompress((case / f"{name}.pb.gz").read_bytes())


def seeded_scope(program, case: Path, meta: dict, startup=None):
    """A scope after Paddle's startup (run by gradc: its constants), the drawn parameters replaced by the seeded
    values in their dtype, then ``startup``'s (gradc's optimizer accumulators)."""
    import gradc
    from gradc.io import parse_program
    from gradc.ir.types import NUMPY_DTYPE_NAMES
    scope, executor, block = gradc.Scope(), gradc.Executor(), program.global_block
    executor.run(parse_program(_read(case, "startup")), {}, [], scope)
    for name in meta["seeded"]:
        var = block.var(name)
        scope[name] = param_value(name, list(var.shape), meta["seed"]).astype(NUMPY_DTYPE_NAMES[var.dtype])
    if startup is not None:
        executor.run(startup, {}, [], scope)
    return scope


def run(program, startup, schedule, case: Path, meta: dict, paddle) -> dict:
    """The steps of ``program``: the largest distance of the rates from Paddle's, of each step's loss, of the first
    step's gradients (each of its own largest, or of 100 ulps of the largest gradient for one zero but for rounding)
    and of the persistables after the last step (each of its own largest)."""
    import gradc
    from gradc.schedules import run_step
    scope, executor = seeded_scope(program, case, meta, startup), gradc.Executor()
    feed = dict(np.load(case / "feed.npz"))
    grads = sorted(name.removeprefix("@grad:") for name in paddle.files if name.startswith("@grad:"))
    steps = range(meta["steps"])
    report = {"lr": max(abs(float(np.float32(schedule(step)) - paddle[f"@lr:{step}"])) for step in steps), "loss": []}
    for step in steps:
        value, *grad_values = run_step(executor, program, scope, schedule, step, feed,
                                       [meta["loss"], *(grads if step == 0 else [])])
        report["loss"].append(_distance(value, paddle[f"@loss:{step}"]))
        if step == 0:
            report["grads"] = grad_distance({g: stored_grad(g, v) for g, v in zip(grads, grad_values)}, paddle)
    report["after"] = max((_distance(stored_grad(n, scope[n]), paddle[n]), n) for n in paddle.files
                          if not n.startswith("@") and n in scope)
    return report


def grad_distance(ours: dict, paddle) -> tuple[float, str]:
    theirs = {name: np.asarray(paddle[f"@grad:{name}"], np.float64) for name in ours}
    eps = float(np.finfo(paddle[f"@grad:{next(iter(ours))}"].dtype).eps)
    floor = 100 * eps * max(float(np.abs(v).max()) for v in theirs.values())
    return max((float(np.abs(np.asarray(ours[n], np.float64) - v).max()) / max(float(np.abs(v).max()), floor), n)
               for n, v in theirs.items())


def _distance(ours, theirs) -> float:
    theirs = np.asarray(theirs, np.float64)
    return float(np.abs(np.asarray(ours, np.float64) - theirs).max() / max(np.abs(theirs).max(), 1e-30))


def write_fixture(case: Path, out: Path) -> None:
    """The committed copy: the programs gzipped, Paddle's losses, rates and first gradients (not the persistables
    after the last step), the feed and meta.json."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("train", "forward", "startup"):
        (out / f"{name}.pb.gz").write_bytes(gzip.compress((case / f"{name}.pb").read_bytes(), mtime=0))
    paddle = np.load(case / "paddle.npz")
    np.savez_compressed(out / "paddle.npz", **{n: paddle[n] for n in paddle.files if n.startswith("@")})
    for name in ("feed.npz", "meta.json"):
        shutil.copy(case / name, out / name)


def main() -> None:
    if sys.argv[1] == "fixture":
        write_fixture(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    if sys.argv[1] == "paddle":
        out = Path(sys.argv[2]).resolve()
        for entry in sys.argv[3:] or list(MODELS):
            paddle_step(out / entry.replace("@", "_"), entry)
            print(entry, "OK", flush=True)
        return
    from suite_export import report_each
    report_each(Path(sys.argv[2]), gradc_step)


if __name__ == "__main__":
    main()
