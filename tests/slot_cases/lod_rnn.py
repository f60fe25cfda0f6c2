"""Optional inputs of gradc.ops.lod_rnn, with identity activations and hidden size 1 so the step is arithmetic:
lstm's H0 (which needs C0) enters through Weight (z = x + h0 W) and C0 through the forget gate (c = cand i + c0 f);
gru's H0 through both weights (u, r = h0 W_ur, c = (r h0) W_c, h = h0 - u h0 + u c) and its Bias into the gates;
gru_unit's Bias likewise."""

import numpy as np

from gradc import LoDTensor

from . import SlotCase

IDENTITY = {"gate_activation": "identity", "cell_activation": "identity", "candidate_activation": "identity",
            "use_peepholes": False}
ONE_STEP = [[0, 1]]


def rows(*values):
    return np.array([values], np.float64)


CASES = [
    # z = [2, 2, 2, 2]: c = 2 * 2 + 0 = 4, h = o c = 8 (H0 comes with C0, here zeros)
    SlotCase("lstm", "H0", {"Input": LoDTensor(rows(0, 0, 0, 0), ONE_STEP), "H0": rows(2), "C0": rows(0),
                            "Weight": rows(1, 1, 1, 1), "Bias": rows(0, 0, 0, 0)},
             {"Hidden": rows(8), "Cell": rows(4)}, IDENTITY, overrides=False),
    # z = [1, 1, 1, 1]: c = 1 * 1 + 3 * 1 = 4, h = 1 * 4
    SlotCase("lstm", "C0", {"Input": LoDTensor(rows(1, 1, 1, 1), ONE_STEP), "C0": rows(3), "Weight": rows(1, 1, 1, 1),
                            "Bias": rows(0, 0, 0, 0)},
             {"Hidden": rows(4), "Cell": rows(4)}, IDENTITY, overrides=False),
    # u = r = 2, c = (2 * 2) * 1 = 4, h = 2 - 2 * 2 + 2 * 4 = 6
    SlotCase("gru", "H0", {"Input": LoDTensor(rows(0, 0, 0), ONE_STEP), "H0": rows(2), "Weight": rows(1, 1, 1)},
             {"Hidden": rows(6)}, {"activation": "identity", "gate_activation": "identity"}, overrides=False),
    # u = 1, r = 2, c = 3 (no previous hidden): h = u c = 3
    SlotCase("gru", "Bias", {"Input": LoDTensor(rows(0, 0, 0), ONE_STEP), "Weight": rows(1, 1, 1),
                             "Bias": rows(1, 2, 3)},
             {"Hidden": rows(3)}, {"activation": "identity", "gate_activation": "identity"}, overrides=False),
    # u = 1 + 1, r = 2 + 1, c = 3 + 3 * 1: h = u (c - h_prev) + h_prev = 11
    SlotCase("gru_unit", "Bias", {"Input": rows(0, 0, 0), "HiddenPrev": rows(1), "Weight": rows(1, 1, 1),
                                  "Bias": rows(1, 2, 3)},
             {"Gate": rows(2, 3, 6), "ResetHiddenPrev": rows(3), "Hidden": rows(11)},
             {"activation": 0, "gate_activation": 0}, overrides=False),
]
