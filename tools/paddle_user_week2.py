"""The researcher's programs of docs/tools.md's 'An MLOps engineer's and a researcher's week': an MLP, a CNN with
batch norm and an LSTM built by Paddle 3.3.1 in legacy static mode (forward.pb, params.npz, feed.npz), and, with the
same weights in dygraph float64 (paddle.grad, create_graph), a gradient penalty's and a Hessian-vector product's
gradients and, for the MLP, a MAML outer gradient (dygraph.npz). Paddle has no double grad of cross_entropy, so the
loss is written with exp, log and one_hot there; `paddle.tanh` fails in legacy static mode, so the nets use silu.

    FLAGS_enable_pir_api=0 /path/to/paddle/python tools/paddle_user_week2.py tests/data/paddle/user_week2
"""

import json
import os
import sys

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn

RNG = np.random.default_rng(0)
RATE = 0.1   # the MAML inner step


class MLP(nn.Layer):
    def __init__(self):
        super().__init__()
        self.l1, self.l2 = nn.Linear(6, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.l2(F.silu(self.l1(x)))


class CNN(nn.Layer):
    def __init__(self):
        super().__init__()
        self.conv, self.bn, self.fc = nn.Conv2D(2, 3, 3, padding=1), nn.BatchNorm2D(3), nn.Linear(3 * 4 * 4, 3)

    def forward(self, x):
        return self.fc(paddle.reshape(F.avg_pool2d(F.silu(self.bn(self.conv(x))), 2), [x.shape[0], -1]))


class LSTM(nn.Layer):
    def __init__(self):
        super().__init__()
        self.lstm, self.fc = nn.LSTM(4, 5), nn.Linear(5, 3)

    def forward(self, x):
        return self.fc(self.lstm(x)[0][:, -1])


CASES = {"mlp": (MLP, (4, 6)), "cnn": (CNN, (2, 2, 8, 8)), "lstm": (LSTM, (3, 4, 4))}


def cross_entropy(logits, label, batch):
    """F.cross_entropy's mean, in ops Paddle differentiates twice."""
    top = logits.max(-1, keepdim=True).detach()
    log_sum = paddle.log(paddle.exp(logits - top).sum(-1)) + top[:, 0]
    return (log_sum - (logits * F.one_hot(label[:, 0], 3)).sum(-1)).sum() / batch


def grads_or_zeros(grads, names, params, key, into):
    for name, grad in zip(names, grads):
        into[f"{key}/{name}"] = np.zeros(params[name].shape) if grad is None else grad.numpy()


def second_order(model, x, label, names, params, into):
    batch = x.shape[0]
    weights = list(model.parameters())
    grad_x, = paddle.grad(cross_entropy(model(x), label, batch), x, create_graph=True)
    grads_or_zeros(paddle.grad((grad_x * grad_x).sum(), weights, allow_unused=True), names, params, "penalty", into)
    directions = {name: RNG.standard_normal(params[name].shape) for name in names}
    into.update({f"v/{name}": value for name, value in directions.items()})
    grads = paddle.grad(cross_entropy(model(x), label, batch), weights, create_graph=True, allow_unused=True)
    dot = sum((g * paddle.to_tensor(directions[n])).sum() for g, n in zip(grads, names) if g is not None)
    grads_or_zeros(paddle.grad(dot, weights, allow_unused=True), names, params, "hvp", into)
    if isinstance(model, MLP):   # one SGD step inside, then the outer loss's gradient through it
        def mlp(w, x):
            return F.linear(F.silu(F.linear(x, w[0], w[1])), w[2], w[3])
        inner = paddle.grad(cross_entropy(mlp(weights, x), label, batch), weights, create_graph=True)
        fast = [w - RATE * g for w, g in zip(weights, inner)]
        grads_or_zeros(paddle.grad(cross_entropy(mlp(fast, x), label, batch), weights), names, params, "maml", into)


def build(name, out):
    cls, shape = CASES[name]
    os.makedirs(f"{out}/{name}", exist_ok=True)
    paddle.enable_static()
    main, startup = paddle.static.Program(), paddle.static.Program()
    with paddle.static.program_guard(main, startup):
        paddle.seed(1)
        x = paddle.static.data("x", list(shape), "float32")
        x.stop_gradient = False
        label = paddle.static.data("label", [shape[0], 1], "int64")
        model = cls()
        loss = F.cross_entropy(model(x), label)
    executor = paddle.static.Executor(paddle.CPUPlace())
    executor.run(startup)
    names = [p.name for p in model.parameters()]
    scope = paddle.static.global_scope()
    params = {n: np.array(scope.find_var(n).get_tensor()) for n in names}
    feed = {"x": RNG.standard_normal(shape).astype("float32"),
            "label": RNG.integers(0, 3, (shape[0], 1)).astype("int64")}
    with open(f"{out}/{name}/forward.pb", "wb") as handle:
        handle.write(main.desc.serialize_to_string())
    np.savez(f"{out}/{name}/params.npz", **params)
    np.savez(f"{out}/{name}/feed.npz", **feed)
    paddle.disable_static()
    paddle.set_default_dtype("float64")
    twin = cls()
    for param, n in zip(twin.parameters(), names):
        param.set_value(params[n].astype("float64"))
    twin.train()
    results = {}
    try:
        second_order(twin, paddle.to_tensor(feed["x"].astype("float64"), stop_gradient=False),
                     paddle.to_tensor(feed["label"]), names, params, results)
        np.savez(f"{out}/{name}/dygraph.npz", **results)
    except (RuntimeError, ValueError) as exc:   # the LSTM: 'tensor should not be null' in RnnGradNode
        print(name, "Paddle cannot:", str(exc).splitlines()[0])
    paddle.set_default_dtype("float32")
    return {"loss": loss.name, "params": names}


if __name__ == "__main__":
    json.dump({name: build(name, sys.argv[1]) for name in CASES}, open(f"{sys.argv[1]}/meta.json", "w"), indent=1)
