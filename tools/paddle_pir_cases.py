"""The training cases of tools/paddle_pir_fixtures.py: small models from Paddle's own layers (an MLP, a CNN
with batch norm, a transformer encoder layer, recurrent nets, cond, while_loop) and the op zoo. Each builds
its forward program in the current PIR program guard and returns (loss, feed, description)."""

from __future__ import annotations

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle_pir_zoo import ZOO


def mlp(rng):
    x = paddle.static.data("x", [4, 6], "float32")
    label = paddle.static.data("label", [4, 1], "int64")
    hidden = F.relu(paddle.nn.Linear(6, 8)(x))
    loss = paddle.mean(F.cross_entropy(paddle.nn.Linear(8, 3)(hidden), label))
    feed = {"x": rng.standard_normal((4, 6)).astype("float32"), "label": rng.integers(0, 3, (4, 1)).astype("int64")}
    return loss, feed, "linear(6->8) -> relu -> linear(->3) -> cross entropy -> mean"


def cnn_bn(rng):
    img = paddle.static.data("img", [2, 3, 6, 6], "float32")
    label = paddle.static.data("label", [2, 1], "int64")
    h = F.relu(paddle.nn.BatchNorm2D(4)(paddle.nn.Conv2D(3, 4, 3, padding=1)(img)))
    h = F.max_pool2d(h, 2)
    loss = paddle.mean(F.cross_entropy(paddle.nn.Linear(36, 3)(paddle.flatten(h, 1)), label))
    feed = {"img": rng.standard_normal((2, 3, 6, 6)).astype("float32"),
            "label": rng.integers(0, 3, (2, 1)).astype("int64")}
    return loss, feed, "conv2d -> batch_norm (training) -> relu -> max pool -> flatten -> linear -> cross entropy"


def transformer(rng):
    x = paddle.static.data("x", [2, 4, 8], "float32")
    x.stop_gradient = False
    target = paddle.static.data("target", [2, 4, 8], "float32")
    layer = paddle.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)
    loss = paddle.mean(paddle.square(paddle.subtract(layer(x), target)))
    feed = {"x": rng.standard_normal((2, 4, 8)).astype("float32"),
            "target": rng.standard_normal((2, 4, 8)).astype("float32")}
    return loss, feed, "nn.TransformerEncoderLayer(d_model 8, 2 heads, ffn 16) -> mean squared error"


def lstm(rng):
    x = paddle.static.data("x", [2, 3, 4], "float32")
    x.stop_gradient = False
    out, (h, c) = paddle.nn.LSTM(4, 5)(x)
    loss = paddle.add(paddle.mean(paddle.square(out)), paddle.mean(paddle.add(h, c)))
    return loss, {"x": rng.standard_normal((2, 3, 4)).astype("float32")}, \
        "nn.LSTM(4 -> 5) over 3 steps -> mean(out^2) + mean(h + c)"


def lstm_stacked(rng):
    x = paddle.static.data("x", [2, 3, 4], "float32")
    x.stop_gradient = False
    out, (h, c) = paddle.nn.LSTM(4, 3, num_layers=2, direction="bidirect")(x)
    loss = paddle.add(paddle.mean(paddle.square(out)), paddle.mean(paddle.multiply(h, c)))
    return loss, {"x": rng.standard_normal((2, 3, 4)).astype("float32")}, \
        "nn.LSTM(4 -> 3, 2 layers, bidirectional) over 3 steps -> mean(out^2) + mean(h * c)"


def _recurrent(rng, layer, lengths=None):
    """A recurrent layer over [batch 3, time 4, features 4] (padded batches when ``lengths`` is given):
    mean(out^2) plus a weighted mean of the final states."""
    x = paddle.static.data("x", [3, 4, 4], "float32")
    x.stop_gradient = False
    feed = {"x": rng.standard_normal((3, 4, 4)).astype("float32")}
    if lengths is not None:
        feed["lengths"] = np.array(lengths, "int64")
        out, states = layer(x, sequence_length=paddle.static.data("lengths", [3], "int64"))
    else:
        out, states = layer(x)
    states = list(states) if isinstance(states, (tuple, list)) else [states]
    loss = paddle.mean(paddle.square(out))
    for k, state in enumerate(states):
        loss = paddle.add(loss, paddle.mean(paddle.scale(state, 0.5 + k)))
    return loss, feed


def gru_stacked_lengths(rng):
    loss, feed = _recurrent(rng, paddle.nn.GRU(4, 3, num_layers=2, direction="bidirect"), [4, 2, 3])
    return loss, feed, "nn.GRU(4 -> 3, 2 layers, bidirectional) over padded sequences of lengths 4, 2, 3"


def simple_rnn_tanh(rng):
    loss, feed = _recurrent(rng, paddle.nn.SimpleRNN(4, 5))
    return loss, feed, "nn.SimpleRNN(4 -> 5, tanh) over 4 steps"


def simple_rnn_relu_lengths(rng):
    loss, feed = _recurrent(rng, paddle.nn.SimpleRNN(4, 3, num_layers=2, direction="bidirect", activation="relu"),
                            [1, 4, 3])
    return loss, feed, "nn.SimpleRNN(4 -> 3, relu, 2 layers, bidirectional) over padded sequences of lengths 1, 4, 3"


def lstm_stacked_lengths(rng):
    loss, feed = _recurrent(rng, paddle.nn.LSTM(4, 3, num_layers=2, direction="bidirect"), [2, 4, 1])
    return loss, feed, "nn.LSTM(4 -> 3, 2 layers, bidirectional) over padded sequences of lengths 2, 4, 1"


def cond(rng):
    x = paddle.static.data("x", [4, 8], "float32")
    flag = paddle.static.data("flag", [1], "float32")
    first, second = paddle.nn.Linear(8, 8), paddle.nn.Linear(8, 8)
    out = paddle.static.nn.cond(paddle.sum(flag) > 0, lambda: paddle.tanh(first(x)), lambda: second(x) * 2)
    loss = paddle.mean(out)
    return loss, {"x": rng.standard_normal((4, 8)).astype("float32"), "flag": np.array([1.0], "float32")}, \
        "static.nn.cond(sum(flag) > 0, tanh(linear(x)), 2 linear(x)) -> mean"


def while_loop(rng):
    x = paddle.static.data("x", [4, 8], "float32")
    x.stop_gradient = False
    weight = paddle.create_parameter([8, 8], "float32")
    limit = paddle.full([1], 3, "int64")

    def body(i, h):
        return i + 1, paddle.tanh(paddle.matmul(h, weight))

    _, h = paddle.static.nn.while_loop(lambda i, h: i < limit, body, [paddle.full([1], 0, "int64"), x])
    loss = paddle.mean(h)
    return loss, {"x": (0.5 * rng.standard_normal((4, 8))).astype("float32")}, \
        "static.nn.while_loop: 3 steps of h = tanh(h @ W) -> mean"


CASES = {"mlp": mlp, "cnn_bn": cnn_bn, "transformer": transformer, "lstm": lstm, "lstm_stacked": lstm_stacked,
         "lstm_stacked_lengths": lstm_stacked_lengths, "gru_stacked_lengths": gru_stacked_lengths,
         "simple_rnn_tanh": simple_rnn_tanh, "simple_rnn_relu_lengths": simple_rnn_relu_lengths, "cond": cond,
         "while_loop": while_loop, **ZOO}
