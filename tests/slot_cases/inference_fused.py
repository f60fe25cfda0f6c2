"""Optional inputs of gradc.ops.inference_fused and inference_rnn. fused_conv2d's Bias adds per channel and its
ResidualData (with fuse_residual_connection) after it; fused_matmul's ResidualData adds to the product. fusion_gru /
fusion_lstm are their lod_rnn op on X WeightX (identity activations, hidden size 1, as tests/slot_cases/lod_rnn.py):
lstm z = x WeightX + h0 WeightH, c = cand i + c0 f; gru u, r = h0 W_ur, c = (r h0) W_c, h = h0 - u h0 + u c."""

import numpy as np

from gradc import LoDTensor

from . import SlotCase

IDENTITY_LSTM = {"gate_activation": "identity", "cell_activation": "identity", "candidate_activation": "identity",
                 "use_peepholes": False}
IDENTITY_GRU = {"activation": "identity", "gate_activation": "identity"}
ONE_STEP = [[0, 1]]
FIRST_ID = LoDTensor(np.array([[0]]), ONE_STEP)


def rows(*values):
    return np.array([values], np.float64)


def image(value, channels=1):
    return np.full((1, channels, 2, 2), value, np.float64)


IDENTITY_ATTENTION = {"gate_activation": "identity", "cell_activation": "identity", "candidate_activation": "identity"}
# one row x = 1, C0 0, the attention weights of x and the cell 1 and 0, LSTMWeight's hidden row ones
ATTENTION_LSTM = {"X": LoDTensor(rows(1), ONE_STEP), "C0": rows(0), "AttentionWeight": np.array([[1.0], [0.0]]),
                  "LSTMWeight": np.array([[1.0] * 4, [0.0] * 4]), "LSTMBias": rows(0, 0, 0, 0)}
# rows 1 and 3 pooled: uniformly (2) when AttentionScalar 0 zeroes the scores; with scalar 1 and bias -2 the scores
# are relu([1, 3] - 2) = [0, 1], pooling P = (1 + 3e) / (1 + e); with LSTMWeight's input row ones each gate is the
# pooled p: c1 = p p, h1 = c1 p, c2 = p c1 + p p, h2 = c2 p
TWO_ROWS = {**ATTENTION_LSTM, "X": LoDTensor(np.array([[1.0], [3.0]]), [[0, 2]]),
            "LSTMWeight": np.array([[0.0] * 4, [1.0] * 4])}
P = (1 + 3 * np.e) / (1 + np.e)


