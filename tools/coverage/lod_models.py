"""Rows: Paddle 1.x/2.x text models over LoD tensors: the dynamic LSTM and GRU, gru_unit, CRF decoding, chunk
evaluation, edit distance and beam search (the ops appended as those versions' layers did)."""

import paddle
from paddle.static import nn as snn

from .legacy_shim import _outputs, append
from .spec import f, ints, seq, seq_ids, table

D = 3   # hidden size


def parameter(*shape: int):
    return paddle.static.create_parameter(list(shape), "float32")


def dynamic_lstm(x, h0=None, c0=None, use_peepholes=True, **attrs):
    """fluid.layers.dynamic_lstm: x is the [rows, 4D] projection; Weight [D, 4D], Bias [1, 7D] with peepholes."""
    inputs = {"Input": x, "Weight": parameter(D, 4 * D), "Bias": parameter(1, (7 if use_peepholes else 4) * D)}
    inputs.update({slot: value for slot, value in (("H0", h0), ("C0", c0)) if value is not None})
    hidden, _, _, _ = _outputs("lstm", inputs, dict.fromkeys(("Hidden", "Cell", "BatchGate", "BatchCellPreAct"),
                                                             x.dtype),
                               {"use_peepholes": use_peepholes, "is_reverse": False, "gate_activation": "sigmoid",
                                "cell_activation": "tanh", "candidate_activation": "tanh", **attrs})
    return hidden


def dynamic_gru(x, h0=None, **attrs):
    """fluid.layers.dynamic_gru: x is the [rows, 3D] projection; Weight [D, 3D], Bias [1, 3D]."""
    inputs = {"Input": x, "Weight": parameter(D, 3 * D), "Bias": parameter(1, 3 * D)}
    if h0 is not None:
        inputs["H0"] = h0
    *_, hidden = _outputs("gru", inputs, dict.fromkeys(("BatchGate", "BatchResetHiddenPrev", "BatchHidden", "Hidden"),
                                                       x.dtype),
                          {"is_reverse": False, "gate_activation": "sigmoid", "activation": "tanh",
                           "origin_mode": False, **attrs})
    return hidden


def gru_unit(x, h, bias=True, **attrs):
    """fluid.layers.gru_unit: x [N, 3D], the previous hidden h [N, D]."""
    inputs = {"Input": x, "HiddenPrev": h, "Weight": parameter(D, 3 * D)}
    if bias:
        inputs["Bias"] = parameter(1, 3 * D)
    *_, hidden = _outputs("gru_unit", inputs, dict.fromkeys(("Gate", "ResetHiddenPrev", "Hidden"), x.dtype),
                          {"activation": 2, "gate_activation": 1, "origin_mode": False, **attrs})
    return hidden


def lstm_classifier(ids, label):
    """embedding -> fc to 4D -> dynamic_lstm -> max sequence_pool -> fc -> cross entropy, as Paddle 1.x text models."""
    table = parameter(20, 5)
    words = append("lookup_table", {"W": table, "Ids": ids}, {"padding_idx": -1}, dtype=table.dtype)
    words.desc.set_shape([-1, 5])
    hidden = dynamic_lstm(snn.fc(words, 4 * D))
    logits = snn.fc(snn.sequence_pool(hidden, "max"), 3)
    return paddle.mean(paddle.nn.functional.softmax_with_cross_entropy(logits, label))


ROWS = table(
    "lod_models",
    ("dynamic_lstm", lambda x: dynamic_lstm(x), seq(4 * D, lengths=(3, 1, 4))),
    ("dynamic_lstm_no_peepholes", lambda x: dynamic_lstm(x, use_peepholes=False), seq(4 * D, lengths=(2, 4))),
    ("dynamic_lstm_reverse", lambda x: dynamic_lstm(x, is_reverse=True), seq(4 * D, lengths=(3, 2, 2))),
    ("dynamic_lstm_h0_c0", lambda x, h0, c0: dynamic_lstm(x, h0, c0), seq(4 * D, lengths=(2, 4, 1)), f(3, D),
     f(3, D)),
    ("dynamic_lstm_h0_c0_reverse", lambda x, h0, c0: dynamic_lstm(x, h0, c0, use_peepholes=False, is_reverse=True),
     seq(4 * D, lengths=(1, 3)), f(2, D), f(2, D)),
    ("dynamic_lstm_activations", lambda x: dynamic_lstm(x, cell_activation="relu", candidate_activation="identity"),
     seq(4 * D, lengths=(2, 3))),
    ("dynamic_gru", lambda x: dynamic_gru(x), seq(3 * D, lengths=(3, 1, 4))),
    ("dynamic_gru_origin_mode", lambda x: dynamic_gru(x, origin_mode=True), seq(3 * D, lengths=(2, 4))),
    ("dynamic_gru_reverse", lambda x: dynamic_gru(x, is_reverse=True), seq(3 * D, lengths=(3, 2, 2))),
    ("dynamic_gru_h0", lambda x, h0: dynamic_gru(x, h0), seq(3 * D, lengths=(2, 4, 1)), f(3, D)),
    ("dynamic_gru_h0_origin_reverse", lambda x, h0: dynamic_gru(x, h0, origin_mode=True, is_reverse=True),
     seq(3 * D, lengths=(1, 3)), f(2, D)),
    ("dynamic_gru_activations", lambda x: dynamic_gru(x, activation="relu", gate_activation="sigmoid"),
     seq(3 * D, lengths=(2, 3))),
    ("gru_unit", lambda x, h: gru_unit(x, h), f(4, 3 * D), f(4, D)),
    ("gru_unit_origin_mode", lambda x, h: gru_unit(x, h, origin_mode=True), f(4, 3 * D), f(4, D)),
    ("gru_unit_no_bias_activations", lambda x, h: gru_unit(x, h, bias=False, activation=3, gate_activation=2),
     f(3, 3 * D), f(3, D)),
    ("lstm_text_classifier", lstm_classifier, seq_ids(20, lengths=(4, 2, 5)), ints(3, 3, 1)),
)
