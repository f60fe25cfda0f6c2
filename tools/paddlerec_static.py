"""Check gradc on PaddleRec's static path: the legacy training programs its tools/static_trainer.py builds (the model's
static_model.py, then Paddle's optimizer minimize; sparse_feature_number capped at 10,001 and the ids folded below
it), with Paddle's startup values and one batch of the model's own sample data. Two steps, one per interpreter:

    FLAGS_enable_pir_api=0 PYTHONPATH=DEPS:tools /path/to/paddle/python tools/paddlerec_static.py paddle \
        PADDLEREC_DIR OUT_DIR models/rank/deepfm
    PYTHONPATH=src .venv/bin/python tools/paddlerec_static.py gradc OUT_DIR

The Paddle step writes OUT_DIR/<model>/: forward.pb (the program before minimize), train.pb and startup.pb (after),
params.npz (every persistable var after Paddle's startup), feed.npz, Paddle's loss and persistable vars after each of
two steps on that feed (step1.npz, step2.npz; the first step's dense gradients too), and meta.json (loss, optimizer,
each parameter's own learning rate and regularizer, which Paddle keeps on the Python object). The gradc step loads and
verifies train.pb and runs its two steps, then compiles forward.pb with the same optimizer (gradc.minimize) and runs
that for two steps, and prints per model how far each is from Paddle's loss, gradients and values (relative to their
largest). With FLOAT64 set, the gradc step also widens Paddle's training program to float64 and writes its first
step's gradients (grads64.npz, with train64.pb, params64.npz and feed64.npz), and a third step has Paddle run that
program and prints how far its float64 gradients are from gradc's (float32 rounding, or not):

    FLAGS_enable_pir_api=0 PYTHONPATH=tools /path/to/paddle/python tools/paddlerec_static.py paddle64 OUT_DIR
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
from suite_export import report_each

STEPS = 2
VOCABULARY = 10_001   # the most ids a sparse slot's table holds here (the reader's ids are hashed below it)
OPTIMIZERS = {"adam": ("beta1", "beta2", "epsilon", "lazy_mode"), "sgd": (), "adagrad": ("epsilon",)}


def paddle_step(source: Path, out: Path, model_dir: str) -> None:
    """Build the model's static programs as PaddleRec's static trainer does and record Paddle's two steps."""
    import paddle
    os.chdir(source)
    sys.path[:0] = [str(source / "tools"), str(source / model_dir)]
    from paddle_legacy_shim import install
    from utils.utils_single import create_data_loader, load_static_model_class, load_yaml
    install()   # 3.3.1's paddle.multiply, matmul, sum, ... have no legacy static path of their own
    paddle.enable_static()
    config = load_yaml(str(source / model_dir / "config.yaml"))
    config["yaml_path"], config["config_abs_dir"] = str(source / model_dir / "config.yaml"), str(source / model_dir)
    capped = [key for key, value in config.items()   # FFM's 1,000,001 ids hold 12 GB of Adam steps here
              if key.startswith("hyper_parameters.sparse_feature") and type(value) is int and value > VOCABULARY]
    config.update(dict.fromkeys(capped, VOCABULARY))
    paddle.seed(config.get("runner.seed", 12345))
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        model = load_static_model_class(config)
        inputs = model.create_feeds()
        model.net(inputs)
        forward = main.clone()
        model.create_optimizer()
    out.mkdir(parents=True, exist_ok=True)
    for name, program in (("forward", forward), ("train", main), ("startup", startup)):
        (out / f"{name}.pb").write_bytes(program.desc.serialize_to_string())
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    scope = paddle.static.global_scope()
    persistable = [v.name for v in main.list_vars() if v.persistable and v.name not in ("feed", "fetch")
                   and scope.find_var(v.name) is not None and scope.find_var(v.name).get_tensor()._is_initialized()]
    np.savez(out / "params.npz", **{name: np.array(scope.find_var(name).get_tensor()) for name in persistable})
    batch = next(iter(create_data_loader(config=config, place=paddle.CPUPlace())))
    from paddle.base.data_feeder import convert_dtype
    feed = {var.name: _as_declared(np.array(value), var.shape).astype(convert_dtype(var.dtype))
            for var, value in zip(inputs, batch)}
    if capped:   # the sample data's ids folded below the capped vocabulary (labels and small ids stay)
        feed = {name: value % VOCABULARY if value.dtype.kind == "i" else value for name, value in feed.items()}
    np.savez(out / "feed.npz", **feed)
    loss = model._cost.name
    block = main.global_block()   # the first step's dense gradients too (a SelectedRows one does not fetch)
    grads = [g for g in (p.name + "@GRAD" for p in main.all_parameters()) if block.has_var(g)
             and block.var(g).type != paddle.base.core.VarDesc.VarType.SELECTED_ROWS]
    for step in range(1, STEPS + 1):
        value, *grad_values = exe.run(main, feed=feed, fetch_list=[loss, *grads] if step == 1 else [loss])
        np.savez(out / f"step{step}.npz", **{"@loss": np.asarray(value)},
                 **{f"@grad:{g}": np.asarray(v) for g, v in zip(grads, grad_values)},
                 **{name: np.array(scope.find_var(name).get_tensor()) for name in persistable})
    ops = [op for op in main.global_block().ops if op.type in OPTIMIZERS]
    optimizer = {"type": ops[0].type, **{a: ops[0].attr(a) for a in OPTIMIZERS[ops[0].type]},
                 "lr": float(np.asarray(np.array(scope.find_var(ops[0].input("LearningRate")[0]).get_tensor())))}
    # a parameter's own regularizer and learning rate live on its Python object, not in the program
    attrs = {p.name: {"learning_rate": p.optimize_attr["learning_rate"], "regularizer": p.regularizer and
                      [type(p.regularizer).__name__, float(p.regularizer._coeff)]} for p in main.all_parameters()
             if p.regularizer is not None or p.optimize_attr["learning_rate"] != 1.0}
    (out / "meta.json").write_text(json.dumps({"loss": loss, "optimizer": optimizer, "param_attrs": attrs,
                                               "seed": config.get("runner.seed", 12345)}))


