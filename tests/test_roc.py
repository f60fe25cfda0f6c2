"""evaluate --roc's set metrics (gradc.training.roc): the average precision of tied scores, infinite ones too."""

import numpy as np
import pytest

from gradc.training.roc import RocTally


def _results(scores, labels) -> dict:
    tally = RocTally(("score", "label"))
    tally.add(np.asarray(scores, np.float32), {"label": np.asarray(labels)}, "data")
    return tally.results()


@pytest.mark.parametrize("top", (np.inf, -np.inf, 5.0))
def test_tied_scores_count_together_whatever_their_order_infinite_ones_too(top):
    """Two examples scored alike, one positive and one not, are one step of the precision-recall curve in either
    order; an overflowing reconstruction error (inf) ties as 5.0 does (inf - inf made NaN split the tie: 0.833 or
    0.583 by the examples' order)."""
    scores, labels = [top, top, 1.0, 0.0], [1, 0, 1, 0]
    forward, backward = _results(scores, labels), _results(scores[1::-1] + scores[2:], labels[1::-1] + labels[2:])
    finite = _results([5.0 if top > 0 else -5.0, 5.0 if top > 0 else -5.0, 1.0, 0.0], labels)
    assert forward == backward == finite
