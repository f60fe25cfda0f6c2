"""The recurrent cases tools/paddle_rnn_fixtures.py builds, each from Paddle's own layers.

A case is ``builder(rng, dtype) -> (loss, feed, description, extra_meta)``, called inside a program guard;
feed values are float64 (the tool rounds them to float32). Losses are sums of mean(value * fixed random
weights), weights fed as inputs, so every output and state gets a distinct, non-trivial gradient.
"""

from __future__ import annotations

import contextlib

import numpy as np
import paddle
import paddle.nn.functional as F
from paddle import nn
from paddle.base.layer_helper import LayerHelper
from paddle.tensor.manipulation import tensor_array_to_tensor

LEGACY_NOTE = ("Built under legacy_math(): in Paddle 3.3.1 paddle.matmul, paddle.tanh, F.sigmoid and "
               "paddle.multiply build only PIR ops, so while building they append their legacy ops "
               "(matmul_v2, tanh, sigmoid, elementwise_mul); the layers' own code is unchanged.")


def _legacy(op_type: str, inputs: dict, attrs: dict | None = None):
    helper = LayerHelper(op_type)
    out = helper.create_variable_for_type_inference(next(iter(inputs.values())).dtype)
    helper.append_op(type=op_type, inputs=inputs, outputs={"Out": out}, attrs=attrs or {})
    return out


def _matmul(x, y, transpose_x=False, transpose_y=False, name=None):
    return _legacy("matmul_v2", {"X": x, "Y": y}, {"trans_x": transpose_x, "trans_y": transpose_y})


_PATCHES = [(paddle, "matmul", _matmul), (paddle, "tanh", lambda x, name=None: _legacy("tanh", {"X": x})),
            (F, "sigmoid", lambda x, name=None: _legacy("sigmoid", {"X": x})),
            (paddle, "multiply", lambda x, y, name=None: _legacy("elementwise_mul", {"X": x, "Y": y}, {"axis": -1}))]


@contextlib.contextmanager
def legacy_math():
    saved = [(module, name, getattr(module, name)) for module, name, _ in _PATCHES]
    for module, name, function in _PATCHES:
        setattr(module, name, function)
    try:
        yield
    finally:
        for module, name, function in saved:
            setattr(module, name, function)


def data(name, shape, dtype, grad=False):
    var = paddle.static.data(name, shape, dtype)
    var.stop_gradient = not grad
    return var


def weighted_loss(rng, dtype, feed, terms):
    """Sum of mean(value * w_name) over (w_name, value, shape); the weights are fed."""
    loss = None
    for name, value, shape in terms:
        feed[name] = rng.standard_normal(shape)
        term = paddle.mean(value * data(name, shape, dtype))
        loss = term if loss is None else loss + term
    return loss


def _kwargs(kwargs: dict) -> str:
    return "".join(f", {k}={v!r}" for k, v in kwargs.items())


def lengths(batch: int, steps: int):
    """A padded batch: the first sequence is full, the others shorter and different."""
    return np.array([steps, 2, steps - 1, 1][:batch], dtype=np.int64)


LAYERS = {"LSTM": (nn.LSTM, {}), "GRU": (nn.GRU, {}), "RNN_TANH": (nn.SimpleRNN, {"activation": "tanh"}),
          "RNN_RELU": (nn.SimpleRNN, {"activation": "relu"})}


