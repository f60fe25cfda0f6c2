"""NDCG@k, MRR and a query's AUC of a ranker over the whole set (``gradc evaluate --ranking``): the program's scores
against the data's graded relevance, a query at a time. Two layouts: scores [N, L], a row a query's list (a listwise
model's, its padded entries left out by the mask); or scores [N] / [N, 1], a document an example, grouped by the data's
array of query ids (a pointwise or pairwise model's). A query's documents are ranked by score, highest first, ties in
their order in the data; NDCG's gain is 2^relevance - 1 and its discount 1 / log2(rank + 1). With scores [N, L], the
relevance may instead be an integer a row, the index of the row's one relevant entry (a next-item recommender's scores
over the catalogue against the item that came next). Each metric is the mean over the queries it is defined for:
NDCG, hit@k (a relevant document among the k best scored) and MRR over those with a relevant document
(relevance > 0), the AUC (the share of relevant-irrelevant pairs scored in order, a tie counting half) over those
with both (left out, with a note, where none has)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ..errors import GradcError, GradcNotice
from ..ir import Program
from .accuracy import counted_positions
from .metric_inputs import checked_inputs


def parse_ranking(value: str) -> tuple[str, ...]:
    """``SCORES,RELEVANCE[,QUERY]``: the program's scores, the data's relevance and (scores a document an example) its
    query ids."""
    names = tuple(name.strip() for name in value.split(","))
    if len(names) not in (2, 3) or not all(names):
        raise GradcError(f"--ranking {value!r}: give SCORES,RELEVANCE (scores [N, L], a query a row) or "
                         f"SCORES,RELEVANCE,QUERY (scores [N], the data's query id of each example)")
    return names


def check_ranking(program: Program, names: Sequence[str], ranking: tuple[str, ...]) -> None:
    """The scores computed by the forward part, of a layout the ranking's arity fits; relevance and query ids in the
    data."""
    scores, var = ranking[0], checked_inputs(program, names, "--ranking", ranking)
    shape = list(var.shape or [])
    if len(shape) > 2:
        raise GradcError(f"evaluation: --ranking: '{scores}' {shape} has {len(shape)} axes: give scores [N, L] (a "
                         f"query's list a row, a catalogue's scores) or [N] (a document an example); a sequence "
                         f"model's scores at every position: the last position's, x[:, -1, :]")
    listwise = len(shape) == 2 and shape[1] != 1
    if listwise == (len(ranking) == 3):
        raise GradcError(f"evaluation: --ranking: '{scores}' {shape} is " + (
            "a list a row: give SCORES,RELEVANCE without query ids" if listwise else
            "a score an example: give the data's query ids too, SCORES,RELEVANCE,QUERY"))


class RankingTally:
    """Every batch's scores, relevance and query ids (or masks), ranked a query at a time at the end."""

    def __init__(self, ranking: tuple[str, ...], topk: Sequence[int], mask: str | None):
        self.ranking, self.topk, self.mask, self.source = ranking, sorted(set(topk or [1])), mask, "data"
        self.lists: list[tuple[np.ndarray, np.ndarray]] = []
        self.rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.unranked = 0   # NaN scores of the entries ranked

    def add(self, scores, batch: Mapping, source: str) -> None:
        scores, relevance = np.asarray(scores, np.float64), np.asarray(batch[self.ranking[1]], np.float64)
        self.source = source
        if len(self.ranking) == 3:
            ids = np.asarray(batch[self.ranking[2]]).reshape(-1)
            if not scores.size == relevance.size == ids.size:
                raise GradcError(f"{source}: --ranking: a batch gave {scores.size} scores, {relevance.size} relevance "
                                 f"values and {ids.size} query ids: one each a document")
            self._check_ranked(scores)
            self.rows.append((scores.reshape(-1), relevance.reshape(-1), ids))
            return
        if item_ids(batch[self.ranking[1]], scores.shape):
            relevance = self._one_hot(np.asarray(batch[self.ranking[1]]), scores.shape)
        if scores.shape != relevance.shape:
            raise GradcError(f"{source}: --ranking: the scores {list(scores.shape)} and the relevance "
                             f"'{self.ranking[1]}' {list(relevance.shape)} differ in shape")
        kept = counted_positions(batch[self.mask], relevance.shape) if self.mask else np.ones(relevance.shape, bool)
        if kept is None:   # scores whose row length the program leaves open, wider or narrower than the mask
            raise GradcError(f"{source}: --mask {self.mask} {list(np.shape(batch[self.mask]))} marks neither each of "
                             f"the scores' {list(scores.shape)} entries nor, as integers, the length of each row")
        self._check_ranked(scores[kept])   # a padded entry the mask leaves out may score NaN
        self.lists += [(row[keep], rel[keep]) for row, rel, keep in zip(scores, relevance, kept)]

    def _check_ranked(self, scores: np.ndarray) -> None:
        # no place in a ranking (argsort put them last, the AUC's pairs counted them lost): the metrics are undefined
        self.unranked += int(np.isnan(scores).sum())

    def _one_hot(self, ids: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
        ids = ids.reshape(-1)
        outside = ids[(ids < 0) | (ids >= shape[1])]
        if outside.size:
            raise GradcError(f"{self.source}: --ranking: '{self.ranking[1]}' names entry {outside[0]}, outside the "
                             f"{shape[1]} entries a row of the scores '{self.ranking[0]}' holds")
        relevance = np.zeros(shape)
        relevance[np.arange(shape[0]), ids] = 1.0
        return relevance

    def queries(self):
        yield from self.lists
        if self.rows:
            scores, relevance, ids = (np.concatenate(part) for part in zip(*self.rows))
            # grouped in one sort, not a scan of the set per query: queries in order of first appearance, a
            # query's documents in data order (its ties ranked as the data lists them)
            _, first, query_of = np.unique(ids, return_index=True, return_inverse=True)
            groups = np.split(np.argsort(query_of, kind="stable"), np.cumsum(np.bincount(query_of))[:-1])
            for query in np.argsort(first):
                yield scores[groups[query]], relevance[groups[query]]

    def results(self) -> dict[str, float]:
        """NDCG@k, hit@k, MRR and the query AUC; each undefined (NaN, a note saying why) for NaN scores or a set
        without a relevant document, which stopped gradc train --eval, unsaved, as an error."""
        if self.unranked:
            return self._undefined(f"the scores '{self.ranking[0]}' hold {self.unranked:,} NaN: nothing to rank by")
        ndcg, hits, reciprocal, auc = {k: [] for k in self.topk}, {k: [] for k in self.topk}, [], []
        for scores, relevance in self.queries():
            ranked = relevance[np.argsort(-scores, kind="stable")]
            if (ranked > 0).any():
                ideal = np.sort(relevance)[::-1]
                for k in self.topk:
                    ndcg[k].append(_dcg(ranked[:k]) / _dcg(ideal[:k]))
                    hits[k].append(float((ranked[:k] > 0).any()))
                reciprocal.append(1.0 / (1 + np.flatnonzero(ranked > 0)[0]))
            relevant = relevance > 0
            if relevant.any() and not relevant.all():
                auc.append(ordered_pairs_auc(scores, relevant))
        if not reciprocal:   # NDCG, hit@k and MRR need a relevant document
            return self._undefined(f"no query of the set has a relevant document (relevance > 0) in "
                                   f"'{self.ranking[1]}'")
        if not auc:   # the AUC needs an irrelevant one too: left out, not NaN (no JSON number)
            warnings.warn(f"{self.source}: --ranking: no query of the set has both relevant and irrelevant documents "
                          f"in '{self.ranking[1]}': the AUC is undefined, query_auc left out", GradcNotice,
                          stacklevel=2)
        means = [float(np.mean(values)) for values in [*ndcg.values(), *hits.values(), reciprocal, auc] if values]
        return dict(zip(ranking_keys(self.topk), means))   # query_auc, last, the one that may be left out


    def _undefined(self, why: str) -> dict[str, float]:
        warnings.warn(f"{self.source}: --ranking: {why}: NDCG, MRR and the AUC are undefined (nan)", GradcNotice,
                      stacklevel=3)
        return dict.fromkeys(ranking_keys(self.topk), math.nan)


def ranking_keys(topk: Sequence[int]) -> list[str]:
    """The names of the metrics, in order: ndcg@K then hit@K for each k (1 without any), mrr, query_auc."""
    ks = sorted(set(topk or [1]))
    return [f"ndcg@{k}" for k in ks] + [f"hit@{k}" for k in ks] + ["mrr", "query_auc"]


def item_ids(relevance, scores_shape: Sequence[int]) -> bool:
    """Whether ``relevance`` holds one integer a row of scores [N, L], the index of its relevant entry, rather than
    graded relevance of the scores' shape."""
    relevance = np.asarray(relevance)
    return (relevance.dtype.kind in "iu" and len(scores_shape) == 2 and relevance.ndim <= 2
            and relevance.shape[:1] == tuple(scores_shape[:1]) and relevance.size == scores_shape[0])


def _dcg(relevance: np.ndarray) -> float:
    return float(np.sum((2.0 ** relevance - 1.0) / np.log2(np.arange(relevance.size) + 2.0)))


def ordered_pairs_auc(scores: np.ndarray, relevant: np.ndarray) -> float:
    """The share of relevant-irrelevant pairs scored in order, a tie half: the Mann-Whitney U of the mid-ranks, in
    n log n (the pairs of a 40,000-document query took 3 GiB)."""
    order = np.argsort(scores, kind="stable")
    _, first, tied = np.unique(scores[order], return_index=True, return_counts=True)
    ranks = np.empty(scores.size)
    ranks[order] = np.repeat(first + (tied + 1) / 2.0, tied)   # a tie's ranks share their mean
    good = int(relevant.sum())
    return float((ranks[relevant].sum() - good * (good + 1) / 2.0) / (good * (scores.size - good)))