def _as_declared(value: np.ndarray, shape) -> np.ndarray:
    """A reader's batch as the data var declares it (a slot of ids [batch] fed to a [-1, 1] var)."""
    return value.reshape([d if d > 0 else -1 for d in shape]) if value.ndim != len(shape) else value


def _relative(ours, theirs) -> float:
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    if ours.shape != theirs.shape:
        return float("inf")
    return float(np.abs(ours - theirs).max() / (np.abs(theirs).max() + 1e-30)) if theirs.size else 0.0


def _run_steps(program, params: dict, feed: dict, loss: str, check: Path, startup=None) -> dict:
    """Two steps of ``program`` from ``params`` (after ``startup``, if given): per step the loss's and the worst
    persistable var's distance from Paddle's."""
    import gradc
    scope, executor = gradc.Scope(), gradc.Executor()
    for name, value in params.items():
        scope[name] = value.copy()
    if startup is not None:
        executor.run(startup, {}, [], scope)
    report = {}
    for step in range(1, STEPS + 1):
        paddle = np.load(check / f"step{step}.npz")
        grads = [name.removeprefix("@grad:") for name in paddle.files if name.startswith("@grad:")]
        value, *grad_values = executor.run(program, feed, [loss, *grads], scope)
        worst = max(((_relative(scope[name], paddle[name]), name) for name in paddle.files
                     if not name.startswith("@") and name in scope),
                    default=(0.0, ""))
        report[f"step{step}"] = {"loss": _relative(value, paddle["@loss"]), "worst": worst}
        if grads:
            report[f"step{step}"]["worst_grad"] = _worst_grad(dict(zip(grads, grad_values)), paddle)
            # how large the furthest parameter's own gradient is, against the largest: an optimizer turns one zero
            # but for rounding into a step as far from Paddle's as it is large (Adam: a whole learning rate)
            largest = max(float(np.abs(paddle[f"@grad:{g}"]).max()) for g in grads if paddle[f"@grad:{g}"].size)
            own = f"@grad:{worst[1]}@GRAD"
            if own in paddle.files:
                report[f"step{step}"]["its_grad_share"] = float(np.abs(paddle[own]).max()) / largest
    return report


