"""Optimizer fixtures from a real PaddlePaddle: Paddle's own training programs (opt.minimize in legacy static
mode) for every optimizer, gradient clipping, regularization and learning-rate schedule of
tools/paddle_optimizer_cases.py, trained 5 steps (RAdam 8), with every value a test needs to replay the updates.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_optimizer_fixtures.py tests/data/paddle/optim [case ...]

models/<model>.pb   the forward program, the same for every case of the model (meta.json "forward")
Each case directory holds:
  train.pb (after minimize), startup.pb   the programs, without the op_callstack debug attribute
  init.npz        every persistable after the startup program (params, accumulators, beta pows, LR, BN stats)
  feeds.npz       one batch per step, one array per feed var with the step as leading axis (as in the files below:
                  an npz entry costs ~250 bytes of headers, so per-step entries would triple the size)
  grads.npz       <param>@GRAD [step, ...]: the gradients backward produced, before clipping and regularization
  intermediates.npz  <var> [step, ...]: every non-persistable var an optimize op writes, as the train run left
                  it (clipped grads, norms, regularization terms; clipping and regularization overwrite @GRAD)
  states.npz      <var> [k - 1, ...]: every persistable after k = 1..steps-1 steps; final.npz: after the last
  losses.npy, lrs.npy   the loss of each step and the learning rate the step used
  meta.json       model, optimizer and hyper-parameters, var names, the op types of train.pb
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import paddle
from paddle_optimizer_cases import MODELS, Case, Schedule, TensorArg, cases, describe, make_schedule

SEED = 2024
OPTIMIZE_ROLES = 0x0002 | 0x0010  # Optimize and LRSched
DEBUG_ATTRS = ("op_callstack",)


def serialize(program) -> bytes:
    """The program without Python tracebacks (two thirds of the bytes and no meaning to a program)."""
    for block in program.blocks:
        for op in block.ops:
            for name in DEBUG_ATTRS:
                if op.desc.has_attr(name):
                    op.desc.remove_attr(name)
    return program.desc.serialize_to_string()


def build_optimizer(case: Case):
    kwargs = {}
    for key, value in case.kwargs.items():
        if isinstance(value, TensorArg):
            value = paddle.static.create_global_var([1], value.value, "float32", persistable=True,
                                                    name=f"{key}_tensor")
        elif isinstance(value, Schedule):
            value = make_schedule(value)
        kwargs[key] = value
    return case.optimizer(**kwargs)


def optimize_ops(program) -> list:
    return [op for op in program.global_block().ops if op.attr("op_role") & OPTIMIZE_ROLES]


def backward_only(program):
    """A copy of the training program without its optimize ops: it yields the gradients before any
    clipping or regularization rewrites them."""
    probe = program.clone()
    block = probe.global_block()
    for index in reversed(range(len(block.ops))):
        if block.ops[index].attr("op_role") & OPTIMIZE_ROLES:
            block._remove_op(index)
    return probe


class Persistables:
    """Reads and restores the persistables of one program in one scope, shaped as their VarDescs."""

    def __init__(self, program, scope):
        self.scope = scope
        self.shapes = {v.name: tuple(v.shape) for v in program.list_vars()
                       if v.persistable and v.name not in ("feed", "fetch")}

    def read(self) -> dict[str, np.ndarray]:
        return {name: np.array(self.scope.find_var(name).get_tensor()).reshape(shape)
                for name, shape in self.shapes.items() if self.scope.find_var(name) is not None}

    def restore(self, values: dict[str, np.ndarray]) -> None:
        for name, value in values.items():
            self.scope.find_var(name).get_tensor().set(value, paddle.CPUPlace())


def run_steps(main, startup, loss: str, feeds: list[dict], lr_name: str, after=None) -> tuple:
    """Paddle's startup, then a training step per feed: every persistable before the first step and after each,
    each step's loss and learning rate; ``after(executor, persistables)`` runs last in the same scope.
    -> (init, losses, states, lrs, what ``after`` returned)"""
    scope, executor = paddle.static.Scope(), paddle.static.Executor(paddle.CPUPlace())
    losses, states, lrs = [], [], []
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        persistables = Persistables(main, scope)
        init = persistables.read()
        for feed in feeds:
            lrs.append(float(np.asarray(persistables.read()[lr_name]).reshape(-1)[0]))
            losses.append(float(executor.run(main, feed=feed, fetch_list=[loss])[0]))
            states.append(persistables.read())
        extra = after(executor, persistables) if after else {}
    return init, losses, states, lrs, extra


def stacked(steps: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One array per name with the step as leading axis: an npz entry costs ~250 bytes of headers."""
    return {name: np.stack([step[name] for step in steps]) for name in steps[0]} if steps else {}


