"""The meta-learner's programs of docs/tools.md's 'A meta-learning researcher's week': MAML on sinusoid regression
(y = A sin(x - phase), A in [0.1, 5], phase in [0, pi], x in [-5, 5]; 10 support and 10 query points per task), a
1-40-40-1 ReLU MLP of parameters made by `paddle.static.create_parameter` and applied by `paddle.matmul` so the inner
step can swap them. The inner loop is written in the program: `paddle.static.gradients` of the support loss, then
w' = w - alpha * g as ops; the query loss at w' is the outer loss, which Paddle's Adam (lr 1e-3) minimizes, second
derivatives through the inner gradient and all. Cases (one task per outer step, STEPS steps):

- maml: one inner step, alpha 0.01.
- fomaml: first-order MAML, the inner gradients detached (stop_gradient), one inner step.
- metasgd: Meta-SGD, tanh MLP, a learned inner rate per parameter (same shape, initial 0.01), two inner steps, and
  an implicit gradient-norm penalty 1e-3 * sum ||g||^2 of the first inner gradient.

Per case (programs gzipped): outer.pb (the outer loss program before minimize), train.pb and startup.pb (Paddle's
minimize), params.npz (the startup's values), paddle.npz (Paddle's first step's meta-gradients, grad.<name>, and the
parameters after its STEPS steps, trained.<name>); for maml also inner.pb (the support loss alone, before any
gradients). tasks.npz: the STEPS tasks' support and query points, one task a row; meta.json: Paddle's outer losses at
each step and at the startup's parameters on every task (its executor on outer.pb), the *_grad_grad ops of its
training program, the vars' names. Paddle's minimize of fomaml's loss returns no parameter gradient and trains nothing
(docs/tools.md).

classify/: 5-way MAML on random vectors (an 8-32-5 ReLU net, one inner step of softmax cross-entropy, alpha 0.4):
outer.pb, params.npz, tasks.npz (8 tasks of 25 support and 25 query points); Paddle's minimize fails, so meta.json holds
its error and its outer loss and accuracy on each task at the startup's values.

    FLAGS_enable_pir_api=0 /work/paddle-venv/bin/python tools/paddle_user_week21.py tests/data/paddle/user_week21
"""

import json
import sys
from pathlib import Path

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle_programs import without_callstacks, write_gz

SHOTS, STEPS, WIDTH = 10, 8, 40
WAYS, FEATURES = 5, 8
RNG = np.random.default_rng(21)
CASES = {"maml": dict(activation="relu", inner_steps=1, first_order=False, learned_rate=False, penalty=0.0),
         "fomaml": dict(activation="relu", inner_steps=1, first_order=True, learned_rate=False, penalty=0.0),
         "metasgd": dict(activation="tanh", inner_steps=2, first_order=False, learned_rate=True, penalty=1e-3)}
ALPHA = 0.01


def tasks() -> dict:
    amplitude, phase = RNG.uniform(0.1, 5.0, (STEPS, 1, 1)), RNG.uniform(0, np.pi, (STEPS, 1, 1))
    points = {name: RNG.uniform(-5, 5, (STEPS, SHOTS, 1)) for name in ("x_support", "x_query")}
    points |= {"y" + name[1:]: amplitude * np.sin(points[name] - phase) for name in list(points)}
    return {name: value.astype("float32") for name, value in points.items()}


def activation(kind, x):
    block = paddle.static.default_main_program().current_block()
    out = block.create_var(name=paddle.utils.unique_name.generate(kind + "_act"), dtype=x.dtype, shape=x.shape)
    block.append_op(type=kind, inputs={"X": [x]}, outputs={"Out": [out]})
    return out


def net(weights, x, kind):
    h = x
    for index in range(0, len(weights), 2):
        h = paddle.matmul(h, weights[index]) + weights[index + 1]
        if index + 2 < len(weights):
            h = activation(kind, h)
    return h


def mse(prediction, target):
    return paddle.mean(paddle.square(prediction - target))


def outer_loss(case):
    shapes = [[1, WIDTH], [WIDTH], [WIDTH, WIDTH], [WIDTH], [WIDTH, 1], [1]]
    weights = [paddle.static.create_parameter(shape, "float32", name=f"w{i}") for i, shape in enumerate(shapes)]
    rates = [paddle.static.create_parameter(shape, "float32", name=f"lr{i}",
                                            default_initializer=paddle.nn.initializer.Constant(ALPHA))
             for i, shape in enumerate(shapes)] if case["learned_rate"] else None
    data = {name: paddle.static.data(name, [SHOTS, 1], "float32")
            for name in ("x_support", "y_support", "x_query", "y_query")}
    fast, penalty = weights, None
    for step in range(case["inner_steps"]):
        inner = mse(net(fast, data["x_support"], case["activation"]), data["y_support"])
        if step == 0:
            case["inner"] = (paddle.static.default_main_program().clone(), inner.name)
        grads = paddle.static.gradients(inner, fast)
        if case["first_order"]:
            for grad in grads:
                grad.stop_gradient = True
        if step == 0 and case["penalty"]:
            penalty = paddle.add_n([paddle.sum(paddle.square(grad)) for grad in grads])
        fast = [w - (rate * g if rates else ALPHA * g) for w, g, rate in zip(fast, grads, rates or grads)]
    loss = mse(net(fast, data["x_query"], case["activation"]), data["y_query"])
    if penalty is not None:
        loss = loss + case["penalty"] * penalty
    return weights + (rates or []), loss


