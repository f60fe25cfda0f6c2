"""Second-derivative cases (as in second_order.py) for the fused rnn op's grad, whose maker unrolls the recurrence
(gradc.ops.rnn_double): every mode, 1 and 2 layers, one and two directions, SequenceLength (a zero length too),
dropout between layers with a seeded mask, is_test; over a time dim of unknown size (rnn_grad_grad: the kernels on
duals). Tiny sizes keep the central differences cheap."""

from __future__ import annotations

import numpy as np

from gradc.rnn_shape import RnnShape

from . import Case, rng
from .lod_rnn import third_order
from .second_order import second_order

r = rng(61)
STEPS, BATCH, INPUT, HIDDEN = 3, 2, 2, 2


def rnn_second_order(mode: str, layers: int = 1, directions: int = 1, lengths=None, steps: int = STEPS,
                     unknown_steps: bool = False, size: int | None = None, **attrs):
    """``size``: the input and hidden sizes (INPUT, HIDDEN unless given)."""
    input_size, hidden = (INPUT, HIDDEN) if size is None else (size, size)
    shape = RnnShape(mode, layers, directions, input_size, hidden)
    inputs = {"Input": r.standard_normal((steps, BATCH, input_size)),
              "PreState": [0.5 * r.standard_normal((layers * directions, BATCH, hidden)) for _ in range(shape.states)],
              "WeightList": [r.uniform(-0.8, 0.8, s) for s in shape.weight_shapes()]}
    if mode == "RNN_RELU":   # keep the pre-activations away from relu's kink, where differences jump
        inputs["WeightList"] = [w + np.sign(w) * 0.2 for w in inputs["WeightList"]]
    if lengths is not None:
        inputs["SequenceLength"] = np.array(lengths, np.int64)
    dropout = attrs.get("dropout_prob", 0) > 0 and not attrs.get("is_test")
    return second_order("rnn", inputs, {"mode": mode, "num_layers": layers, "is_bidirec": directions == 2,
                                        "input_size": input_size, "hidden_size": hidden, **attrs},
                        counts={"State": shape.states, "DropoutState": int(dropout)}, rtol=1e-4, atol=1e-6,
                        unknown={"Input": [0], "Out": [0]} if unknown_steps else None)


CASES = [rnn_second_order(mode) for mode in ("LSTM", "GRU", "RNN_TANH", "RNN_RELU")] + [
    rnn_second_order("LSTM", 2, 2, steps=2),
    rnn_second_order("GRU", 1, 2, [3, 1]),
    rnn_second_order("LSTM", 1, 1, [0, 2]),
    rnn_second_order("RNN_TANH", 2, 1, [2, 3]),
    rnn_second_order("GRU", 2, 1, None, steps=2, dropout_prob=0.5, seed=3),
    rnn_second_order("RNN_TANH", 2, 2, [1, 2], steps=2, dropout_prob=0.4, is_test=True),
]
UNKNOWN_STEPS = [  # a time dim of unknown size: rnn_grad_grad, the kernels on duals along one direction
    rnn_second_order("LSTM", 2, 2, unknown_steps=True),
    rnn_second_order("GRU", 1, 2, [3, 1], unknown_steps=True),
    rnn_second_order("RNN_TANH", 1, 1, [0, 2], unknown_steps=True),
    rnn_second_order("RNN_RELU", 2, 1, unknown_steps=True),
    rnn_second_order("GRU", 2, 1, None, steps=2, dropout_prob=0.5, seed=3, unknown_steps=True),
]
CASES += UNKNOWN_STEPS



def third_order_rnn(mode: str, layers: int = 1, directions: int = 1, lengths=None, **attrs) -> Case:
    """A third derivative over a time dim of unknown size, through rnn_grad_grad, checked at Input, PreState,
    the hidden-side weights W_hh, Out's seed and two of the second backward's directions (w2 weights, checked inputs
    here), so that every output slot of the op is checked and the case stays cheap."""
    case = third_order(rnn_second_order(mode, layers, directions, lengths, steps=2, unknown_steps=True, size=1,
                                        **attrs),
                       "rnn_grad_grad")
    w_hh = "WeightList1"   # the first W_hh (Paddle's order: W_ih, W_hh of each layer and direction, then biases)

    def build() -> dict:
        built = case.program()
        stepped = [f"w2_{name}@GRAD" for name in ("Input0", w_hh)]
        for name in stepped:
            built["program"].global_block.var(name).stop_gradient = False
        return {**built, "wrt": ["Input0", "PreState0", w_hh, "w1_Out0.out", *stepped]}

    return Case("rnn_grad_grad", {}, case.attrs, program=build, rtol=1e-4, atol=1e-6)


# third derivatives over a time dim of unknown size: rnn_grad_grad along two directions (duals nested twice)
CASES += [third_order_rnn("LSTM", lengths=[2, 1]), third_order_rnn("GRU", 1, 2),
          third_order_rnn("RNN_RELU", 2, 1, dropout_prob=0.5, seed=3)]
# fourth derivatives: rnn_grad_grad along three directions, its directions' grads checked (the w2 and w3 weights)
CASES += [Case("rnn_grad_grad", {}, case.attrs, program=third_order(case, "rnn_grad_grad", order=4).program,
               rtol=1e-4, atol=1e-6) for case in (CASES[-3], CASES[-2])]
