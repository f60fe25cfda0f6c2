"""Recall@k of a two-tower model (captions to images): example i's query embedding should find example i's gallery
embedding among its k most similar over the whole set, not the batch. Similarity is the dot product, the cosine of the
unit embeddings a CLIP tower writes; one that ties the right one's score counts against it, as top-k accuracy's."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

import numpy as np

from ..errors import GradcError, GradcNotice
from ..ir import Program
from .accuracy import top_k_hits


def parse_pair(value: str) -> tuple[str, str]:
    """``QUERY,GALLERY``: the two vars of --recall."""
    names = [name.strip() for name in value.split(",")]
    if len(names) != 2 or not all(names):
        raise GradcError(f"--recall {value!r}: give the query's and the gallery's embedding vars, QUERY,GALLERY")
    return names[0], names[1]


def check_towers(program: Program, pair: tuple[str, str]) -> None:
    """Both embeddings computed by the forward part, [N, D] of one D."""
    block, shapes = program.global_block, []
    written = {name for op in block.ops for name in op.output_names()}
    for name in pair:
        var = block.find_var(name)
        if name not in written or var is None:
            raise GradcError(f"evaluation: --recall: '{name}' is not computed by the forward part of the program")
        shapes.append(list(var.shape or []))
    if any(len(shape) != 2 for shape in shapes) or shapes[0][1] != shapes[1][1]:
        raise GradcError(f"evaluation: --recall: the embeddings '{pair[0]}' {shapes[0]} and '{pair[1]}' {shapes[1]} "
                         f"are not [N, D] of one D")


class RecallTally:
    """Every batch's query and gallery embeddings, ranked at the end over the whole set."""

    def __init__(self, topk: Sequence[int]):
        self.topk, self.queries, self.gallery = list(topk), [], []

    def add(self, queries, gallery) -> None:
        if len(queries) != len(gallery):
            raise GradcError(f"--recall: a batch gave {len(queries)} query and {len(gallery)} gallery embeddings: "
                             f"example i's query is to find example i's gallery embedding")
        self.queries.append(np.asarray(queries, dtype=np.float64))
        self.gallery.append(np.asarray(gallery, dtype=np.float64))

    def results(self) -> dict[str, float]:
        """{"recall@K": the share of the queries whose own example's gallery embedding is among the K best}."""
        queries, gallery = np.concatenate(self.queries), np.concatenate(self.gallery)
        scores = queries @ gallery.T
        if unranked := int(np.isnan(scores).any(axis=1).sum()):   # no score is above a NaN: each was a hit
            warnings.warn(f"--recall: the scores of {unranked:,} of the {len(scores):,} queries hold NaN (NaN "
                          f"embeddings): {', '.join(recall_key(k) for k in self.topk)} undefined (nan)", GradcNotice,
                          stacklevel=2)
            return {recall_key(k): math.nan for k in self.topk}
        hits = top_k_hits(scores, np.arange(len(scores)), self.topk)
        return {recall_key(k): hits[k] / len(scores) for k in self.topk}


def recall_key(k: int) -> str:
    return f"recall@{k}"