def build(name, case, out: Path, task_feed) -> dict:
    (out / name).mkdir(parents=True, exist_ok=True)
    paddle.utils.unique_name.switch()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        paddle.seed(21)
        params, loss = outer_loss(case)
        forward = main.clone()
        _, pairs = paddle.optimizer.Adam(learning_rate=1e-3).minimize(loss)
    executor = paddle.static.Executor(paddle.CPUPlace())
    scope = paddle.static.Scope()
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        values = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in params}
        feeds = [{key: value[step] for key, value in task_feed.items()} for step in range(STEPS)]
        before = [float(executor.run(forward, feed=feed, fetch_list=[loss.name])[0]) for feed in feeds]
        losses, first = [], {}
        for step in range(STEPS):
            feed = {key: value[step] for key, value in task_feed.items()}
            fetched = executor.run(main, feed=feed, fetch_list=[loss] + [g for _, g in pairs])
            losses.append(float(fetched[0]))
            first = first or {f"grad.{p.name}": g for (p, _), g in zip(pairs, fetched[1:])}
        trained = {p.name: np.array(scope.find_var(p.name).get_tensor()) for p in params}
    write_gz(out / name / "outer.pb", without_callstacks(forward))
    inner_program, inner_loss = case.pop("inner")
    if name == "maml":   # the support loss alone, for the inner step written the gradc way
        write_gz(out / name / "inner.pb", without_callstacks(inner_program))
    write_gz(out / name / "train.pb", without_callstacks(main))
    write_gz(out / name / "startup.pb", without_callstacks(startup))
    np.savez(out / name / "params.npz", **values)
    np.savez(out / name / "paddle.npz", **first, **{f"trained.{k}": v for k, v in trained.items()})
    print(name, losses)
    return {"loss": loss.name, "inner_loss": inner_loss, "untrained_losses": before, "params": [p.name for p in params],
            "losses": losses, "grad_ops": sorted({op.type for op in main.global_block().ops
                                                  if op.type.endswith(("_grad_grad", "double_grad"))})}


def classification_tasks() -> dict:
    """5-way tasks of random vectors: 5 centres N(0, 1) in 8-d a task, 5 support and 5 query points a class (noise
    0.5), the classes' order shuffled."""
    centres = RNG.standard_normal((STEPS, WAYS, FEATURES))
    labels = np.tile(np.arange(WAYS), WAYS)
    data = {}
    for split in ("support", "query"):
        data[f"x_{split}"] = (centres[:, labels] + 0.5 * RNG.standard_normal((STEPS, WAYS * WAYS, FEATURES)))
        data[f"y_{split}"] = np.repeat(labels[None, :, None], STEPS, 0).astype("int64")
    return {name: value.astype("float32") if name.startswith("x") else value for name, value in data.items()}


def classification(out: Path) -> dict:
    """5-way MAML: an 8-32-5 ReLU net, one inner step (alpha 0.4) of softmax cross-entropy. Paddle's minimize fails
    (no maker of softmax_with_cross_entropy_grad's gradient): Paddle gives the outer loss and accuracy per task."""
    (out / "classify").mkdir(parents=True, exist_ok=True)
    paddle.utils.unique_name.switch()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        paddle.seed(21)
        shapes = [[FEATURES, 32], [32], [32, WAYS]]
        weights = [paddle.static.create_parameter(shape, "float32", name=f"c{i}") for i, shape in enumerate(shapes)]
        data = {f"x_{split}": paddle.static.data(f"x_{split}", [WAYS * WAYS, FEATURES], "float32")
                for split in ("support", "query")}
        data |= {f"y_{split}": paddle.static.data(f"y_{split}", [WAYS * WAYS, 1], "int64")
                 for split in ("support", "query")}

        def logits(params, x):
            return paddle.matmul(activation("relu", paddle.matmul(x, params[0]) + params[1]), params[2])

        inner = paddle.mean(F.softmax_with_cross_entropy(logits(weights, data["x_support"]), data["y_support"]))
        fast = [w - 0.4 * g for w, g in zip(weights, paddle.static.gradients(inner, weights))]
        query = logits(fast, data["x_query"])
        loss = paddle.mean(F.softmax_with_cross_entropy(query, data["y_query"]))
        accuracy = paddle.static.accuracy(F.softmax(query), data["y_query"])
        forward = main.clone()
        try:
            paddle.optimizer.Adam(learning_rate=1e-3).minimize(loss)
            refused = ""
        except RuntimeError as exc:
            refused = str(exc).splitlines()[0]
    executor, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    task_feed = classification_tasks()
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        values = {w.name: np.array(scope.find_var(w.name).get_tensor()) for w in weights}
        fetched = [executor.run(forward, feed={key: value[step] for key, value in task_feed.items()},
                                fetch_list=[loss.name, accuracy.name]) for step in range(STEPS)]
    write_gz(out / "classify" / "outer.pb", without_callstacks(forward))
    np.savez(out / "classify" / "params.npz", **values)
    np.savez(out / "classify" / "tasks.npz", **task_feed)
    return {"loss": loss.name, "accuracy": accuracy.name, "params": [w.name for w in weights],
            "untrained_losses": [float(f[0]) for f in fetched], "untrained_accuracy": [float(f[1]) for f in fetched],
            "paddle_minimize": refused}


if __name__ == "__main__":
    paddle_legacy_shim.install()
    paddle.enable_static()
    target = Path(sys.argv[1])
    target.mkdir(parents=True, exist_ok=True)
    task_feed = tasks()
    np.savez(target / "tasks.npz", **task_feed)
    meta = {name: build(name, case, target, task_feed) for name, case in CASES.items()}
    meta["classify"] = classification(target)
    (target / "meta.json").write_text(json.dumps(meta, indent=1))
