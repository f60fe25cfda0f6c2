"""Cases for the class-indexed, tree and sequence losses: every reduction, weights, ignore_index, label
shapes, custom trees, blanks and lengths. warpctc's norm_by_times and warprnnt's fastemit_lambda scale
the gradient on purpose (it is not the loss's): tests/test_loss_ops.py checks those."""

import numpy as np

from . import Case, rng

r = rng(17)


def randn(*shape, scale=1.0):
    return r.standard_normal(shape) * scale


def ids(values, dtype=np.int64):
    return np.array(values, dtype=dtype)


def log_probs(*shape):
    x = randn(*shape)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


WEIGHT4 = r.uniform(0.2, 2.0, 4)
TREE = {"PathTable": ids([[0, 1, -1], [0, 2, 4], [0, 1, 3]]), "PathCode": ids([[1, 0, -1], [0, 1, 1], [1, 1, 0]])}
HSIGMOID_OUT = {"Out": 1, "PreOut": 1}
CTC = {"LogitsLength": ids([5, 4, 3]), "LabelLength": ids([3, 2, 0])}
CTC_OUT = {"Loss": 1, "WarpCTCGrad": 1}
RNNT = {"input_lengths": ids([4, 2], np.int32), "label_lengths": ids([2, 1], np.int32)}
RNNT_OUT = {"loss": 1, "warprnntgrad": 1}

CASES = [
    Case("nll_loss", {"X": randn(5, 4), "Label": ids([1, 0, 3, 3, 2])}),
    Case("nll_loss", {"X": randn(5, 4), "Label": ids([1, 2, 3, 2, 0]), "Weight": WEIGHT4},
         {"ignore_index": 2, "reduction": "mean"}),
    Case("nll_loss", {"X": randn(5, 4), "Label": ids([1, -100, 3, 2, 0])}, {"reduction": "sum"}),
    Case("nll_loss", {"X": randn(5, 4), "Label": ids([1, 0, 3, 3, 2]), "Weight": WEIGHT4},
         {"ignore_index": 3, "reduction": "none"}),
    Case("nll_loss", {"X": randn(2, 4, 2, 3), "Label": r.integers(0, 4, (2, 2, 3)), "Weight": WEIGHT4}),
    Case("nll_loss", {"X": randn(2, 4, 1, 3), "Label": ids([[[0, 1, 1]], [[3, 2, 0]]])},
         {"ignore_index": 1, "reduction": "none"}),
    Case("log_loss", {"Predicted": r.uniform(0.1, 0.9, (5, 1)), "Labels": ids([[1], [0], [1], [1], [0]]) * 1.0}),
    Case("log_loss", {"Predicted": r.uniform(0.1, 0.9, (3, 2)), "Labels": r.uniform(0, 1, (3, 2))}, {"epsilon": 0.05}),
    Case("hierarchical_sigmoid", {"X": randn(4, 3), "W": randn(5, 3), "Label": ids([[0], [5], [3], [2]]),
                                  "Bias": randn(5, 1)}, {"num_classes": 6}, outputs=HSIGMOID_OUT),
    Case("hierarchical_sigmoid", {"X": randn(3, 2), "W": randn(6, 2), "Label": ids([6, 1, 4])},
         {"num_classes": 7}, outputs=HSIGMOID_OUT),
    Case("hierarchical_sigmoid", {"X": randn(3, 2), "W": randn(5, 2), "Label": ids([[0], [1], [2]]), **TREE,
                                  "Bias": randn(5)}, {"num_classes": 5}, outputs=HSIGMOID_OUT),
    # logits beyond the +-40 clip: the loss is flat there, and so is gradc's gradient (not Paddle's)
    Case("hierarchical_sigmoid", {"X": randn(3, 2, scale=50), "W": randn(5, 2), "Label": ids([[0], [1], [2]]),
                                  **TREE}, {"num_classes": 5}, outputs=HSIGMOID_OUT),
    Case("warpctc", {"Logits": randn(5, 3, 4), "Label": ids([[1, 1, 2], [3, 2, 0], [0, 0, 0]], np.int32), **CTC},
         outputs=CTC_OUT),
    Case("warpctc", {"Logits": randn(4, 2, 5), "Label": ids([[0, 4], [1, 1]], np.int32),
                     "LogitsLength": ids([4, 4]), "LabelLength": ids([2, 2])}, {"blank": 2}, outputs=CTC_OUT),
    Case("warprnnt", {"input": log_probs(2, 4, 3, 5), "label": ids([[1, 3], [4, 0]], np.int32), **RNNT},
         outputs=RNNT_OUT),
    Case("warprnnt", {"input": randn(2, 3, 2, 4), "label": ids([[0], [3]], np.int32),
                      "input_lengths": ids([3, 3], np.int32), "label_lengths": ids([1, 1], np.int32)},
         {"blank": 1}, outputs=RNNT_OUT),
    Case("cross_entropy2", {"X": r.dirichlet(np.ones(4), 3), "Label": ids([1, -100, 2])},
         outputs={"Y": 1, "XShape": 1, "MatchX": 1}),
    Case("cross_entropy", {"X": r.dirichlet(np.ones(4), 3), "Label": ids([[1], [3], [2]])}),
    Case("cross_entropy", {"X": r.dirichlet(np.ones(3), (2, 2)), "Label": ids([[2, 5], [5, 0]])}, {"ignore_index": 5}),
    Case("cross_entropy", {"X": r.dirichlet(np.ones(4), 3), "Label": r.dirichlet(np.ones(4), 3)}, {"soft_label": True}),
    *(Case("identity_loss", {"X": randn(3, 4)}, {"reduction": reduction}) for reduction in (0, 1, 2)),
    Case("softmax_with_cross_entropy", {"Logits": randn(4, 5), "Label": ids([[1], [0], [4], [2]])},
         {"numeric_stable_mode": False}),
    Case("softmax_with_cross_entropy", {"Logits": r.dirichlet(np.ones(5), 3), "Label": r.dirichlet(np.ones(5), 3)},
         {"use_softmax": False, "soft_label": True}),
]
