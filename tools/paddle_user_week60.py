"""The continual-learning researcher's programs of docs/tools.md's 'A continual-learning researcher's week', written
with Paddle 3.3.1's layers in legacy static mode (FLAGS_enable_pir_api=0), on split-MNIST-like synthetic data: 16
features, two tasks of two classes each (task 1 classes 0/1, task 2 classes 2/3, labels 0/1 within a task), each class
a Gaussian blob whose mean shares a direction across the tasks (so task 2's training moves task 1's features).

One multi-head net: a shared trunk (Linear 16 -> 24, relu) and a head a task (Linear 24 -> 2), parameters named
trunk.w/trunk.b, head1.w/head1.b, head2.w/head2.b (ParamAttr names, the same in every program):

- task1: F.cross_entropy of head 1 on task 1 (head 2 in the program, off the loss); Adam(0.01), from startup.
- fisher.npz: EWC's diagonal Fisher of task 1 at its trained weights: the mean over task 1's training examples of each
  example's squared gradient of -log p(y | x) (batch 1, paddle.static.gradients), for the trunk and head 1.
- ewc: head 2's cross entropy + LAMBDA/2 * sum F * (w - w*)^2 over trunk and head 1, F and w* persistable vars
  (fisher.NAME, anchor.NAME, created by create_global_var, loaded with the weights); Adam(0.01).
- l2sp: head 2's cross entropy + ALPHA/2 * sum (w - w0)^2 over the trunk, the anchors w0 fed (data
  anchor_trunk_w / anchor_trunk_b, the same every step); Adam(0.01).
- frozen: the trunk ParamAttr(trainable=False), only head 2 trains; SGD(0.1).
- replay: head 2's cross entropy on the task-2 batch (x, label) + head 1's on a replay batch of task 1 (replay_x,
  replay_label), a buffer of REPLAY task-1 examples cycled, BATCH of them a step; Adam(0.01).

Every task-2 model starts from task1's trained weights (task1/trained.npz, with head 2 from the startup), runs STEPS
steps of BATCH task-2 examples; each folder: forward.pb, train.pb (Paddle's minimize), startup.pb, init.npz (what it
starts from), trained.npz; meta.json: losses, names, and the test accuracy of each task after each stage
(accuracy[model] = [task 1, task 2], of the argmax of each task's head); data.npz: task1_train/test, task2_train/test
(x and label each), replay.npz the buffer. PIR half: ewc and replay built and minimized in PIR static mode
(NAME_pir_train.json / NAME_pir_startup.json), their losses from NAME/init.npz on the same batches in pir_losses.json.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week60.py tests/data/paddle/user_week60
"""

import json
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_programs import legacy_persistables, minimized, pir_half, pir_minimized, script_main, write_programs_gz

FEATURES, HIDDEN, TRAIN, TEST, STEPS, BATCH, REPLAY = 16, 24, 64, 48, 4, 16, 24
LAMBDA, ALPHA = 50.0, 0.5
RNG = np.random.default_rng(60)
SHARED = ("trunk.w", "trunk.b")
PROTECTED = (*SHARED, "head1.w", "head1.b")


WEIGHTS = {}   # name -> the parameter of the program being built (a legacy Variable or a PIR Value)


def linear(inputs: int, name: str, outputs: int, trainable: bool = True):
    attr = {"trainable": trainable}
    layer = paddle.nn.Linear(inputs, outputs, weight_attr=paddle.ParamAttr(name=f"{name}.w", **attr),
                             bias_attr=paddle.ParamAttr(name=f"{name}.b", **attr))
    WEIGHTS.update({f"{name}.w": layer.weight, f"{name}.b": layer.bias})
    return layer


def net(trunk_trainable: bool = True):
    """The multi-head net's layers, built once: a function of x giving both heads' logits (a replay batch shares
    them, in PIR mode too, where a second Linear of the same ParamAttr name would be a second parameter)."""
    trunk = linear(FEATURES, "trunk", HIDDEN, trunk_trainable)
    first, second = linear(HIDDEN, "head1", 2), linear(HIDDEN, "head2", 2)

    def heads(x):
        features = F.relu(trunk(x))
        return first(features), second(features)
    return heads


def inputs(prefix: str = ""):
    return (paddle.static.data(f"{prefix}x", [-1, FEATURES], "float32"),
            paddle.static.data(f"{prefix}label", [-1, 1], "int64"))


def task1():
    x, label = inputs()
    first, second = net()(x)
    return F.cross_entropy(first, label), first, second


