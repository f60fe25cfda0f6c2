"""Optional inputs of nce (Bias, SampleWeight, the custom distribution's tables) and auc (InsTagWeight), against
values from their definitions. nce's negatives are fixed (custom_neg_classes) or certain (an alias table that
always swaps to class 4)."""

import numpy as np

from . import SlotCase

r = np.random.default_rng(31)
X, W, BIAS = r.standard_normal((3, 4)), r.standard_normal((6, 4)), r.standard_normal((6, 1))
LABEL = np.array([[1], [0], [5]])
WEIGHTS = np.array([[0.5], [2.0], [1.5]])
NEGATIVES = [2, 4]
PROBS = np.array([0.1, 0.2, 0.3, 0.25, 0.15, 0.0])
ALWAYS_4 = {"CustomDistProbs": PROBS, "CustomDistAlias": np.full(6, 4, np.int32),
            "CustomDistAliasProbs": np.zeros(6)}


def nce_cost(samples, bias=None, weights=None, probs=None):
    """Cost of the true class (column 0) and the negatives, with b = num_neg_samples P(class)."""
    logits = np.einsum("bd,bsd->bs", X, W[samples]) + (0 if bias is None else bias[samples, 0])
    o = 1 / (1 + np.exp(-logits))
    b = (samples.shape[1] - 1) * (np.full(samples.shape, 1 / 6) if probs is None else probs[samples])
    cost = np.concatenate([-np.log(o[:, :1] / (o[:, :1] + b[:, :1])), -np.log(b[:, 1:] / (o[:, 1:] + b[:, 1:]))], 1)
    return cost.sum(1, keepdims=True) * (1 if weights is None else weights)


FIXED = np.concatenate([LABEL, np.tile(NEGATIVES, (3, 1))], 1)
SEEN = {"num_total_classes": 6, "num_neg_samples": 2, "custom_neg_classes": NEGATIVES}
DRAWN_4 = np.concatenate([LABEL, np.full((3, 2), 4)], 1)
CUSTOM = {"num_total_classes": 6, "num_neg_samples": 2, "sampler": 2, "seed": 3}
NCE = {"Input": X, "Label": LABEL, "Weight": W}

P = np.array([[0.9], [0.2], [0.6], [0.35]], np.float32)
AUC_LABEL = np.array([[1], [0], [1], [0]])
STATS = {"StatPos": np.zeros((1, 5), np.int64), "StatNeg": np.zeros((1, 5), np.int64)}
AUC = {"Predict": P, "Label": AUC_LABEL, **STATS}

CASES = [
    SlotCase("nce", "Bias", {**NCE, "Bias": BIAS}, {"Cost": nce_cost(FIXED, bias=BIAS)}, SEEN),
    SlotCase("nce", "SampleWeight", {**NCE, "SampleWeight": WEIGHTS}, {"Cost": nce_cost(FIXED, weights=WEIGHTS)},
             SEEN),
    # the custom distribution needs all three tables: without one the op is refused, not run otherwise
    SlotCase("nce", "CustomDistProbs", {**NCE, **ALWAYS_4}, {"Cost": nce_cost(FIXED, probs=PROBS)},
             {**CUSTOM, "custom_neg_classes": NEGATIVES}, overrides=False),
    SlotCase("nce", "CustomDistAlias", {**NCE, **ALWAYS_4},
             {"Cost": nce_cost(DRAWN_4, probs=PROBS), "SampleLabels": DRAWN_4}, CUSTOM, overrides=False),
    SlotCase("nce", "CustomDistAliasProbs", {**NCE, **ALWAYS_4},
             {"Cost": nce_cost(DRAWN_4, probs=PROBS), "SampleLabels": DRAWN_4}, CUSTOM, overrides=False),
    # InsTagWeight 0: a batch of fake data, counted nowhere (the histograms stay empty: AUC 0)
    SlotCase("auc", "InsTagWeight", {**AUC, "InsTagWeight": np.zeros((1, 1), np.float32)},
             {"AUC": np.array(0.0), "StatPosOut": STATS["StatPos"], "StatNegOut": STATS["StatNeg"]},
             {"num_thresholds": 4, "slide_steps": 0}),
]
