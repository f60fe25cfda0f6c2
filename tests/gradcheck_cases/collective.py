"""Cases for Paddle's collective ops (gradc.ops.collective) over a group of one rank (nranks 1), where each is
exactly defined: a sum over one rank is X, c_embedding looks up the rows W holds from start_index (ids outside them
give zeros), c_softmax_with_cross_entropy is softmax_with_cross_entropy over every class. tests/test_ranks.py checks
the same ops across two ranks."""

import numpy as np

from . import Case, rng
from .second_order import second_order

r = rng(131)


def randn(*shape):
    return r.standard_normal(shape)


ONE = {"rank": 0, "nranks": 1, "ring_id": 0}
IDS = np.array([[0, 3, 5], [2, 7, 4]], np.int64)   # W holds ids 2 .. 6: 0 and 7 fall outside it
LABEL = np.array([[2], [0], [-100], [4]], np.int64)   # one row ignored

CASES = [
    Case("c_identity", {"X": randn(3, 4)}, {"ring_id": 0}),
    Case("mp_allreduce_sum", {"X": randn(3, 4)}),
    Case("c_allreduce_sum", {"X": randn(2, 5)}),
    Case("all_reduce", {"x": randn(3, 4)}, {"reduce_type": 0}),
    Case("c_split", {"X": randn(3, 4)}, ONE),
    Case("c_concat", {"X": randn(2, 3, 4)}, ONE),
    Case("all_gather", {"x": randn(3, 4)}, {"nranks": 1}),
    Case("reduce_scatter", {"x": randn(3, 4)}, {"nranks": 1}),
    Case("c_embedding", {"W": randn(5, 3), "Ids": IDS}, {"start_index": 2, "vocab_size": 10}),
    Case("c_softmax_with_cross_entropy", {"Logits": randn(4, 5), "Label": LABEL}, ONE),
    Case("c_softmax_with_cross_entropy", {"Logits": randn(4, 5), "Label": LABEL.reshape(4)}, ONE),
    # the grads of c_identity and c_split are collectives, differentiated by their own makers
    second_order("c_identity", {"X": randn(3, 4)}, grad_type="all_reduce"),
    second_order("c_split", {"X": randn(3, 4)}, ONE, grad_type="c_concat"),
    second_order("all_gather", {"x": randn(3, 4)}, {"nranks": 1}, grad_type="reduce_scatter"),
    second_order("c_embedding", {"W": randn(5, 3), "Ids": IDS}, {"start_index": 2}),
    second_order("c_softmax_with_cross_entropy", {"Logits": randn(4, 5), "Label": LABEL}, ONE),
]

LABELS = np.array([[1, 4], [0, -100], [3, 3], [2, 0]], np.int64)   # two labels a row; one ignored, one repeated
WEIGHTS = np.array([[0.7, 0.6], [0.2, 0.5], [0.4, 0.3], [1.0, 0.1]])   # rows not summing to 1
CASES += [
    Case("c_softmax_with_multi_label_cross_entropy", {"Logits": randn(4, 5), "Label": LABELS, "SmoothWeight": WEIGHTS},
         {**ONE, "sum_multi_label_loss": True}),
    Case("c_softmax_with_multi_label_cross_entropy", {"Logits": randn(4, 5), "Label": LABELS, "SmoothWeight": WEIGHTS},
         {**ONE, "sum_multi_label_loss": False}),
]

CASES += [second_order("c_softmax_with_multi_label_cross_entropy",
                       {"Logits": randn(4, 5), "Label": LABELS, "SmoothWeight": WEIGHTS},
                       {**ONE, "sum_multi_label_loss": summed}) for summed in (True, False)]
