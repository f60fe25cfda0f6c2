"""Check gradc against Paddle on model files users ship (.pdmodel, __model__, and Paddle 3's PIR .json), with their
parameters where a .pdiparams file sits beside them, else random ones: the files from public repositories usually
come without theirs. A detector's im_shape input is its image's height and width, its scale_factor 1. Two steps,
one per interpreter:

    .venv/bin/python tools/real_models.py gradc DIR          # load, verify, run, fine-tune every model under DIR
    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/real_models.py paddle DIR   # legacy programs
    /work/paddle-venv/bin/python tools/real_models.py paddle DIR                          # PIR programs

The gradc step writes <model>.check/ beside each model: its parameters (random ones with batch norm variances
positive; with CALIBRATE set, batch norms' running statistics become those of the input) and inputs (-1 dims as 1
for the batch, DIM (default 64) for the others; floats standard normal, or uniform in [0, 1) with UNIFORM set: a
physics model's coordinates; integers INT_FEED (default 1), or random in [1, INT_BOUND) with INT_BOUND set: token or
feature ids; FEEDS, a JSON object, gives an input by name its "shape", its "fill" value or its integers' "bound" (random
in [1, bound): a graph's edge ends below its node count) or its "value" itself), gradc's outputs, and
a training program: loss = mean(out * w) of the first float output with w fed, differentiated for every float
parameter (train.pb, or train.json for a PIR model), and gradc's gradients; with FLOAT64 set, also the training
program widened to float64 (train64) and its gradients. The Paddle step runs the model and gradc's training programs
with the same values and prints, per model, how far Paddle's outputs and gradients are from gradc's (relative to
their largest magnitude). With SEED=n set, gradc.seed(n) before each of gradc's runs and paddle.seed(n) before each of
Paddle's: a model that draws random numbers at inference (noise, dropout, sampling) draws the same in both.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path

import numpy as np
from real_models_inputs import calibrated, detector_feed, fed_vars, given_params, input_value, random_params, seeded


def models(folder: Path) -> list[Path]:
    """The model files under ``folder``: legacy programs, and PIR programs (a .json naming magic "pir")."""
    found = [p for p in folder.rglob("*") if p.is_file() and ".check" not in p.parent.name]
    return sorted(p for p in found if p.suffix == ".pdmodel" or p.name.endswith("__model__")
                  or p.suffix == ".json" and b'"pir"' in p.read_bytes()[:200])


NMS = ("multiclass_nms", "multiclass_nms2", "multiclass_nms3", "matrix_nms")


def _loss_input(block, fetched: str) -> str:
    """The var the loss weighs: the fetched output, the logits of a fetched softmax (a recognizer's peaked softmax
    passes back gradients of 1e-28, which would compare nothing), or the boxes the nearest NMS upstream of it selects
    from (its selection has no gradient; an R-CNN's output is its selection scaled and clipped)."""
    producer = next((op for op in reversed(block.ops) if fetched in op.output_names()), None)
    if producer is not None and producer.type == "softmax":
        return producer.input("X")[0]
    wanted = {fetched}
    for op in reversed(block.ops):   # producers come before their readers
        if wanted.isdisjoint(op.output_names()):
            continue
        if op.type in NMS:
            return op.input("BBoxes")[0]
        wanted.update(op.input_names())
    return fetched


def gradc_step(path: Path) -> dict:
    import gradc
    out_dir = path.parent / (path.name + ".check")
    out_dir.mkdir(exist_ok=True)
    program = gradc.load(path)
    block = program.global_block
    report = {"ops": program.num_ops(), "problems": gradc.verify(program)[:3]}
    rng = np.random.default_rng(0)
    params = given_params(path, program) or random_params(program, rng)
    fetches = [op.input("X")[0] for op in block.ops if op.type == "fetch"]
    feed, given = {}, json.loads(os.environ.get("FEEDS", "{}"))   # per input: {"shape": [...], "fill": n}
    for var in fed_vars(block):
        feed[var.name] = input_value(var, rng, given.get(var.name, {}))
    feed = detector_feed(feed)
    if os.environ.get("CALIBRATE"):
        params = calibrated(program, params, feed)
    np.savez(out_dir / "params.npz", **params)
    np.savez(out_dir / "feed.npz", **feed)
    scope = gradc.Scope()
    for name, value in params.items():
        scope[name] = value
    targets = {fetched: _loss_input(block, fetched) for fetched in fetches}
    extra = [target for target in dict.fromkeys(targets.values()) if target not in fetches]
    outs = seeded(gradc).Executor().run(program, feed, fetches + extra, scope)
    outs, extra_values = outs[:len(fetches)], dict(zip(extra, outs[len(fetches):]))
    np.savez(out_dir / "out.npz", **{f"out{i}": np.asarray(o) for i, o in enumerate(outs)})
    first = next((i for i, o in enumerate(outs) if np.asarray(o).dtype.kind == "f"), None)
    if first is None:
        return report
    target = targets[fetches[first]]
    shape = list(np.shape(extra_values.get(target, outs[first])))
    declared = block.var(target).shape or shape   # a selection's declared rows can be its most, not its count
    dims = [d if len(declared) == len(shape) and d == e else -1 for d, e in zip(shape, declared)]
    dtype = block.var(target).dtype   # float32 but for a model whose output is float64 (an expectation value)
    for name, var_shape in (("loss_w", dims), ("weighted", dims), ("loss", [])):
        block.create_var(name, var_shape, dtype)
    block.vars["loss_w"].need_check_feed = True   # fed (a PIR program declares it an input)
    block.append_op("elementwise_mul", {"X": [target], "Y": ["loss_w"]}, {"Out": ["weighted"]}, {"axis": -1})
    block.append_op("reduce_mean", {"X": ["weighted"]}, {"Out": ["loss"]},
                    {"reduce_all": True, "dim": [], "keep_dim": False, "in_dtype": -1, "out_dtype": -1})
    weight = rng.standard_normal(shape).astype(np.float64 if dtype == gradc.VarType.FP64 else np.float32)
    pairs = gradc.append_backward(program, "loss", parameter_list=[n for n, v in params.items() if v.dtype.kind == "f"])
    names = ["loss", *(grad for _, grad in pairs)]
    also = [target] if target in extra else []   # the loss input is compared too (an NMS's boxes)
    values = seeded(gradc).Executor().run(program, {**feed, "loss_w": weight}, names + also, scope)
    np.savez(out_dir / "grads.npz", **dict(zip(names, values)))
    np.savez(out_dir / "loss_input.npz", **dict(zip(also, values[len(names):])))
    np.save(out_dir / "loss_w.npy", weight)
    _save_training(program, path, out_dir / "train", names + also)
    if os.environ.get("FLOAT64"):
        _float64_training(program, path, out_dir, params, {**feed, "loss_w": weight}, names, also)
    report["grads"] = len(pairs)
    return report


def _save_training(program, path: Path, stem: Path, names: list[str]) -> None:
    """The training program as the model was: PIR (stem.json, fetching ``names``) or binary (stem.pb)."""
    import gradc
    if path.suffix == ".json":
        from gradc.pir import save_pir
        save_pir(program, stem.with_suffix(".json"), fetch=names)
    else:
        gradc.save(program, stem.with_suffix(".pb"))


def _float64_training(program, path: Path, out_dir: Path, params: dict, feed: dict, names: list[str],
                      also: list[str]) -> None:
    """The training program widened to float64 (train64), its values and gradc's float64 gradients: where float32
    rounding decides a comparison (a saturated or cancelling model), Paddle's float64 run of the same program does
    not."""
    import gradc
    from gradc.gradcheck import float64_copy
    wide, wide_params, wide_feed = float64_copy(program, params, feed)
    scope = gradc.Scope()
    for name, value in wide_params.items():
        scope[name] = value
    values = seeded(gradc).Executor().run(wide, wide_feed, names + also, scope)
    np.savez(out_dir / "grads64.npz", **dict(zip(names, values)))
    np.savez(out_dir / "loss_input64.npz", **dict(zip(also, values[len(names):])))
    np.savez(out_dir / "params64.npz", **wide_params)
    np.savez(out_dir / "feed64.npz", **wide_feed)
    _save_training(wide, path, out_dir / "train64", names + also)


def _relative(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return float("inf")
    if a.dtype.kind != "f":
        return float((a != b).sum())
    return float(np.nanmax(np.abs(a - b)) / (np.nanmax(np.abs(a)) + 1e-30)) if a.size else 0.0


def _worst(values: dict, grads: dict) -> tuple[float, str]:
    """The gradient furthest from gradc's, relative to its largest magnitude, or for one that is zero but for rounding
    (the bias of an attention's keys, which softmax cancels) to 100 ulps of the model's largest gradient."""
    scale = max((float(np.abs(grad).max()) for grad in grads.values() if grad.size), default=0.0)
    worst = []
    for name, grad in grads.items():
        value = np.asarray(values[name])
        if value.shape != grad.shape or not grad.size:
            worst.append((float("inf") if value.shape != grad.shape else 0.0, name))
            continue
        floor = float(100 * np.finfo(grad.dtype).eps * scale) if grad.dtype.kind == "f" else 0.0
        worst.append((float(np.nanmax(np.abs(value - grad))) / (max(float(np.abs(grad).max()), floor) + 1e-30), name))
    return max(worst)


def paddle_step(path: Path) -> dict:
    import paddle
    paddle.enable_static()
    check = path.parent / (path.name + ".check")
    if not (check / "out.npz").exists():
        return {"skipped": "the gradc step did not run it"}
    params, feed = dict(np.load(check / "params.npz")), dict(np.load(check / "feed.npz"))
    scope = paddle.static.global_scope()
    for name, value in params.items():
        scope.var(name).get_tensor().set(value, paddle.CPUPlace())
    executor = paddle.static.Executor(paddle.CPUPlace())
    program, fetches, _ = _paddle_program(path)
    for op in program.global_block().ops if path.suffix == ".json" else ():   # a parameter no file holds (an
        if op.name() == "builtin.parameter":                                 # LSTM's dropout state): declared
            scope.var(op.attrs()["parameter_name"]).get_tensor()
    seeded(paddle)
    outs = executor.run(program, feed=feed, fetch_list=fetches, return_numpy=False)
    ours = np.load(check / "out.npz")
    report = {"outputs": [_relative(np.array(o), ours[f"out{i}"]) for i, o in enumerate(outs)]}
    train = check / ("train.json" if path.suffix == ".json" else "train.pb")
    if train.exists():
        grads, also = dict(np.load(check / "grads.npz")), _loss_inputs(check / "loss_input.npz")
        program, fetches, names = _paddle_program(train, list(grads) + list(also))
        seeded(paddle)
        values = executor.run(program, feed={**feed, "loss_w": np.load(check / "loss_w.npy")}, fetch_list=fetches)
        values = dict(zip(names, values))
        report["worst_grad"] = _worst(values, grads)
        if also:
            report["loss_input"] = max(_relative(values[name], value) for name, value in also.items())
    train = train.with_name(train.name.replace("train", "train64"))
    if train.exists():   # written with FLOAT64 set; a scope of its own (the float32 run's vars are float32)
        try:
            with paddle.static.scope_guard(paddle.static.Scope()):
                for name, value in np.load(check / "params64.npz").items():
                    paddle.static.global_scope().var(name).get_tensor().set(value, paddle.CPUPlace())
                grads, also = dict(np.load(check / "grads64.npz")), _loss_inputs(check / "loss_input64.npz")
                program, fetches, names = _paddle_program(train, list(grads) + list(also))
                seeded(paddle)
                values = dict(zip(names, executor.run(program, feed=dict(np.load(check / "feed64.npz")),
                                                      fetch_list=fetches)))
            report["worst_grad_float64"] = _worst(values, grads)
            if also:
                report["loss_input_float64"] = max(_relative(values[name], value) for name, value in also.items())
        except Exception as error:  # noqa: BLE001 - the float32 results stand; say why this one is missing
            report["worst_grad_float64"] = f"{type(error).__name__}: {_last_error_line(error)}"
    return report


def _loss_inputs(path: Path) -> dict:
    """The loss input gradc's training run compared (an NMS's boxes), if the step wrote one."""
    return dict(np.load(path)) if path.exists() else {}


def _last_error_line(error: Exception) -> str:
    lines = [line.strip() for line in str(error).splitlines() if "Error" in line]
    return (lines[-1] if lines else str(error).splitlines()[0] if str(error) else "")[:200]


def _paddle_program(path: Path, fetch_names: list[str] | None = None) -> tuple:
    """Paddle's program of a model file, what to fetch, and the names of what it fetches: a legacy program's fetch
    ops' vars, or (a training program, its feed and fetch ops removed: fed directly, as the loss weight is) the vars
    ``fetch_names``; every fetch op of a PIR program (Paddle returns those, by column), named by their names."""
    import paddle
    if path.suffix == ".json":
        program = paddle.static.Program()
        paddle.base.core.deserialize_pir_program(str(path), program)
        fetches = [op for op in program.global_block().ops if op.name() == "pd_op.fetch"]
        return program, [op.operand_source(0) for op in fetches], [op.attrs()["name"] for op in fetches]
    program = paddle.static.Program.parse_from_string(path.read_bytes())
    block = program.global_block()
    if fetch_names is None:
        fetch_names = [op.input("X")[0] for op in block.ops if op.type == "fetch"]
    else:
        for i in reversed(range(len(block.ops))):
            if block.ops[i].type in ("feed", "fetch"):
                block._remove_op(i)
    return program, fetch_names, fetch_names


def main() -> None:
    step, folder = sys.argv[1], Path(sys.argv[2])
    for path in models(folder):
        try:
            report = (gradc_step if step == "gradc" else paddle_step)(path)
        except Exception as error:  # noqa: BLE001 - each model's failure is its result
            report = {"error": f"{type(error).__name__}: {' | '.join(str(error).split(chr(10))[:1])[:200]}"}
        print(path.relative_to(folder), json.dumps(report), flush=True)
        gc.collect()   # a model's program and arrays sit in reference cycles, which a collection by count frees late:
        # the gradc step over five of PaddleClas's models peaked at 7.8 GB without, 4.1 GB with (the largest alone, 3.9)


if __name__ == "__main__":
    main()