def constant(shape, name: str):
    """A persistable var the program reads and never trains: create_global_var in legacy mode; in PIR mode (where
    Paddle 3.3.1's create_global_var fails: 'full: argument (position 3) must be one of paddle::DataType') a
    parameter with trainable=False."""
    if paddle.framework.in_pir_mode():
        return paddle.static.create_parameter(shape, "float32", attr=paddle.ParamAttr(name=name, trainable=False))
    return paddle.static.create_global_var(shape, 0.0, "float32", persistable=True, name=name)


def ewc():
    x, label = inputs()
    first, second = net()(x)
    penalty = 0.0
    for name in PROTECTED:
        weight = WEIGHTS[name]
        fisher, anchor = (constant(weight.shape, f"{kind}.{name}") for kind in ("fisher", "anchor"))
        penalty = penalty + paddle.sum(fisher * paddle.square(weight - anchor))
    return F.cross_entropy(second, label) + LAMBDA / 2 * penalty, first, second


def l2sp():
    x, label = inputs()
    first, second = net()(x)
    penalty = 0.0
    for name in SHARED:
        anchor = paddle.static.data(f"anchor_{name.replace('.', '_')}", WEIGHTS[name].shape, "float32")
        penalty = penalty + paddle.sum(paddle.square(WEIGHTS[name] - anchor))
    return F.cross_entropy(second, label) + ALPHA / 2 * penalty, first, second


def frozen():
    x, label = inputs()
    first, second = net(trunk_trainable=False)(x)
    return F.cross_entropy(second, label), first, second


def replay():
    x, label = inputs()
    replay_x, replay_label = inputs("replay_")
    heads = net()
    first, second = heads(x)
    replayed, _ = heads(replay_x)
    return F.cross_entropy(second, label) + F.cross_entropy(replayed, replay_label), first, second


MODELS = {"task1": task1, "ewc": ewc, "l2sp": l2sp, "frozen": frozen, "replay": replay}
OPTIMIZERS = {"frozen": lambda: paddle.optimizer.SGD(0.1)}


def task_data() -> dict:
    """Each task's train and test examples: a class a blob, the blobs of both tasks sharing a direction."""
    shared = RNG.normal(size=FEATURES)
    arrays = {}
    for task in (1, 2):
        sign = 1 if task == 1 else -1   # task 2's class 0 where task 1's class 1 is
        means = [sign * shared + RNG.normal(size=FEATURES), -sign * shared + RNG.normal(size=FEATURES)]
        for split, count in (("train", TRAIN), ("test", TEST)):
            label = RNG.integers(0, 2, size=count)
            x = np.stack([means[k] for k in label]) + 3.0 * RNG.normal(size=(count, FEATURES))
            arrays[f"task{task}_{split}_x"] = x.astype(np.float32)
            arrays[f"task{task}_{split}_label"] = label.reshape(-1, 1).astype(np.int64)
    return arrays


def split(arrays: dict, key: str) -> dict:
    return {"x": arrays[f"{key}_x"], "label": arrays[f"{key}_label"]}


def fisher(exe, forward, loss, weights: dict, examples: dict) -> dict:
    """EWC's diagonal Fisher at ``weights``: the mean of each example's squared gradient of its -log p(y | x)."""
    program = forward.clone()
    with paddle.static.program_guard(program):
        block = program.global_block()
        grads = paddle.static.gradients(block.var(loss.name), [block.var(name) for name in PROTECTED])
    scope = paddle.static.Scope()
    total = {name: 0.0 for name in PROTECTED}
    with paddle.static.scope_guard(scope):
        for name, value in weights.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        for row in range(len(examples["x"])):
            feed = {key: value[row:row + 1] for key, value in examples.items()}
            for name, grad in zip(PROTECTED, exe.run(program, feed=feed, fetch_list=grads)):
                total[name] = total[name] + np.square(grad)
    return {name: (value / len(examples["x"])).astype(np.float32) for name, value in total.items()}


def accuracies(exe, programs: tuple, weights: dict, arrays: dict, anchors: dict) -> list[float]:
    """The test accuracy of task 1 (head 1) and task 2 (head 2) at ``weights`` (l2sp's anchors fed too)."""
    forward, first, second = programs
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        for name, value in weights.items():
            scope.var(name).get_tensor().set(value, paddle.CPUPlace())
        scores = []
        for task, head in ((1, first), (2, second)):
            test = split(arrays, f"task{task}_test")
            (logits,) = exe.run(forward, feed={**test, **anchors}, fetch_list=[head.name])
            scores.append(float(np.mean(np.argmax(logits, 1) == test["label"][:, 0])))
    return scores


