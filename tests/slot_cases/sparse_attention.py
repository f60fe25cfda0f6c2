"""Cases for sparse_attention's optional masks (gradc.ops.sparse_attention): a 0 in KeyPaddingMask or AttnMask drops
that entry from its row's softmax; out from the attention written here with numpy over a full layout."""

import numpy as np

from . import SlotCase

R = np.random.default_rng(71)
Q, K, V = (R.standard_normal((1, 1, 3, 4)) for _ in range(3))
FULL = {"Q": Q, "K": K, "V": V, "Offset": np.array([[[0, 3, 6, 9]]], np.int32),
        "Columns": np.array([[[0, 1, 2] * 3]], np.int32)}


def attention(keep: np.ndarray) -> np.ndarray:
    """softmax(q k^T / 2 over the kept keys) v of the one head."""
    scores = np.where(keep, Q[0, 0] @ K[0, 0].T / 2, -np.inf)
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return ((p / p.sum(-1, keepdims=True)) @ V[0, 0])[None, None]


PADDING = np.array([[1.0, 0.0, 1.0]])   # key 1 masked for every row
ATTN = np.ones((3, 3))
ATTN[2, 0] = 0.0   # row 2 does not see key 0
CASES = [
    SlotCase("sparse_attention", "KeyPaddingMask", {**FULL, "KeyPaddingMask": PADDING},
             {"Out": attention(np.broadcast_to(PADDING != 0, (3, 3)))}),
    SlotCase("sparse_attention", "AttnMask", {**FULL, "AttnMask": ATTN}, {"Out": attention(ATTN != 0)}),
]
