"""A metric with nothing to count is undefined, not a number that looks measured: NaN scores were above no class, so
each query counted as a hit (recall@k 1.0), and a NaN multi-label score is above no threshold, so it counted as a
confident no; a set whose every label is left out gave an exact match of 0. Each is nan now, with a note saying why
(gradc train --eval goes on and saves: an error there lost the run)."""

import math

import numpy as np
import pytest

from gradc.errors import GradcNotice
from gradc.training.multilabel import KEYS, MultiLabel, MultiLabelTally
from gradc.training.retrieval import RecallTally


def test_nan_embeddings_give_no_recall():
    rng = np.random.default_rng(0)
    queries, gallery = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))
    tally = RecallTally([1, 5])
    tally.add(queries, gallery)
    assert tally.results()["recall@1"] < 1
    queries[2, 0] = np.nan
    diverged = RecallTally([1, 5])
    diverged.add(queries, gallery)
    with pytest.warns(GradcNotice, match=r"--recall: the scores of 1 of the 6 queries hold NaN \(NaN embeddings\): "
                                         r"recall@1, recall@5 undefined"):
        assert all(math.isnan(value) for value in diverged.results().values())


@pytest.mark.parametrize("scores, labels, why", [
    ([[0.9, np.nan], [0.2, 0.7]], [[1, 0], [0, 1]], "the scores of 1 of the 2 counted rows hold NaN"),
    ([[0.9, 0.1], [0.2, 0.7]], [[-100, -100], [-100, -100]], "no label is counted")])
def test_multi_label_scores_without_a_counted_answer_are_undefined(scores, labels, why):
    tally = MultiLabelTally(MultiLabel.of("s", "y", True, ignore_index=-100))
    tally.add(np.array(scores), np.array(labels), "set")
    with pytest.warns(GradcNotice, match=why):
        results = tally.results()
    assert all(math.isnan(results[key]) for key in KEYS) and results["label_f1"] == [None, None]
