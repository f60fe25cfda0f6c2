"""Check gradc on PARL's learn steps as legacy static training programs: PARL's own algorithm classes
(parl/algorithms/paddle/: DQN, DDQN, PolicyGradient, A2C, PPO, DDPG, TD3, SAC, CQL, MADDPG, QMIX) with the models of
its examples, their `learn` run under paddle.static.program_guard (FLAGS_enable_pir_api=0). PARL's algorithms are
dygraph code; four of their dygraph calls get a static meaning here (tools/parl_shim.py): `loss.backward()` then
`optimizer.step()` is the optimizer's minimize of that loss (each optimizer keeps its own parameter list: actor and
critic in one program), `paddle.no_grad()` marks what it computes stop_gradient, `copy.deepcopy(model)` builds a
second model of the same class (the target network; its weights set to the model's, as PARL's agents do first), and
`sync_weights_to(target, decay)` appends the soft update (assign of decay * target + (1 - decay) * weight). Paddle's
startup, then STEPS steps on one random batch (numpy seed 0; paddle.seed(SEED), whose draws the gradc step replays:
SAC, TD3, CQL and MADDPG draw actions or noise). ALGO_sample entries are the agent's sampling step instead (its
`sample`: Normal.sample, Categorical.sample, a Gumbel-softmax), whose outputs are compared as the losses are. Two
steps, one per interpreter:

    FLAGS_enable_pir_api=0 PYTHONPATH=DEPS:tools /path/to/paddle/python tools/parl_static.py paddle \
        PARL_DIR OUT_DIR [ALGO ...]
    PYTHONPATH=src:tools .venv/bin/python tools/parl_static.py gradc OUT_DIR
    .venv/bin/python tools/parl_static.py fixture OUT_DIR/ALGO tests/data/paddle/parl/ALGO   # a committed copy

DEPS holds what PARL imports (termcolor, scipy, six, pyzmq, cloudpickle); parl.remote (xparl, gRPC) is not imported.
The Paddle step writes OUT_DIR/<algo>/ as tools/paddlerec_static.py's does (forward.pb: the learn step before any
minimize; train.pb, startup.pb, params.npz, feed.npz, step<N>.npz with every loss, the first step's gradients as the
update ops read them and the persistable vars after each step; own_step<N>.npz, the same of Paddle's program with
every backward before any update; meta.json: the losses, each one's optimizer and parameters). The gradc step loads,
verifies and runs train.pb against step<N>, and compiles forward.pb with gradc.minimize once per loss (its
parameters, its optimizer), appends the same soft updates, and runs that against own_step<N>. With FLOAT64 set
it also writes Paddle's program widened to float64 with gradc's first-step gradients, which `paddle64` compares.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
from paddlerec_static import _in_float32, _relative, _worst_grad
from suite_export import report_each

STEPS, SEED, BATCH = 3, 7, 4
OBS, ACT = 6, 2   # a small MuJoCo-like task (the examples' hidden sizes kept)
SMALLEST = ["dqn", "ddqn", "pg", "a2c", "ppo", "ppo_atari", "ddpg", "td3", "sac", "cql", "maddpg", "qmix", "impala",
            "ppo_sample", "ppo_atari_sample", "sac_sample", "maddpg_sample"]


def _build(source: Path, algo: str, deferred: bool):
    """The learn step in a program of its own: PARL's order (each minimize where `step` is called), or ``deferred``
    (after the whole forward, whose clone is gradc's input: every loss's backward, then every optimizer's updates and
    the soft updates; a backward after another optimizer's updates would read the weights they overwrote)."""
    import paddle
    from parl_shim import build_learn_step
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.utils.unique_name.guard(), paddle.static.program_guard(main, startup):
        learn = build_learn_step(source, algo, main, BATCH, OBS, ACT, deferred)
    return main, startup, learn


def paddle_step(source: Path, out: Path, algo: str) -> None:
    import paddle
    from paddle_legacy_shim import install
    from paddle_programs import without_callstacks
    install()   # 3.3.1's paddle.sum, matmul, exp, ... have no legacy static path of their own
    paddle.enable_static()
    paddle.seed(SEED)
    main, startup, learn = _build(source, algo, deferred=False)
    own, _, own_learn = _build(source, algo, deferred=True)
    out.mkdir(parents=True, exist_ok=True)
    for name, program in (("forward", own_learn.forward), ("train", main), ("startup", startup)):
        (out / f"{name}.pb").write_bytes(without_callstacks(program))
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(startup)
    scope = paddle.static.global_scope()
    for target, weight in learn.synced:   # PARL's agents start with sync_target(decay=0)
        scope.find_var(target).get_tensor().set(np.array(scope.find_var(weight).get_tensor()), paddle.CPUPlace())
    persistable = [v.name for v in main.list_vars() if v.persistable and v.name not in ("feed", "fetch")
                   and scope.find_var(v.name) is not None and scope.find_var(v.name).get_tensor()._is_initialized()]
    params = {n: np.array(scope.find_var(n).get_tensor()) for n in persistable}
    np.savez(out / "params.npz", **params)
    np.savez(out / "feed.npz", **learn.feed)
    for prefix, program, record in (("step", main, learn), ("own_step", own, own_learn)):
        if prefix == "own_step":   # its draws from where Paddle's startup leaves the seeded generator
            paddle.seed(SEED)
            exe.run(startup)
        for name, value in params.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        losses = [loss for loss, _, _ in record.minimized] + record.fetch
        grads = update_grads((op.input("Param"), op.input("Grad")) for op in program.global_block().ops
                             if {"Param", "Grad"} <= set(op.input_names))
        for step in range(1, STEPS + 1):
            values = exe.run(program, feed=learn.feed, fetch_list=losses + (list(grads.values()) if step == 1 else []))
            np.savez(out / f"{prefix}{step}.npz", **{f"@loss:{n}": np.asarray(v) for n, v in zip(losses, values)},
                     **{f"@grad:{p}": np.asarray(v) for p, v in zip(grads, values[len(losses):])},
                     **{n: np.array(scope.find_var(n).get_tensor()) for n in persistable})
    (out / "meta.json").write_text(json.dumps({"seed": SEED, "minimized": learn.minimized, "updates": learn.updates,
                                               "own_minimized": own_learn.minimized, "fetch": learn.fetch}))


def update_grads(slots) -> dict:
    """Each parameter's gradient as its update op reads it, from the (Param, Grad) slots of the program's update ops:
    a second backward renames a gradient whose name the first took, and clipping makes new ones."""
    return {params[0]: grads[0] for params, grads in slots if params and grads}


def _gradc_update_grads(program) -> dict:
    return update_grads((op.inputs.get("Param"), op.inputs.get("Grad")) for op in program.global_block.ops)


def _replay_startup(case: Path) -> None:
    """gradc's draws seeded as paddle.seed seeded Paddle's, then Paddle's startup run (its values replaced later)."""
    import gradc
    from gradc.executor import randomness
    randomness.seed(SEED)
    gradc.Executor().run(gradc.load(case / "startup.pb"), {}, [], gradc.Scope())


def _run_steps(program, case: Path, minimized: list, prefix: str, startups=(), fetch=()) -> dict:
    import gradc
    scope, executor = gradc.Scope(), gradc.Executor()
    for name, value in np.load(case / "params.npz").items():
        scope[name] = value.copy()
    for startup in startups:
        executor.run(startup, {}, [], scope)
    feed = dict(np.load(case / "feed.npz"))
    losses = [loss for loss, _, _ in minimized] + list(fetch)   # a sampling step's outputs compared as its losses
    report = {}
    for step in range(1, STEPS + 1):
        paddle = np.load(case / f"{prefix}{step}.npz")
        grads = _gradc_update_grads(program) if any(n.startswith("@grad:") for n in paddle.files) else {}
        values = executor.run(program, feed, losses + list(grads.values()), scope)
        row = {"loss": max(_relative(v, paddle[f"@loss:{n}"]) for n, v in zip(losses, values)),
               "worst": max(((_relative(scope[n], paddle[n]), n) for n in paddle.files
                             if not n.startswith("@") and n in scope), default=(0.0, ""))}
        if grads:
            row["worst_grad"] = _worst_grad(dict(zip(grads, values[len(losses):])), paddle)
        report[f"step{step}"] = row
    return report


def gradc_compile(case: Path, meta: dict):
    """forward.pb minimized by gradc once per loss (its optimizer, its parameters), then the soft updates."""
    from parl_shim import append_soft_updates, gradc_clip

    import gradc
    from gradc.optimizers import make_optimizer, minimize
    program, startups = gradc.load(case / "forward.pb"), []
    for loss, optimizer, params in meta["own_minimized"]:
        arguments = dict(optimizer)
        kind = arguments.pop("type")
        clip = arguments.pop("clip", None)
        made = make_optimizer(kind, **arguments, grad_clip=gradc_clip(clip))
        startups.append(minimize(program, loss, made, parameter_list=params))
    append_soft_updates(program, meta["updates"])
    return program, startups


def gradc_step(case: Path) -> dict:
    import gradc
    meta = json.loads((case / "meta.json").read_text())
    train = gradc.load(case / "train.pb")
    _replay_startup(case)
    report = {"problems": gradc.verify(train)[:3],
              "paddle_program": _run_steps(train, case, meta["minimized"], "step", (), meta["fetch"])}
    if os.environ.get("FLOAT64") and meta["minimized"]:   # a sampling step has no gradients
        _float64_step(train, case, meta)
    program, startups = gradc_compile(case, meta)
    _replay_startup(case)
    report["gradc_compile"] = _run_steps(program, case, meta["own_minimized"], "own_step", startups, meta["fetch"])
    return report


def _float64_step(train, case: Path, meta: dict) -> None:
    import gradc
    from gradc.gradcheck import float64_copy
    wide, params, feed = float64_copy(train, dict(np.load(case / "params.npz")), dict(np.load(case / "feed.npz")))
    losses = [loss for loss, _, _ in meta["minimized"]]
    block = wide.global_block   # Paddle has no float64 clip_by_norm kernel: it runs in float32 (after the gradients)
    clipped = {op.outputs["Out"][0]: op.inputs["X"][0] for op in block.ops if op.type == "clip_by_norm"}
    block.ops = [rewritten for op in block.ops for rewritten in _in_float32(block, op, ("clip_by_norm",))]
    grads = {param: clipped.get(grad, grad) for param, grad in _gradc_update_grads(wide).items()}
    scope = gradc.Scope()
    for name, value in params.items():
        scope[name] = value.copy()
    _replay_startup(case)
    values = gradc.Executor().run(wide, feed, losses + list(grads.values()), scope)
    np.savez(case / "grads64.npz", **dict(zip(losses + list(grads.values()), values)))
    np.savez(case / "params64.npz", **params)
    np.savez(case / "feed64.npz", **feed)
    gradc.save(wide, case / "train64.pb")


def paddle64_step(case: Path) -> dict:
    """Paddle's first step of the widened program (after its startup, seeded: the same draws) against gradc's."""
    if not (case / "train64.pb").exists():
        return {"skipped": "no gradients (a sampling step)"}
    import paddle
    paddle.enable_static()
    paddle.seed(SEED)
    meta = json.loads((case / "meta.json").read_text())
    exe = paddle.static.Executor(paddle.CPUPlace())
    exe.run(paddle.static.Program.parse_from_string((case / "startup.pb").read_bytes()))
    program = paddle.static.Program.parse_from_string((case / "train64.pb").read_bytes())
    scope = paddle.static.global_scope()
    for name, value in np.load(case / "params64.npz").items():
        scope.var(name).get_tensor().set(value, paddle.CPUPlace())
    ours = dict(np.load(case / "grads64.npz"))
    losses = [loss for loss, _, _ in meta["minimized"]]
    grads = [n for n in ours if n not in losses]
    values = exe.run(program, feed=dict(np.load(case / "feed64.npz")), fetch_list=losses + grads)
    theirs = {f"@grad:{n}": v for n, v in zip(grads, values[len(losses):])}
    return {"loss": max(_relative(ours[n], v) for n, v in zip(losses, values)),
            "worst_grad": _worst_grad({g: ours[g] for g in grads}, theirs)}


def write_fixture(case: Path, out: Path) -> None:
    """A committed copy of one algorithm's case, smaller: its programs, feed and parameters, the first step's file
    whole and the later steps' losses; own_step files only where they differ from Paddle's order (npz compressed)."""
    import shutil
    out.mkdir(parents=True, exist_ok=True)
    for name in ("train.pb", "forward.pb", "startup.pb", "meta.json"):
        shutil.copy(case / name, out / name)
    for name in ("feed", "params"):
        np.savez_compressed(out / f"{name}.npz", **np.load(case / f"{name}.npz"))
    same = all(np.array_equal(a[k], b[k]) for step in range(1, STEPS + 1)
               for a, b in [(np.load(case / f"step{step}.npz"), np.load(case / f"own_step{step}.npz"))]
               for k in a.files)
    for prefix in ("step",) if same else ("step", "own_step"):
        for step in range(1, STEPS + 1):
            values = np.load(case / f"{prefix}{step}.npz")
            kept = values.files if step == 1 else [k for k in values.files if k.startswith("@loss:")]
            np.savez_compressed(out / f"{prefix}{step}.npz", **{k: values[k] for k in kept})


def main() -> None:
    if sys.argv[1] == "fixture":
        write_fixture(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    if sys.argv[1] == "paddle":
        source, out_dir = Path(sys.argv[2]).resolve(), Path(sys.argv[3]).resolve()
        if len(sys.argv) == 5:
            paddle_step(source, out_dir / sys.argv[4], sys.argv[4])
            return
        import subprocess
        for algo in sys.argv[4:] or SMALLEST:   # one process an algorithm (each imports its example's model)
            result = subprocess.run([sys.executable, __file__, "paddle", str(source), str(out_dir), algo],
                                    capture_output=True, text=True)
            print(algo, "OK" if result.returncode == 0 else
                  "FAIL " + (result.stderr.strip().splitlines() or [""])[-1][:300], flush=True)
        return
    if sys.argv[1] == "paddle64":
        report_each(Path(sys.argv[2]), paddle64_step)
        return
    report_each(Path(sys.argv[2]), gradc_step)


if __name__ == "__main__":
    main()