def _worst_grad(ours: dict, paddle) -> tuple[float, str]:
    """The gradient furthest from Paddle's, relative to its largest magnitude or, for one zero but for rounding, to
    100 ulps (of their dtype) of the largest gradient (as tools/real_models.py measures)."""
    theirs = {name: np.asarray(paddle[f"@grad:{name}"]) for name in ours}
    eps = float(np.finfo(next(iter(theirs.values())).dtype).eps)
    theirs = {name: np.asarray(value, np.float64) for name, value in theirs.items()}
    floor = 100 * eps * max(float(np.abs(v).max()) for v in theirs.values() if v.size)
    return max((float(np.abs(np.asarray(ours[n], np.float64) - v).max()) / max(float(np.abs(v).max()), floor), n)
               for n, v in theirs.items() if v.size)


def _param_attrs(meta: dict) -> dict:
    """gradc's ParamAttr of each parameter Paddle gave a learning rate or regularizer of its own."""
    from gradc.optimizers import L1Decay, L2Decay, ParamAttr
    decays = {"L1Decay": L1Decay, "L2Decay": L2Decay}
    return {name: ParamAttr(learning_rate=attr["learning_rate"], regularizer=attr["regularizer"] and
                            decays[attr["regularizer"][0]](attr["regularizer"][1]))
            for name, attr in meta.get("param_attrs", {}).items()}


def gradc_step(check: Path) -> dict:
    import gradc
    from gradc.optimizers import minimize
    meta = json.loads((check / "meta.json").read_text())
    params, feed = dict(np.load(check / "params.npz")), dict(np.load(check / "feed.npz"))
    train = gradc.load(check / "train.pb")
    _replay_startup(check, meta)
    report = {"problems": gradc.verify(train)[:3],
              "paddle_program": _run_steps(train, params, feed, meta["loss"], check)}
    if os.environ.get("FLOAT64"):
        _float64_step(train, params, feed, meta, check)
    forward = gradc.load(check / "forward.pb")
    arguments = dict(meta["optimizer"])
    kind, lr = arguments.pop("type"), arguments.pop("lr")
    startup = minimize(forward, meta["loss"], kind, lr=lr, **arguments, param_attrs=_param_attrs(meta))
    _replay_startup(check, meta)
    report["gradc_compile"] = _run_steps(forward, params, feed, meta["loss"], check, startup)
    return report


def _replay_startup(check: Path, meta: dict) -> None:
    """Seed gradc's draws as paddle.seed seeded Paddle's and run Paddle's startup (its values are replaced by
    Paddle's): the steps' dropouts then draw the masks Paddle's drew."""
    import gradc
    from gradc.executor import randomness
    randomness.seed(meta.get("seed"))
    gradc.Executor().run(gradc.load(check / "startup.pb"), {}, [], gradc.Scope())


def _float64_step(train, params: dict, feed: dict, meta: dict, check: Path) -> None:
    """Paddle's training program widened to float64, and gradc's first step's gradients of it (after the startup's
    draws replayed, as the paddle64 step replays them: both runs' dropouts draw the same masks)."""
    import gradc
    from gradc.gradcheck import float64_copy
    wide, wide_params, wide_feed = float64_copy(train, params, feed)
    block, dropped, kept = wide.global_block, set(), []   # Paddle has no float64 auc kernel; no gradient reads
    for op in block.ops:                                  # a metric (nor what is computed from it)
        if op.type == "auc" or dropped & set(op.input_names()):
            dropped.update(op.output_names())
        else:
            kept.append(op)
    block.ops = [rewritten for op in kept for rewritten in _in_float32(block, op)]
    grads = [name.removeprefix("@grad:") for name in np.load(check / "step1.npz").files if name.startswith("@grad:")]
    scope, loss = gradc.Scope(), meta["loss"]
    for name, value in wide_params.items():
        scope[name] = value.copy()
    _replay_startup(check, meta)
    values = gradc.Executor().run(wide, wide_feed, [loss, *grads], scope)
    np.savez(check / "grads64.npz", **dict(zip([loss, *grads], values)))
    np.savez(check / "params64.npz", **wide_params)
    np.savez(check / "feed64.npz", **wide_feed)
    gradc.save(wide, check / "train64.pb")


