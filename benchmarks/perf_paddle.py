"""The Paddle side of benchmarks/perf.py, run by an interpreter with paddlepaddle (legacy static programs): a
worker reading one JSON request a line, answering one JSON line (see perf_gradc.py). It builds each model
with Paddle's own layers, saves the forward program, parameters and feed for gradc to run the very same, and
times Paddle's append_backward and Paddle's executor."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import paddle
from paddle.base.backward import append_backward

paddle.enable_static()
F = paddle.nn.functional
_CACHE: dict = {}


def _mlp(layers: int, width: int):
    hidden = paddle.static.data("x", [-1, width])
    label = paddle.static.data("label", [-1, 1], "int64")
    for _ in range(layers):
        hidden = paddle.static.nn.fc(hidden, width, activation="relu")
    return paddle.mean(F.cross_entropy(hidden, label))


def _lenet():
    x = paddle.static.data("x", [-1, 1, 28, 28])
    label = paddle.static.data("label", [-1, 1], "int64")
    hidden = F.max_pool2d(F.relu(paddle.nn.Conv2D(1, 6, 5, padding=2)(x)), 2, 2)
    hidden = F.max_pool2d(F.relu(paddle.nn.Conv2D(6, 16, 5)(hidden)), 2, 2)
    hidden = F.relu(paddle.nn.Linear(120, 84)(F.relu(paddle.nn.Linear(400, 120)(paddle.flatten(hidden, 1)))))
    return paddle.mean(F.cross_entropy(paddle.nn.Linear(84, 10)(hidden), label))


def _build(model):
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        loss = model()
    return main, startup, loss


def backward(layers: int, width: int, path: str) -> dict:
    """Paddle's append_backward on a freshly built deep MLP; the first call saves the forward program."""
    main, startup, loss = _build(lambda: _mlp(layers, width))
    if not Path(path).exists():
        Path(path).write_bytes(main.desc.serialize_to_string())
    start = time.perf_counter()
    with paddle.static.program_guard(main, startup):
        append_backward(loss)
    return {"seconds": time.perf_counter() - start, "loss": loss.name}


def _prepared(name: str, model, folder: str, feed: dict):
    """Program, executor, feed and fetch of a model; its forward program, parameters and feed saved for gradc."""
    main, startup, loss = _build(model)
    Path(folder, f"{name}.pb").write_bytes(main.desc.serialize_to_string())
    with paddle.static.program_guard(main, startup):
        pairs = append_backward(loss)
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    scope = paddle.static.global_scope()
    params = {var.name: np.array(scope.find_var(var.name).get_tensor()) for var in main.list_vars()
              if var.persistable and scope.find_var(var.name) is not None and var.name not in ("feed", "fetch")}
    np.savez(Path(folder, f"{name}_params.npz"), **params)
    np.savez(Path(folder, f"{name}_feed.npz"), **feed)
    return main, executor, feed, [loss, pairs[0][1]]


def step(model: str, folder: str, batch: int, layers: int = 0, width: int = 64, steps: int = 1) -> dict:
    """A forward + backward step through Paddle's executor, the loss and the first weight grad fetched: the
    median of ``steps`` run back to back, as a training loop runs them."""
    def prepare():
        rng = np.random.default_rng(0)
        if model == "mlp":
            feed = {"x": rng.standard_normal((batch, width), dtype=np.float32),
                    "label": rng.integers(0, width, (batch, 1))}
            return _prepared(model, lambda: _mlp(layers, width), folder, feed)
        feed = {"x": rng.standard_normal((batch, 1, 28, 28), dtype=np.float32),
                "label": rng.integers(0, 10, (batch, 1))}
        return _prepared(model, _lenet, folder, feed)

    if model not in _CACHE:
        _CACHE[model] = prepare()
        main, executor, feed, fetch = _CACHE[model]
        executor.run(main, feed=feed, fetch_list=fetch)   # Paddle prepares its program on the first run
    main, executor, feed, fetch = _CACHE[model]
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        loss, _ = executor.run(main, feed=feed, fetch_list=fetch)
        times.append(time.perf_counter() - start)
    return {"seconds": statistics.median(times), "loss": float(np.asarray(loss).reshape(-1)[0])}


ROWS = {"backward": backward, "step": step}


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        try:
            if request["row"] == "describe":
                answer = {"paddle": paddle.__version__, "pid": os.getpid()}
            else:
                answer = ROWS[request["row"]](**request["args"])
        except Exception as exc:  # noqa: BLE001 - the driver reports the row as failed, with the reason
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
