"""Check gradc on whole zoo models (detectors, a segmenter) trained as their configs train them: the learning-rate
schedule Paddle's executor feeds each step, weight decay (with the batch norms' own L2Decay(0.0) where the zoo sets
it) and gradient clipping, over several steps from seeded parameters. Each model is built with Paddle's layers in
legacy static mode (FLAGS_enable_pir_api=0), the optimizer minimized by Paddle, and run by Paddle:

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /path/to/paddle/python tools/zoo_train_scheduled.py paddle OUT_DIR \
        [MODEL ...]
    PYTHONPATH=src:tools .venv/bin/python tools/zoo_train_scheduled.py gradc OUT_DIR
    .venv/bin/python tools/zoo_train_scheduled.py fixture OUT_DIR/MODEL tests/data/paddle/scheduled/MODEL
    .venv/bin/python tools/zoo_train_scheduled.py fixture OUT_DIR/MODEL_pir tests/data/paddle/scheduled/MODEL/pir

MODEL@f64 builds it in float64 (paddle.set_default_dtype; the same batch and seeded values, widened); MODEL@pir in
PIR mode (run with FLAGS_enable_pir_api=1: forward.json and Paddle's numbers; PIR fetches gradients before clipping,
the legacy program after it clips them in place, so a PIR case's gradients are checked with a backward alone);
MODEL@f64pir both (its fixture goes under MODEL_f64/pir, for models whose float32 run is ill-conditioned).

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
from suite_export import paddle_or_gradc  # noqa: E402

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


def _paddledet_piecewise(base_lr: float, warmup_steps: int, start_factor: float, milestones: list,
                         gamma: float) -> dict:
    """PaddleDetection's LearningRate with [PiecewiseDecay, LinearWarmup]: the warm-up's per-step values, then
    base_lr times gamma, gamma / 10, ... from each milestone on, as one PiecewiseDecay."""
    values = [base_lr * (start_factor * (1 - i / warmup_steps) + i / warmup_steps) for i in range(warmup_steps + 1)]
    values += [base_lr * gamma / 10 ** i for i in range(len(milestones))]
    return {"name": "PiecewiseDecay", "boundaries": list(range(1, warmup_steps + 1)) + milestones, "values": values}


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
    # pp_liteseg_stdc1_cityscapes_1024x512_scale0.5_160k.yml over configs/_base_/cityscapes.yml: SGD with momentum
    # 0.9, weight_decay 5e-4, PolynomialDecay(0.005, end_lr 0, power 0.9) after 1000 warm-up iterations from 1e-5
    # (PaddleSeg's LinearWarmup over PolynomialDecay of the iterations left); no clipping. Three warm-up steps of eight.
    "ppliteseg_stdc1": ("paddleseg_ppliteseg", {
        "type": "Momentum", "momentum": 0.9,
        "schedule": {"name": "LinearWarmup", "warmup_steps": 3, "start_lr": 1e-5, "end_lr": 0.005,
                     "learning_rate": {"name": "PolynomialDecay", "learning_rate": 0.005, "decay_steps": 5,
                                       "end_lr": 0.0, "power": 0.9}},
        "weight_decay": {"name": "L2Decay", "coeff": 5e-4}, "clip": None}),
    # picodet_s_320_coco_lcnet.yml over _base_/optimizer_300e.yml: Momentum 0.9, L2 4e-5 (LCNet's and the head's
    # batch norms L2Decay(0.0)), base_lr 0.32, CosineDecay after LinearWarmup(start_factor 0.1); three warm-up steps of
    # six. No clipping (the config sets none).
    "picodet_s": ("paddledet_picodet", {
        "type": "Momentum", "momentum": 0.9, "schedule": _paddledet_cosine(0.32, 3, 0.1, 6),
        "weight_decay": {"name": "L2Decay", "coeff": 4e-5}, "clip": None}),
    # PP-OCRv4_mobile_det.yml: Adam, Cosine 0.001 with warmup_epoch 2 (LinearWarmup from 0 over a CosineAnnealingDecay
    # of epochs x steps), L2 5e-5 (the backbone's batch norms L2Decay(0.0), its affine blocks at a tenth of the
    # rate); one step an epoch, eight epochs. No clipping (the config sets none).
    "ppocrv4_det": ("paddleocr_ppocrv4_det", {
        "type": "Adam", "beta1": 0.9, "beta2": 0.999,
        "schedule": {"name": "LinearWarmup", "warmup_steps": 2, "start_lr": 0.0, "end_lr": 0.001,
                     "learning_rate": {"name": "CosineAnnealingDecay", "learning_rate": 0.001, "T_max": 8}},
        "weight_decay": {"name": "L2Decay", "coeff": 5e-5}, "clip": None}),
    # en_PP-OCRv4_rec.yml: Adam, Cosine 0.0005 with warmup_epoch 5 of 50 (LinearWarmup from 0 over a
    # CosineAnnealingDecay), L2 3e-5, the CTC fc's own L2Decay(1e-5), the affine blocks at a tenth of the rate; two
    # warm-up steps of ten here. PaddleOCR sets no clipping: PaddleDetection's clip_grad_by_value (ClipGradByValue,
    # -var to var) is set, so that value clipping is exercised.
    "ppocrv4_rec": ("paddleocr_ppocrv4_rec", {
        "type": "Adam", "beta1": 0.9, "beta2": 0.999,
        "schedule": {"name": "LinearWarmup", "warmup_steps": 2, "start_lr": 0.0, "end_lr": 0.0005,
                     "learning_rate": {"name": "CosineAnnealingDecay", "learning_rate": 0.0005, "T_max": 10}},
        "weight_decay": {"name": "L2Decay", "coeff": 3e-5}, "clip": {"name": "ClipGradByValue", "max": 0.01,
                                                                    "min": -0.01}}),
    # tinypose_128x96.yml: Adam, base_lr 0.008, PiecewiseDecay (milestones 380 and 410 of 420 epochs, gamma 0.1)
    # after LinearWarmup(start_factor 0.001, 500 steps), the L2 regularizer's factor 0.0; two warm-up steps and the
    # milestones at steps 4 and 5 here. No clipping (the config sets none).
    "tinypose": ("paddledet_tinypose", {
        "type": "Adam", "beta1": 0.9, "beta2": 0.999, "schedule": _paddledet_piecewise(0.008, 2, 0.001, [4, 5], 0.1),
        "weight_decay": {"name": "L2Decay", "coeff": 0.0}, "clip": None}),
    # portrait_pp_humansegv2_lite.yml: sgd with momentum 0.9 (paddle.optimizer.Momentum), weight_decay 5e-4 (the
    # backbone's batch norms L2Decay(0.0)), PolynomialDecay(0.001, end_lr 0, power 0.9) over the iterations (six
    # here); no warm-up, no clipping (the config sets neither).
    "pphumanseg_v2_lite": ("paddleseg_pphumanseg", {
        "type": "Momentum", "momentum": 0.9,
        "schedule": {"name": "PolynomialDecay", "learning_rate": 0.001, "decay_steps": 6, "end_lr": 0.0,
                     "power": 0.9},
        "weight_decay": {"name": "L2Decay", "coeff": 5e-4}, "clip": None}),
}


def _param_settings(params) -> dict:
    """The trained parameters' own settings (PP-OCRv4 det's stride-2 rep layers leave their activation's affine
    block unused): no_decay, those whose ParamAttr regularizer is L2Decay(0.0) (batch norms), and
    param_attrs, the others' own rate multiplier and L2 coefficient where either is not the optimizer's."""
    no_decay, attrs = [], {}
    for param in params:
        rate, coeff = param.optimize_attr["learning_rate"], getattr(param.regularizer, "_coeff", None)
        if coeff == 0.0:
            no_decay.append(param.name)
        elif rate != 1.0 or coeff is not None:
            attrs[param.name] = {"learning_rate": rate, "decay": coeff}
    return {"no_decay": sorted(no_decay), "param_attrs": attrs}


def _paddle_schedule(spec: dict):
    import paddle
    arguments = {k: _paddle_schedule(v) if isinstance(v, dict) else v for k, v in spec.items() if k != "name"}
    return getattr(paddle.optimizer.lr, spec["name"])(**arguments)


def _paddle_optimizer(settings: dict, scheduler):
    import paddle
    arguments = {k: v for k, v in settings.items() if k not in ("type", "schedule", "weight_decay", "clip")}
    decay, clip = settings["weight_decay"], settings["clip"]
    return getattr(paddle.optimizer, settings["type"])(
        learning_rate=scheduler, **arguments, weight_decay=getattr(paddle.regularizer, decay["name"])(decay["coeff"]),
        grad_clip=clip and getattr(paddle.nn, clip["name"])(**{k: v for k, v in clip.items() if k != "name"}))


def paddle_step(out: Path, entry: str) -> None:
    import paddle
    from paddle_legacy_shim import install
    from paddle_programs import without_callstacks
    model, _, form = entry.partition("@")
    if not form.endswith("pir"):
        install()   # 3.3.1's paddle.exp, matmul, ... have no legacy static path of their own
    paddle.enable_static()
    paddle.seed(SEED)
    module_name, settings = MODELS[model]
    module = importlib.import_module(module_name)
    feed = module.whole_feed(np.random.default_rng(0))
    if form.startswith("f64"):   # the same batch and seeded parameters, widened
        paddle.set_default_dtype("float64")
        feed = {name: value.astype("float64") if value.dtype == np.float32 else value for name, value in feed.items()}
        if (settings["clip"] or {}).get("name") == "ClipGradByNorm":   # legacy clip_by_norm: float16/32 (check_dtype)
            settings = {**settings, "clip": None}
    if form.endswith("pir"):
        if (settings["clip"] or {}).get("name") == "ClipGradByValue":   # 3.3.1's has no _pir_clip: NotImplementedError
            settings = {**settings, "clip": None}
        _pir_step(out, module, settings, feed)
        return
    main, startup = paddle.static.Program(), paddle.static.Program()
    scheduler = _paddle_schedule(settings["schedule"])
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss = module.whole(feed)
        forward = main.clone()
        _paddle_optimizer(settings, scheduler).minimize(loss)
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
    (out / "meta.json").write_text(json.dumps({
        "loss": loss.name, "lr_var": lr_var, "optimizer": settings, "seed": SEED, "steps": STEPS,
        "seeded": seeded, **_param_settings(p for p in main.all_parameters() if f"{p.name}@GRAD" in grads),
        "train_ops": len(main.global_block().ops),
        "ops": sorted({op.type for op in forward.global_block().ops})}, indent=1))


def _pir_step(out: Path, module, settings: dict, feed: dict) -> None:
    """The same in PIR mode (FLAGS_enable_pir_api=1): forward.json (the training forward, its loss fetched as
    "loss") and Paddle's steps of its PIR training program, seeded alike (the legacy case's startup gives gradc the
    constants)."""
    import paddle
    from paddle.base import core
    main, startup = paddle.static.Program(), paddle.static.Program()
    scheduler = _paddle_schedule(settings["schedule"])
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        loss = module.whole(feed)
        mapping = paddle.pir.IrMapping()
        forward = main.clone(mapping)
        with paddle.static.program_guard(forward):
            paddle._pir_ops.fetch(mapping.look_up(loss), "loss", 0).persistable = True
        _, pairs = _paddle_optimizer(settings, scheduler).minimize(loss)
    out.mkdir(parents=True, exist_ok=True)
    core.serialize_pir_program(forward, str(out / "forward.json"), True, False, True)
    exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.global_scope()
    exe.run(startup)
    seeded = sorted(op.attrs()["parameter_name"] for op in startup.global_block().ops
                    if op.name() == "builtin.set_parameter"
                    and op.operand_source(0).get_defining_op().name() != "pd_op.full")
    for name in seeded:
        tensor = scope.find_var(name).get_tensor()
        value = np.array(tensor)
        tensor.set(param_value(name, list(value.shape), SEED).astype(value.dtype), paddle.CPUPlace())
    np.savez_compressed(out / "feed.npz", **feed)
    grads, record = [(param.name, grad) for param, grad in pairs if grad is not None], {}
    for step in range(STEPS):
        value, *grad_values = exe.run(main, feed=feed, fetch_list=[loss] + ([g for _, g in grads] if step == 0 else []))
        record[f"@loss:{step}"], record[f"@lr:{step}"] = np.asarray(value), np.float32(scheduler())
        record.update({f"@grad:{n}@GRAD": stored_grad(n + "@GRAD", v) for (n, _), v in zip(grads, grad_values)})
        scheduler.step()
    np.savez_compressed(out / "paddle.npz", **record)
    (out / "meta.json").write_text(json.dumps({
        "loss": "loss", "optimizer": settings, "seed": SEED, "steps": STEPS, "seeded": seeded,
        **_param_settings(param for param, _ in pairs),
        "ops": sorted({op.name() for op in forward.global_block().ops})}, indent=1))


def write_fixture(case: Path, out: Path) -> None:
    """The committed copy: the programs gzipped, Paddle's losses, rates and first gradients (not the persistables
    after the last step), the feed and meta.json; a PIR case goes under its legacy fixture (OUT/pir), whose feed
    it must share."""
    out.mkdir(parents=True, exist_ok=True)
    for name in ("train.pb", "forward.pb", "startup.pb", "forward.json"):
        if (case / name).exists():
            (out / f"{name}.gz").write_bytes(gzip.compress((case / name).read_bytes(), mtime=0))
    paddle, feed = np.load(case / "paddle.npz"), np.load(case / "feed.npz")
    np.savez_compressed(out / "paddle.npz", **{n: paddle[n] for n in paddle.files if n.startswith("@")})
    shutil.copy(case / "meta.json", out / "meta.json")
    if (case / "forward.json").exists():
        shared = np.load(out.parent / "feed.npz")
        assert all(np.array_equal(shared[n], feed[n]) for n in feed.files) and len(shared.files) == len(feed.files)
    else:
        shutil.copy(case / "feed.npz", out / "feed.npz")


def main() -> None:
    if sys.argv[1] == "fixture":
        write_fixture(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    paddle_or_gradc(MODELS, paddle_step, lambda case: importlib.import_module("zoo_scheduled_check").gradc_step(case))


if __name__ == "__main__":
    main()