def batches(name: str, arrays: dict, buffer: dict, anchors: dict, step: int) -> dict:
    task = 1 if name == "task1" else 2
    rows = slice(step * BATCH, (step + 1) * BATCH)
    feed = {key: value[rows] for key, value in split(arrays, f"task{task}_train").items()}
    if name == "replay":
        kept = np.arange(step * BATCH, (step + 1) * BATCH) % REPLAY   # the buffer cycled, a batch of it a step
        feed.update({"replay_x": buffer["x"][kept], "replay_label": buffer["label"][kept]})
    if name == "l2sp":
        feed.update(anchors)
    return feed


def train_model(out: Path, name: str, exe, arrays: dict, start: dict, buffer: dict, meta: dict):
    make = OPTIMIZERS.get(name, lambda: paddle.optimizer.Adam(0.01))
    main, startup, forward, _, (loss, first, second) = minimized(MODELS[name], make, seed=60)
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    anchors = {f"anchor_{key.replace('.', '_')}": start[key] for key in SHARED} if start else {}
    scope, losses = paddle.static.Scope(), []
    with paddle.static.scope_guard(scope):
        exe.run(startup)
        for key, value in start.items():
            if scope.find_var(key) is not None:
                scope.var(key).get_tensor().set(value, paddle.CPUPlace())
        np.savez(folder / "init.npz", **legacy_persistables(forward, scope))
        for step in range(STEPS):
            feed = batches(name, arrays, buffer, anchors, step)
            losses.append(float(exe.run(main, feed=feed, fetch_list=[loss.name])[0]))
        trained = legacy_persistables(forward, scope)
    extra = {**anchors, **({f"replay_{key}": value for key, value in buffer.items()} if name == "replay" else {})}
    np.savez(folder / "trained.npz", **trained)
    write_programs_gz(folder, {"forward": forward, "train": main, "startup": startup})
    meta[name] = {"loss": loss.name, "head1": first.name, "head2": second.name, "losses": losses,
                  "accuracy": accuracies(exe, (forward, first, second), trained, arrays, extra)}
    return forward, loss, trained


def main(out: Path) -> None:
    import paddle_legacy_shim
    paddle_legacy_shim.install()
    paddle.enable_static()
    out.mkdir(parents=True, exist_ok=True)
    exe = paddle.static.Executor(paddle.CPUPlace())
    arrays = task_data()
    buffer = split(arrays, "task1_train")
    buffer = {key: value[-REPLAY:] for key, value in buffer.items()}
    meta = {}
    forward, loss, first = train_model(out, "task1", exe, arrays, {}, buffer, meta)
    meta["task1"]["accuracy_before"] = accuracies(exe, (forward, *[forward.global_block().var(meta["task1"][h])
                                                                   for h in ("head1", "head2")]),
                                                  dict(np.load(out / "task1" / "init.npz")), arrays, {})
    fishers = fisher(exe, forward, loss, first, split(arrays, "task1_train"))
    np.savez(out / "fisher.npz", **fishers)
    start = {**first, **{f"fisher.{key}": value for key, value in fishers.items()},
             **{f"anchor.{key}": first[key] for key in PROTECTED}}
    for name in ("ewc", "l2sp", "frozen", "replay"):
        train_model(out, name, exe, arrays, {key: value for key, value in start.items() if not key.startswith("head2")},
                    buffer, meta)
    np.savez_compressed(out / "data.npz", **arrays)
    np.savez(out / "replay.npz", **{f"replay_{key}": value for key, value in buffer.items()})
    meta["lambda"], meta["alpha"] = LAMBDA, ALPHA
    (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    pir_half(__file__, out)


def main_pir(out: Path) -> None:
    """EWC and replay built and minimized in PIR static mode (ewc_pir_train.json / ewc_pir_startup.json, ...),
    started from the legacy run's values (ewc/init.npz) on its batches: their losses in pir_losses.json."""
    paddle.enable_static()
    arrays, losses = dict(np.load(out / "data.npz")), {}
    buffer = {key.removeprefix("replay_"): value for key, value in np.load(out / "replay.npz").items()}
    for name in ("ewc", "replay"):
        main, startup, loss, _ = pir_minimized(out, f"{name}_", lambda build=MODELS[name]: build()[0],
                                               lambda: paddle.optimizer.Adam(0.01), 60)
        exe, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
        with paddle.static.scope_guard(scope):
            exe.run(startup)
            for key, value in np.load(out / name / "init.npz").items():
                if scope.find_var(key) is not None:
                    scope.var(key).get_tensor().set(value, paddle.CPUPlace())
            losses[name] = [float(exe.run(main, feed=batches(name, arrays, buffer, {}, step), fetch_list=[loss])[0])
                            for step in range(STEPS)]
    (out / "pir_losses.json").write_text(json.dumps(losses, indent=1) + "\n")


if __name__ == "__main__":
    script_main(main, main_pir)
