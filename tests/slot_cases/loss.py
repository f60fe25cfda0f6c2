"""Optional inputs of the losses: class weights, positive weights, biases, custom trees and sequence lengths,
against values from the losses' definitions (tests/loss_reference.py)."""

import numpy as np

from loss_reference import ctc_loss, default_tree_path, hsigmoid_loss

from . import SlotCase

r = np.random.default_rng(23)
X = r.standard_normal((4, 3))
LABEL = np.array([2, 0, 2, 1])
WEIGHT = np.array([0.5, 2.0, 1.5])
picked = WEIGHT[LABEL]

LOGITS = r.standard_normal((3, 4))
TARGET = r.uniform(0, 1, (3, 4))
POS_WEIGHT = r.uniform(0.5, 3.0, (3, 4))

FEATURES, W, BIAS = r.standard_normal((3, 2)), r.standard_normal((5, 2)), r.standard_normal((5, 1))
CLASSES = np.array([[0], [5], [3]])
TABLE = np.array([[0, 2, -1], [1, 3, 4], [2, -1, -1]])
CODE = np.array([[1, 0, -1], [0, 0, 1], [1, -1, -1]])
CUSTOM = [list(zip(t[t >= 0], c[t >= 0])) for t, c in zip(TABLE, CODE)]
DEFAULT = [default_tree_path(int(c), 6) for c in CLASSES[:, 0]]


def _log_softmax(x):
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


STEPS = r.standard_normal((4, 2, 3))  # [max time, batch, classes]
CTC_LABEL = np.array([[1, 2], [2, 0]], np.int32)
TIMES, SIZES = np.array([4, 2]), np.array([2, 1])
CTC_EXPECTED = np.array([[ctc_loss(_log_softmax(STEPS[:t, b]), CTC_LABEL[b, :n], 0)]
                         for b, (t, n) in enumerate(zip(TIMES, SIZES))])
CTC_INPUTS = {"Logits": STEPS, "Label": CTC_LABEL, "LogitsLength": TIMES, "LabelLength": SIZES}

CASES = [
    SlotCase("nll_loss", "Weight", {"X": X, "Label": LABEL, "Weight": WEIGHT},
             {"Out": -(X[np.arange(4), LABEL] * picked).sum() / picked.sum(), "Total_weight": picked.sum()}),
    SlotCase("sigmoid_cross_entropy_with_logits", "pos_weight",
             {"X": LOGITS, "Label": TARGET, "pos_weight": POS_WEIGHT},
             {"Out": (1 - TARGET) * LOGITS + POS_WEIGHT * np.log1p(np.exp(-LOGITS))}),
    SlotCase("hierarchical_sigmoid", "Bias", {"X": FEATURES, "W": W, "Label": CLASSES, "Bias": BIAS},
             {"Out": np.array([[hsigmoid_loss(x, W, p, BIAS, steps=3)] for x, p in zip(FEATURES, DEFAULT)])},
             {"num_classes": 6}),
    # a custom tree needs both its tables: without one the op fails, so these cannot run without the slot
    *(SlotCase("hierarchical_sigmoid", slot, {"X": FEATURES, "W": W, "Label": CLASSES, "PathTable": TABLE,
                                              "PathCode": CODE},
               {"Out": np.array([[hsigmoid_loss(x, W, p, steps=3)] for x, p in zip(FEATURES, CUSTOM)])},
               {"num_classes": 6}, overrides=False) for slot in ("PathTable", "PathCode")),
    # Paddle reads unpadded (LoD) sequences when the lengths are absent, which gradc does not keep
    *(SlotCase("warpctc", slot, CTC_INPUTS, {"Loss": CTC_EXPECTED}, overrides=False)
      for slot in ("LogitsLength", "LabelLength")),
]
