"""Top-k accuracy of class scores against integer labels: which axis holds the classes, and how many labelled rows
(examples, or a segmentation map's pixels) have their label among the k best-scored classes."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def class_axis(scores: Sequence[int], labels: Sequence[int]) -> int:
    """The axis of the class scores that labels of shape ``labels`` leave out, held as 1 or dropped (the first, the
    batch, and the scores' unknown -1 dims match any size): the last when it fits, as F.cross_entropy's default, else
    the first that does (1 for scores [N, C, H, W] against labels [N, 1, H, W] or [N, H, W]); -1 when none does."""
    def fits(axis: int) -> bool:
        rest = [*scores[:axis], *scores[axis + 1:]]
        for expected in ([*scores[:axis], 1, *scores[axis + 1:]], rest):
            if len(expected) == len(labels) and all(
                    want < 0 or want == got for want, got in zip(expected[1:], labels[1:])):
                return True
        return False
    return next((axis for axis in [len(scores) - 1, *range(1, len(scores) - 1)] if fits(axis)), -1)



def top_k_hits(scores, labels, axis: int, ignore_index: int | None,
               topk: Sequence[int]) -> tuple[dict[int, int], int] | None:
    """{k: rows right at top-k} and the rows counted (a label outside the classes, or ``ignore_index``, is not
    counted, as the loss leaves it out); None when ``labels`` are not integers, one a row."""
    scores = np.moveaxis(np.asarray(scores, dtype=np.float64), axis, -1)
    classes = scores.shape[-1]
    scores, labels = scores.reshape(-1, classes), np.asarray(labels).reshape(-1)
    if labels.dtype.kind not in "iu" or len(labels) != len(scores):
        return None
    valid = (labels >= 0) & (labels < classes) & (labels != ignore_index)
    scores, labels = scores[valid], labels[valid]
    above = (scores > scores[np.arange(len(labels)), labels][:, None]).sum(axis=1)
    return {k: int((above < k).sum()) for k in topk}, len(labels)
