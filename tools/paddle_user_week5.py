"""The debugging researcher's programs of docs/tools.md's 'A debugging researcher's week': small forward programs
built by Paddle 3.3.1's legacy static API whose training goes wrong, each with its startup program and a batch:

- lr_blowup: an MLP regressor (fc, relu, fc, mse) that SGD at too high a rate drives to Inf, then NaN;
- log_zero: a classifier with its cross entropy written by hand, -mean(sum(onehot * log(softmax(logits)))), whose
  softmax underflows to 0 once the logits grow;
- batch_std: a hand-written batch normalisation (h - mean) / std over the batch, fed a batch whose last feature is
  the same in every example (std 0);
- frozen: an MLP whose first layer's output is detached (stop_gradient), whose second layer's weight is not
  trainable, and whose third is trained: the researcher's mistakes that leave parameters without a gradient.

Each folder holds forward.pb, startup.pb, feed.npz and meta.json: Paddle's losses and per-parameter gradient norms
over STEPS steps of SGD at the folder's rate (LEARNING_RATES) on the batch, from the same startup program.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week5.py tests/data/paddle/user_week5
"""

import json
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
import paddle_legacy_shim
from paddle import nn

RNG = np.random.default_rng(5)
LEARNING_RATES = {"lr_blowup": 2.0, "log_zero": 50.0, "batch_std": 0.1, "frozen": 0.1}
STEPS = 4


def lr_blowup():
    x = paddle.static.data("x", [-1, 4], "float32")
    y = paddle.static.data("y", [-1, 1], "float32")
    loss = F.mse_loss(nn.Linear(16, 1)(F.relu(nn.Linear(4, 16)(x))), y)
    feed = {"x": RNG.standard_normal((8, 4)).astype(np.float32) * 3,
            "y": RNG.standard_normal((8, 1)).astype(np.float32) * 10}
    return loss, feed


def log_zero():
    x = paddle.static.data("x", [-1, 4], "float32")
    label = paddle.static.data("label", [-1, 1], "int64")
    probs = F.softmax(nn.Linear(4, 3)(x))
    onehot = F.one_hot(paddle.squeeze(label, 1), 3)
    loss = -paddle.mean(paddle.sum(onehot * paddle.log(probs), axis=1))
    feed = {"x": RNG.standard_normal((8, 4)).astype(np.float32) * 4,
            "label": RNG.integers(0, 3, (8, 1)).astype(np.int64)}
    return loss, feed


def batch_std():
    x = paddle.static.data("x", [-1, 4], "float32")
    y = paddle.static.data("y", [-1, 1], "float32")
    mean = paddle.mean(x, axis=0, keepdim=True)
    std = paddle.sqrt(paddle.mean(paddle.square(x - mean), axis=0, keepdim=True))
    loss = F.mse_loss(nn.Linear(4, 1)((x - mean) / std), y)
    feed = {"x": RNG.standard_normal((8, 4)).astype(np.float32),
            "y": RNG.standard_normal((8, 1)).astype(np.float32)}
    feed["x"][:, 3] = 1.5   # a feature constant over the batch: std 0
    return loss, feed


def frozen():
    x = paddle.static.data("x", [-1, 4], "float32")
    y = paddle.static.data("y", [-1, 1], "float32")
    hidden = F.relu(nn.Linear(4, 8)(x))
    hidden.stop_gradient = True   # the detach left in from an experiment
    second = nn.Linear(8, 8, weight_attr=paddle.ParamAttr(trainable=False))
    loss = F.mse_loss(nn.Linear(8, 1)(F.relu(second(hidden))), y)
    feed = {"x": RNG.standard_normal((8, 4)).astype(np.float32),
            "y": RNG.standard_normal((8, 1)).astype(np.float32)}
    return loss, feed


def paddle_training(forward, startup, loss, feed, rate: float) -> dict:
    """SGD on a clone of ``forward``: Paddle's loss and each parameter's gradient norm per step (NaN and Inf kept)."""
    train = forward.clone()
    with paddle.static.program_guard(train, startup):   # the files are written: the rate's init joins it here
        target = train.global_block().var(loss.name)
        pairs = paddle.optimizer.SGD(rate).minimize(target)[1]
    executor, scope = paddle.static.Executor(paddle.CPUPlace()), paddle.static.Scope()
    losses, norms = [], []
    with paddle.static.scope_guard(scope):
        executor.run(startup)
        for _ in range(STEPS):
            fetched = executor.run(train, feed=feed, fetch_list=[loss.name] + [grad.name for _, grad in pairs])
            losses.append(float(fetched[0]))
            norms.append({param.name: float(np.linalg.norm(np.asarray(grad, np.float64)))
                          for (param, _), grad in zip(pairs, fetched[1:])})
    return {"loss": loss.name, "lr": rate, "losses": [repr(v) for v in losses],
            "grad_norms": [{name: repr(v) for name, v in step.items()} for step in norms]}


def main(out: str) -> None:
    paddle.enable_static()
    paddle_legacy_shim.install()
    for build in (lr_blowup, log_zero, batch_std, frozen):
        paddle.seed(5)
        program, startup = paddle.static.Program(), paddle.static.Program()
        with paddle.static.program_guard(program, startup):
            loss, feed = build()
        folder = os.path.join(out, build.__name__)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "forward.pb"), "wb") as f:
            f.write(program.desc.serialize_to_string())
        with open(os.path.join(folder, "startup.pb"), "wb") as f:
            f.write(startup.desc.serialize_to_string())
        np.savez(os.path.join(folder, "feed.npz"), **feed)
        meta = paddle_training(program, startup, loss, feed, LEARNING_RATES[build.__name__])
        with open(os.path.join(folder, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        print(build.__name__, loss.name)


if __name__ == "__main__":
    main(sys.argv[1])