def fused(mode, layers=1, bidirect=False, seq=False, init=False, time_major=False, dropout=0.0, batch=3, steps=4, inp=3,
          hidden=4):
    def case(rng, dtype):
        directions, n_states = 1 + bidirect, 1 + (mode == "LSTM")
        x_shape = [steps, batch, inp] if time_major else [batch, steps, inp]
        feed = {"x": rng.standard_normal(x_shape)}
        x = data("x", x_shape, dtype, grad=True)
        state_shape = [layers * directions, batch, hidden]
        states = None
        if init:
            names = ["h0", "c0"][:n_states]
            feed.update({n: 0.5 * rng.standard_normal(state_shape) for n in names})
            states = [data(n, state_shape, dtype, grad=True) for n in names]
            states = tuple(states) if n_states == 2 else states[0]
        seq_len = data("seq_len", [batch], "int64") if seq else None
        if seq:
            feed["seq_len"] = lengths(batch, steps)
        cls, kwargs = LAYERS[mode]
        layer = cls(inp, hidden, num_layers=layers, direction="bidirect" if bidirect else "forward",
                    time_major=time_major, dropout=dropout, **kwargs)
        out, final = layer(x, states, sequence_length=seq_len)
        final = list(final) if n_states == 2 else [final]
        out_shape = x_shape[:2] + [directions * hidden]
        terms = [("w_out", out, out_shape)] + [(f"w_state{k}", s, state_shape) for k, s in enumerate(final)]
        loss = weighted_loss(rng, dtype, feed, terms)
        what = (f"paddle.nn.{cls.__name__}({inp}, {hidden}, num_layers={layers}, "
                f"direction={'bidirect' if bidirect else 'forward'}, time_major={time_major}{_kwargs(kwargs)})"
                f"{' with sequence_length' if seq else ''}{' from fed initial states' if init else ''}"
                f"{f', dropout={dropout} between layers (training)' if dropout else ''}")
        extra = {"loss_terms": [["Out", "w_out"]] + [[f"State{k}", f"w_state{k}"] for k in range(n_states)],
                 "time_major": time_major, "initial_states": list(feed)[1:1 + n_states] if init else []}
        if dropout:
            extra["save_outputs"] = {"dropout_state": layer._dropout_state.name}
            extra["notes"] = ["DropoutState is random, a fresh mask every run: dropout_state.npy is the mask of the "
                              "recorded run (one mask of Out's shape, applied at every layer boundary)"]
        return loss, feed, what + "; loss = sum of mean(value * fed random weights) over Out and each State", extra
    return case


CELLS = {"lstm": (nn.LSTMCell, {}), "gru": (nn.GRUCell, {}), "simple": (nn.SimpleRNNCell, {}),
         "simple_relu": (nn.SimpleRNNCell, {"activation": "relu"})}


def cell_rnn(kind, reverse=False, seq=False, init=False, bidirect=False, batch=3, steps=4, inp=3, hidden=4):
    def case(rng, dtype):
        cls, kwargs = CELLS[kind]
        feed = {"x": rng.standard_normal((batch, steps, inp))}
        x = data("x", [batch, steps, inp], dtype, grad=True)
        n_states = 1 + (kind == "lstm")
        states = None
        if init:
            names = [f"{d}{s}0" for d in (["fw_", "bw_"] if bidirect else [""]) for s in "hc"[:n_states]]
            feed.update({n: 0.5 * rng.standard_normal((batch, hidden)) for n in names})
            flat = [data(n, [batch, hidden], dtype, grad=True) for n in names]
            groups = [tuple(flat[k:k + n_states]) if n_states == 2 else flat[k] for k in range(0, len(flat), n_states)]
            states = groups if bidirect else groups[0]
        seq_len = data("seq_len", [batch], "int64") if seq else None
        if seq:
            feed["seq_len"] = lengths(batch, steps)
        if bidirect:
            layer = nn.BiRNN(cls(inp, hidden, **kwargs), cls(inp, hidden, **kwargs))
        else:
            layer = nn.RNN(cls(inp, hidden, **kwargs), is_reverse=reverse)
        out, final = layer(x, states, sequence_length=seq_len)
        final = paddle.utils.flatten(final)
        out_shape = [batch, steps, (1 + bidirect) * hidden]
        terms = [("w_out", out, out_shape)] + [(f"w_state{k}", s, [batch, hidden]) for k, s in enumerate(final)]
        loss = weighted_loss(rng, dtype, feed, terms)
        what = (f"paddle.nn.{'BiRNN' if bidirect else 'RNN'}({cls.__name__}({inp}, {hidden}{_kwargs(kwargs)})"
                f"{', is_reverse=True' if reverse else ''}){' with sequence_length' if seq else ''}"
                f"{' from fed initial states' if init else ''}: a while loop over tensor arrays")
        return loss, feed, what + "; loss = sum of mean(value * fed random weights) over outputs and states", {}
    return case


def _array_loop(dtype, x, w, steps):
    """while_loop: states[0] = x; states[i+1] = tanh(states[i] @ W), also written to outputs[i]."""
    i, n = paddle.full([1], 0, "int64"), paddle.full([1], steps, "int64")
    states = paddle.tensor.array_write(x, i, paddle.tensor.create_array(dtype))
    outputs = paddle.tensor.create_array(dtype)

    def body(i, states, outputs):
        h = paddle.tanh(paddle.matmul(paddle.tensor.array_read(states, i), w))
        outputs = paddle.tensor.array_write(h, i, outputs)
        i = paddle.increment(i)
        return i, paddle.tensor.array_write(h, i, states), outputs

    return (*paddle.static.nn.while_loop(lambda i, s, o: i < n, body, [i, states, outputs]), n)


