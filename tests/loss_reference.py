"""Reference values of the tree and sequence losses by their definitions, one sample at a time and by brute
force over every path (tiny sizes only): independent of gradc's vectorised recursions."""

from __future__ import annotations

import itertools
import math

import numpy as np


def ctc_loss(log_probs: np.ndarray, label, blank: int) -> float:
    """-log of the total probability of the alignments (one class per step, log_probs [T, C]) that collapse
    to ``label`` once repeats are merged and blanks dropped."""
    steps, classes = log_probs.shape
    total = -math.inf
    for path in itertools.product(range(classes), repeat=steps):
        collapsed = [c for i, c in enumerate(path) if c != blank and (i == 0 or c != path[i - 1])]
        if collapsed == list(label):
            total = np.logaddexp(total, sum(log_probs[t, c] for t, c in enumerate(path)))
    return -total


def rnnt_loss(log_probs: np.ndarray, label, blank: int) -> float:
    """-log of the total probability of the lattice paths (log_probs [T, U + 1, V]) from (0, 0) that emit
    ``label`` in order and end with the blank at (T - 1, U)."""
    steps, size = log_probs.shape[0], len(label)
    total = -math.inf
    for emit_at in itertools.combinations(range(steps - 1 + size), size):
        t = u = 0
        score = 0.0
        for move in range(steps - 1 + size):
            if move in emit_at:
                score += log_probs[t, u, label[u]]
                u += 1
            else:
                score += log_probs[t, u, blank]
                t += 1
        total = np.logaddexp(total, score + log_probs[t, u, blank])
    return -total


def default_tree_path(label: int, num_classes: int) -> list[tuple[int, int]]:
    """(node, bit) from the leaf up: class c is leaf c + num_classes of a heap-numbered binary tree."""
    code, path = label + num_classes, []
    while code > 1:
        path.append((code // 2 - 1, code & 1))
        code //= 2
    return path


def hsigmoid_loss(x, w, path, bias=None, steps: int | None = None) -> float:
    """sum over the path of softplus(z) - bit * z, z = x . W[node] + bias[node] clipped to [-40, 40]; like
    Paddle, each of the ``steps`` positions the path leaves unused adds softplus(0) = log 2."""
    loss = 0.0
    for node, bit in path:
        z = float(np.clip(x @ w[node] + (0 if bias is None else bias.reshape(-1)[node]), -40, 40))
        loss += np.logaddexp(0, z) - bit * z
    return loss + ((steps or len(path)) - len(path)) * math.log(2)