def _in_float32(block, op, types=("log_loss", "log_loss_grad")) -> list:
    """``op`` as is, or for one Paddle has no float64 kernel of (log_loss and its grad) run in float32 between casts:
    its rounding, 1e-7 of the loss's gradient, is far below the differences the float64 run is to explain."""
    from gradc.ir import OpDesc
    from gradc.ir.types import VarType
    if op.type not in types:
        return [op]

    def cast(source: str, target: str, into: int) -> OpDesc:
        var = block.var(source)
        if block.find_var(target) is None:
            block.create_var(target, var.shape, into)
        return OpDesc("cast", {"X": [source]}, {"Out": [target]},
                      {"in_dtype": var.dtype, "out_dtype": into})

    before = [cast(n, n + "@f32", VarType.FP32) for n in op.input_names()]
    for slot, names in op.inputs.items():
        op.inputs[slot] = [n + "@f32" for n in names]
    outputs = op.output_names()
    for name in outputs:
        block.create_var(name + "@f32", block.var(name).shape, VarType.FP32)
    for slot, names in op.outputs.items():
        op.outputs[slot] = [n + "@f32" for n in names]
    return [*before, op, *(cast(n + "@f32", n, VarType.FP64) for n in outputs)]


def paddle64_step(check: Path) -> dict:
    """Paddle's first step of the widened program against gradc's: the loss and the furthest gradient."""
    import paddle
    paddle.enable_static()
    program = paddle.static.Program.parse_from_string((check / "train64.pb").read_bytes())
    scope = paddle.static.global_scope()
    paddle.seed(json.loads((check / "meta.json").read_text()).get("seed"))   # the draws after the startup's
    paddle.static.Executor(paddle.CPUPlace()).run(
        paddle.static.Program.parse_from_string((check / "startup.pb").read_bytes()))
    for name, value in np.load(check / "params64.npz").items():
        scope.var(name).get_tensor().set(value, paddle.CPUPlace())
    ours = dict(np.load(check / "grads64.npz"))
    loss, *grads = ours
    values = paddle.static.Executor(paddle.CPUPlace()).run(program, feed=dict(np.load(check / "feed64.npz")),
                                                            fetch_list=[loss, *grads])
    theirs = {f"@grad:{name}": value for name, value in zip(grads, values[1:])}
    worst = _worst_grad({g: ours[g] for g in grads}, theirs)
    largest = max(float(np.abs(value).max()) for value in values[1:] if value.size)
    return {"loss": _relative(ours[loss], values[0]), "worst_grad": worst,
            "its_grad_share": float(np.abs(theirs[f"@grad:{worst[1]}"]).max()) / largest}


def main() -> None:
    if sys.argv[1] == "paddle64":
        for check in sorted(p.parent for p in Path(sys.argv[2]).glob("*/train64.pb")):
            try:
                report = paddle64_step(check)
            except Exception as error:  # noqa: BLE001 - an op Paddle has no float64 kernel of, say
                report = {"error": f"{type(error).__name__}: {str(error).strip().splitlines()[-1][:300]}"}
            print(check.name, json.dumps(report), flush=True)
        return
    if sys.argv[1] == "paddle":
        source, out_dir, model_dir = Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve(), sys.argv[4]
        paddle_step(source, out_dir / Path(model_dir).name, model_dir)   # one model a process (each imports its net)
        return
    report_each(Path(sys.argv[2]), gradc_step)


if __name__ == "__main__":
    main()