def while_array(readers="stack", batch=2, width=4, steps=3):
    """readers: how the loss reads the arrays. "stack": tensor_array_to_tensor(outputs) once; "two": stacked
    and concatenated (two readers of one array); "reread": stacks the states, slots the loop also reads."""
    def case(rng, dtype):
        feed = {"x": rng.standard_normal((batch, width))}
        x = data("x", [batch, width], dtype, grad=True)
        w = paddle.create_parameter([width, width], dtype)
        _, states, outputs, n = _array_loop(dtype, x, w, steps)
        final = paddle.tensor.array_read(states, n)
        length = paddle.cast(paddle.tensor.array_length(states), dtype)  # steps + 1, no gradient
        source, slots = (states, steps + 1) if readers == "reread" else (outputs, steps)
        stacked, _ = tensor_array_to_tensor(source, axis=0, use_stack=True)
        terms = [("w_stack", stacked, [slots, batch, width])]
        if readers == "two":
            joined, _ = tensor_array_to_tensor(outputs, axis=1, use_stack=False)
            terms.append(("w_concat", joined, [batch, steps * width]))
        loss = weighted_loss(rng, dtype, feed, terms + [("w_final", final * length, [batch, width])])
        what = {"stack": "tensor_array_to_tensor(outputs, axis=0, use_stack=True)",
                "two": "outputs stacked on axis 0 and concatenated on axis 1 (two readers of one array)",
                "reread": "tensor_array_to_tensor(states, axis=0, use_stack=True): slots the loop also reads"}[readers]
        return loss, feed, (f"paddle.static.nn.while_loop over create_array/array_write/array_read: states[0] = x, "
                            f"states[i+1] = outputs[i] = tanh(states[i] @ W), {steps} steps; loss reads {what}, "
                            "plus array_read(states, n) * array_length(states); weighted means"), {}
    return case


def lstm_lm(rng, dtype, batch=2, steps=4, vocab=10, embed=4, hidden=5):
    ids = data("ids", [batch, steps], "int64")
    labels = data("labels", [batch, steps, 1], "int64")
    tokens = rng.integers(1, vocab, (batch, steps + 1))
    feed = {"ids": tokens[:, :-1], "labels": tokens[:, 1:, None]}
    out, _ = nn.LSTM(embed, hidden, num_layers=2)(nn.Embedding(vocab, embed)(ids))
    loss = nn.CrossEntropyLoss()(nn.Linear(hidden, vocab)(out), labels)
    return loss, feed, (f"language model: Embedding({vocab}, {embed}) -> LSTM({embed}, {hidden}, num_layers=2) -> "
                        f"Linear({hidden}, {vocab}) -> CrossEntropyLoss on the next tokens"), {}


CASES = {
    "lstm": fused("LSTM"), "gru": fused("GRU"), "rnn_tanh": fused("RNN_TANH"), "rnn_relu": fused("RNN_RELU"),
    "lstm_l2_bi": fused("LSTM", 2, True), "gru_l2_bi": fused("GRU", 2, True),
    "rnn_tanh_l2_bi": fused("RNN_TANH", 2, True), "rnn_relu_l2_bi": fused("RNN_RELU", 2, True),
    "lstm_bi": fused("LSTM", 1, True),
    "lstm_seq_init": fused("LSTM", 1, seq=True, init=True), "lstm_l2_bi_seq": fused("LSTM", 2, True, seq=True),
    "gru_l2_seq": fused("GRU", 2, seq=True), "gru_bi_seq": fused("GRU", 1, True, seq=True),
    "rnn_relu_bi_seq": fused("RNN_RELU", 1, True, seq=True),
    "lstm_time_major_bi_seq": fused("LSTM", 1, True, seq=True, time_major=True),
    "gru_l2_bi_init": fused("GRU", 2, True, init=True),
    "gru_bi_seq_init": fused("GRU", 1, True, seq=True, init=True),
    "lstm_bi_seq_init": fused("LSTM", 1, True, seq=True, init=True),
    "rnn_lstm_cell": cell_rnn("lstm", init=True), "rnn_gru_cell_reverse_seq": cell_rnn("gru", reverse=True, seq=True),
    "rnn_gru_cell_seq_init": cell_rnn("gru", seq=True, init=True),
    "rnn_simple_cell": cell_rnn("simple"), "rnn_simple_relu_cell_seq": cell_rnn("simple_relu", seq=True),
    "birnn_lstm_seq": cell_rnn("lstm", seq=True, bidirect=True),
    "while_array": while_array(), "while_array_two_readers": while_array("two"),
    "while_array_reread": while_array("reread"),
    "lstm_l3_bi_seq_dropout": fused("LSTM", 3, True, seq=True, dropout=0.4),
    "lstm_lm": lstm_lm,
}
