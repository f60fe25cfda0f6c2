"""Optional inputs of gradc.ops.rnn and gradc.ops.tensor_array."""

import numpy as np

from gradc.executor.tensor_array import TensorArray

from . import SlotCase

r = np.random.default_rng(5)
X = r.standard_normal((3, 2, 2))        # [T, B, I]
H0 = r.standard_normal((1, 2, 3))       # [L * D, B, H]
WEIGHTS = [r.uniform(-0.7, 0.7, s) for s in [(3, 2), (3, 3), (3,), (3,)]]
LENGTHS = np.array([3, 1], np.int64)


def _tanh_rnn(x, h):
    """A plain tanh RNN over the steps of one sequence: (outputs, final state)."""
    w_ih, w_hh, b_ih, b_hh = WEIGHTS
    outs = []
    for step in x:
        h = np.tanh(step @ w_ih.T + b_ih + h @ w_hh.T + b_hh)
        outs.append(h)
    return np.stack(outs), h


def _padded_batch():
    """Each sequence alone, trimmed to its length; its outputs padded with zeros, its state the last valid one."""
    out, state = np.zeros((3, 2, 3)), np.zeros((1, 2, 3))
    for b, length in enumerate(LENGTHS):
        steps, state[0, b] = _tanh_rnn(X[:length, b], H0[0, b])
        out[:length, b] = steps
    return out, state


OUT, STATE = _padded_batch()

CASES = [
    SlotCase("rnn", "SequenceLength", {"Input": X, "PreState": [H0], "WeightList": WEIGHTS, "SequenceLength": LENGTHS},
             {"Out": OUT, "State": [STATE]}, {"mode": "RNN_TANH", "input_size": 2, "hidden_size": 3}),
    # a slot never written: zeros shaped like X_W (without X_W that read is an error)
    SlotCase("read_from_array", "X_W", {"X": TensorArray([np.ones((2, 3))]), "I": np.array([2]),
                                         "X_W": np.ones((2, 3))},
             {"Out": np.zeros((2, 3))}, overrides=False),
]