CASES = [
    # two sequences of one row: x0 [1], [2]; x1 [10], [20] per sequence; W ones: 1 + 10 + 5 = 16, 2 + 20 + 5 = 27
    SlotCase("fusion_seqexpand_concat_fc", "FCBias", {"X": [LoDTensor(np.array([[1.0], [2.0]]), [[0, 1, 2]]),
                                                            np.array([[10.0], [20.0]])],
                                                      "FCWeight": np.ones((2, 1)), "FCBias": rows(5)},
             {"Out": np.array([[16.0], [27.0]])}, overrides=False),
    # 1 x 1 conv of ones by 2: 2, plus Bias 3
    SlotCase("fused_conv2d", "Bias", {"Input": image(1), "Filter": image(2)[:, :, :1, :1], "Bias": np.array([3.0])},
             {"Output": image(5)}, overrides=False),
    # 2 plus the residual 5
    SlotCase("fused_conv2d", "ResidualData", {"Input": image(1), "Filter": image(2)[:, :, :1, :1],
                                              "ResidualData": image(5)},
             {"Output": image(7)}, {"fuse_residual_connection": True}, overrides=False),
    # [1, 2] [3, 4]^T = 11, plus 1
    SlotCase("fused_matmul", "ResidualData", {"X": rows(1, 2), "Y": rows(3, 4).T, "ResidualData": rows(1)},
             {"Out": rows(12)}, overrides=False),
    # x WeightX = 0: u = r = 2, c = (2 * 2) * 1 = 4, h = 2 - 4 + 8 = 6
    SlotCase("fusion_gru", "H0", {"X": LoDTensor(rows(1), ONE_STEP), "WeightX": rows(0, 0, 0), "H0": rows(2),
                                  "WeightH": rows(1, 1, 1)}, {"Hidden": rows(6)}, IDENTITY_GRU, overrides=False),
    # u = 1, r = 2, c = 3 from Bias (no previous hidden): h = u c = 3
    SlotCase("fusion_gru", "Bias", {"X": LoDTensor(rows(1), ONE_STEP), "WeightX": rows(0, 0, 0),
                                    "WeightH": rows(1, 1, 1), "Bias": rows(1, 2, 3)},
             {"Hidden": rows(3)}, IDENTITY_GRU, overrides=False),
    # z = h0 WeightH = [2, 2, 2, 2]: c = 2 * 2 + 0 = 4, h = o c = 8 (H0 comes with C0, here zeros)
    SlotCase("fusion_lstm", "H0", {"X": LoDTensor(rows(1), ONE_STEP), "WeightX": rows(0, 0, 0, 0),
                                   "WeightH": rows(1, 1, 1, 1), "Bias": rows(0, 0, 0, 0), "H0": rows(2), "C0": rows(0)},
             {"Hidden": rows(8), "Cell": rows(4)}, IDENTITY_LSTM, overrides=False),
    # z = x WeightX = [1, 1, 1, 1]: c = 1 * 1 + 3 * 1 = 4, h = 1 * 4
    SlotCase("fusion_lstm", "C0", {"X": LoDTensor(rows(1), ONE_STEP), "WeightX": rows(1, 1, 1, 1),
                                   "WeightH": rows(1, 1, 1, 1), "Bias": rows(0, 0, 0, 0), "C0": rows(3)},
             {"Hidden": rows(4), "Cell": rows(4)}, IDENTITY_LSTM, overrides=False),
    # fused_embedding_fc_lstm reads XX from the table row of the id (no gate bias): as fusion_lstm's cases above
    SlotCase("fused_embedding_fc_lstm", "H0", {"Ids": FIRST_ID, "Embeddings": rows(0, 0, 0, 0),
                                               "WeightH": rows(1, 1, 1, 1), "Bias": rows(5, 5, 5, 5), "H0": rows(2),
                                               "C0": rows(0)},
             {"Hidden": rows(8), "Cell": rows(4)}, IDENTITY_LSTM, overrides=False),
    SlotCase("fused_embedding_fc_lstm", "C0", {"Ids": FIRST_ID, "Embeddings": rows(1, 1, 1, 1),
                                               "WeightH": rows(1, 1, 1, 1), "Bias": rows(5, 5, 5, 5), "C0": rows(3)},
             {"Hidden": rows(4), "Cell": rows(4)}, IDENTITY_LSTM, overrides=False),
    # attention_lstm, identity activations, D = M = 1: LSTMWeight's hidden row over its input row; gates f, i, o, cand
    SlotCase("attention_lstm", "H0", {**ATTENTION_LSTM, "X": LoDTensor(rows(0), ONE_STEP), "H0": rows(2)},
             {"Hidden": rows(8), "Cell": rows(4)}, IDENTITY_ATTENTION, overrides=False),
    SlotCase("attention_lstm", "AttentionBias", {**ATTENTION_LSTM, "LSTMWeight": np.array([[0.0] * 4, [1.0] * 4]),
                                                 "AttentionBias": rows(2)},
             {"AttentionedX": rows(3), "Hidden": rows(1)}, IDENTITY_ATTENTION, overrides=False),
    SlotCase("attention_lstm", "AttentionScalar", {**TWO_ROWS, "AttentionScalar": rows(0)},
             {"Hidden": np.array([[8.0], [24.0]]), "Cell": np.array([[4.0], [12.0]])}, IDENTITY_ATTENTION,
             overrides=False),
    SlotCase("attention_lstm", "AttentionScalarBias", {**TWO_ROWS, "AttentionScalar": rows(1),
                                                       "AttentionScalarBias": rows(-2)},
             {"Hidden": np.array([[P ** 3], [(P * P * P + P * P) * P]])}, IDENTITY_ATTENTION, overrides=False),
    # multi_gru, one layer, identity activations: each direction is fusion_gru's Bias case above, h = u c = 3
    SlotCase("multi_gru", "Bias", {"X": LoDTensor(rows(1), ONE_STEP), "WeightX": [rows(0, 0, 0)] * 2,
                                   "WeightH": [rows(1, 1, 1)] * 2, "Bias": [rows(1, 2, 3)] * 2},
             {"Hidden": rows(3, 3)}, IDENTITY_GRU, overrides=False),
]