def train(name: str, case: Case) -> dict:
    """Build the case's programs and train them case.steps steps; everything the fixture files hold."""
    paddle.seed(SEED)
    rng = np.random.default_rng(SEED)
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        attrs = {key: paddle.ParamAttr(**kwargs) for key, kwargs in case.param_attrs.items()}
        loss, make_batch = MODELS[case.model](attrs)
        forward = serialize(main)
        optimizer = build_optimizer(case)
        optimizer.minimize(loss)
    scheduler = getattr(main, "lr_scheduler", None)
    lr_name = optimizer._learning_rate_map[main].name
    block = main.global_block()
    params = sorted(p.name for p in main.all_parameters() if p.trainable and block.has_var(p.name + "@GRAD"))
    grads = [p + "@GRAD" for p in params]
    written = [n for op in optimize_ops(main) for slot in op.output_names for n in op.output(slot)]
    intermediates = sorted({n for n in written if not block.var(n).persistable})
    untouched = [g for g in grads if g not in intermediates]
    feeds = [make_batch(rng) for _ in range(case.steps)]

    scope = paddle.static.Scope()
    executor = paddle.static.Executor(paddle.CPUPlace())
    probe = backward_only(main)
    steps = {"grads": [], "intermediates": [], "states": [], "losses": [], "lrs": []}
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        persistables = Persistables(main, scope)
        init = persistables.read()
        for feed in feeds:
            before = persistables.read()
            raw = dict(zip(grads, executor.run(probe, feed=feed, fetch_list=grads)))
            persistables.restore(before)  # the probe's forward moved batch_norm's running stats
            fetched = executor.run(main, feed=feed, fetch_list=[loss.name, *intermediates, *untouched])
            values = dict(zip([*intermediates, *untouched], fetched[1:]))
            assert all(np.array_equal(values[g], raw[g]) for g in untouched), f"{name}: probe grads differ"
            steps["losses"].append(float(fetched[0]))
            steps["lrs"].append(scheduler() if scheduler else float(before[lr_name]))
            steps["grads"].append(raw)
            steps["intermediates"].append({v: values[v] for v in intermediates})
            steps["states"].append(persistables.read())
            if scheduler:
                scheduler.step()
    meta = {
        "case": name, "model": case.model, "seed": SEED, "paddle_version": paddle.__version__, "steps": case.steps,
        "description": MODELS[case.model].__doc__.split("\n")[0],
        "optimizer": case.optimizer.__name__, "hyperparameters": describe(case.kwargs),
        "param_attrs": describe(case.param_attrs),
        "loss": loss.name, "feeds": sorted(feeds[0]), "params": params, "learning_rate_var": lr_name,
        "frozen_params": sorted(p.name for p in main.all_parameters() if not p.trainable),
        "intermediates": intermediates,
        "ops_train": [op.type for op in block.ops],
        "optimize_op_types": sorted({op.type for op in optimize_ops(main)}),
    }
    return {"forward.pb": forward, "train.pb": serialize(main), "startup.pb": serialize(startup),
            "init": init, "feeds": stacked(feeds), "grads": stacked(steps["grads"]),
            "intermediates": stacked(steps["intermediates"]), "states": stacked(steps["states"][:-1]),
            "final": steps["states"][-1], "losses": steps["losses"], "lrs": steps["lrs"], "meta": meta}


def write_forward(target: Path, model: str, forward: bytes) -> str:
    """Every case of a model has the same forward program (the optimizer, clip and regularizers are not in
    it, ParamAttr's regularizer and learning rate live in Python only): one file per model, named in meta."""
    path = target / "models" / f"{model}.pb"
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() and path.read_bytes() != forward:
        raise AssertionError(f"{model}: the forward program of this case differs from {path}")
    path.write_bytes(forward)
    return f"models/{model}.pb"


def write(out: Path, files: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name in ("train.pb", "startup.pb"):
        (out / name).write_bytes(files[name])
    for name in ("init", "feeds", "grads", "intermediates", "states", "final"):
        if files[name]:
            np.savez_compressed(out / f"{name}.npz", **files[name])
    np.save(out / "losses.npy", np.array(files["losses"], dtype=np.float32))
    np.save(out / "lrs.npy", np.array(files["lrs"], dtype=np.float32))
    (out / "meta.json").write_text(json.dumps(files["meta"], indent=1) + "\n")


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/paddle/optim")
    table = cases()
    for case_name in sys.argv[2:] or table:
        files = train(case_name, table[case_name])
        files["meta"]["forward"] = write_forward(target, files["meta"]["model"], files["forward.pb"])
        write(target / case_name, files)
        ops = files["meta"]["optimize_op_types"]
        print(f"{case_name}: losses {np.round(files['losses'], 5).tolist()}, optimize ops {ops}")
