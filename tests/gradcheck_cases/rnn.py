"""Cases for the fused rnn op: every mode x 1 and 2 layers x uni- and bidirectional x with and without
SequenceLength, plus dropout between layers (seeded, so the mask is the same in every run) and is_test.
Small sizes keep the central differences cheap: 3 steps, batch 2, input 2, hidden 2."""

import itertools

import numpy as np

from gradc.rnn_shape import RnnShape

from . import Case, rng

r = rng(8)
STEPS, BATCH, INPUT, HIDDEN = 3, 2, 2, 2


def rnn_case(mode: str, layers: int, directions: int, lengths=None, **attrs) -> Case:
    shape = RnnShape(mode, layers, directions, INPUT, HIDDEN)
    inputs = {"Input": r.standard_normal((STEPS, BATCH, INPUT)),
              "PreState": [0.5 * r.standard_normal((layers * directions, BATCH, HIDDEN)) for _ in range(shape.states)],
              "WeightList": [r.uniform(-0.8, 0.8, s) for s in shape.weight_shapes()]}
    if lengths is not None:
        inputs["SequenceLength"] = np.array(lengths, np.int64)
    outputs = {"Out": 1, "State": shape.states, "Reserve": 1}
    if attrs.get("dropout_prob") and not attrs.get("is_test"):
        outputs["DropoutState"] = 1
    return Case("rnn", inputs, {"mode": mode, "num_layers": layers, "is_bidirec": directions == 2,
                                "input_size": INPUT, "hidden_size": HIDDEN, **attrs}, outputs=outputs)


CASES = [rnn_case(mode, layers, directions, lengths)
         for mode, layers, directions, lengths in itertools.product(
             ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"], [1, 2], [1, 2], [None, [3, 1]])]
CASES += [
    rnn_case("GRU", 2, 2, [0, 2]),   # a sequence of length 0: Out zero, State = PreState
    rnn_case("LSTM", 2, 2, [2, 3], dropout_prob=0.4, seed=5),
    rnn_case("RNN_TANH", 2, 1, None, dropout_prob=0.5, seed=9),
    rnn_case("LSTM", 2, 2, [3, 2], dropout_prob=0.4, is_test=True),
]
