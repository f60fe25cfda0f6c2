"""Kernels of gradc.ops.lod_text's beam search: one step (beam_search) and the trace back over a finished search's
steps (beam_search_decode), with Paddle's orders: candidates rank by score, then by the later prefix row, and a
candidate equal to the last of a full beam replaces it (Paddle's insertion)."""

from __future__ import annotations

import numpy as np

from ..lod import SETS_LOD, LoD
from . import kernel
from .sequence_lod import lod_or_fail

SETS_LOD.update({"beam_search", "beam_search_decode"})


def absolute(lod: LoD) -> list[tuple[int, ...]]:
    """Each level's offsets as rows of the tensor (Paddle's ToAbsOffset)."""
    levels = [tuple(level) for level in lod]
    for i in range(len(levels) - 2, -1, -1):
        levels[i] = tuple(levels[i + 1][o] for o in levels[i])
    return levels


def _insert(beam: list, item: tuple, beam_size: int) -> None:
    """Insert (score, row, id) into ``beam``, kept best first by (score, row), as Paddle's BeamSearchFunctor."""
    if len(beam) < beam_size:
        beam.append(None)
    elif item[:2] < beam[-1][:2]:
        return
    k = len(beam) - 2
    while k >= 0 and beam[k][:2] < item[:2]:
        beam[k + 1] = beam[k]
        k -= 1
    beam[k + 1] = item


def _candidates(k, rows: range, pre_ids, pre_scores, ids, scores) -> list:
    """The beam of one source: the beam_size best (score, row, id) over its prefix rows."""
    end_id, beam_size, accumulated = k.attr("end_id"), k.attr("beam_size"), k.attr("is_accumulated")
    beam: list = []
    for row in rows:
        if pre_ids[row] == end_id:   # a finished prefix puts all its mass on end_id
            _insert(beam, (pre_scores[row], row, end_id), beam_size)
            continue
        with np.errstate(divide="ignore", invalid="ignore"):
            row_scores = scores[row] if accumulated else pre_scores[row] + np.log(scores[row])
        for d, score in enumerate(row_scores):
            _insert(beam, (score, row, int(ids[row, d]) if ids is not None else d), beam_size)
    return beam


@kernel("beam_search")
def beam_search(k):
    level, end_id = k.attr("level"), k.attr("end_id")
    scores = np.asarray(k.x("scores"))
    lod = lod_or_fail(k, "scores")
    if not 0 <= level < len(lod):
        raise ValueError(f"level {level} is not a level of scores' LoD {[list(x) for x in lod]}")
    rows = scores.shape[0]
    scores = scores.reshape(rows, -1).astype(np.float32, copy=False)   # Paddle reads scores as float
    pre_ids, pre_scores = np.asarray(k.x("pre_ids")).reshape(-1), np.asarray(k.x("pre_scores"), np.float32).ravel()
    ids = k.optional("ids")
    if ids is not None:
        ids = np.asarray(ids).reshape(rows, -1)
    if len(pre_ids) != rows or len(pre_scores) != rows or (ids is not None and ids.shape != scores.shape):
        raise ValueError(f"beam_search needs one pre_id and pre_score per row of scores {list(scores.shape)}"
                         f"{'' if ids is None else ' and ids shaped like scores'}, got pre_ids "
                         f"{list(k.x('pre_ids').shape)}, pre_scores {list(k.x('pre_scores').shape)}"
                         f"{'' if ids is None else f' and ids {list(ids.shape)}'}")
    sources = absolute(lod)[level]
    by_row: list[list] = [[] for _ in range(rows)]
    for start, end in zip(sources[:-1], sources[1:]):
        beam = _candidates(k, range(start, end), pre_ids, pre_scores, ids, scores)
        if all(item_id == end_id and pre_ids[row] == end_id for _, row, item_id in beam):
            continue   # every branch of the source has ended: prune it
        for item in beam:
            by_row[item[1]].append(item)
    selected = [item for items in by_row for item in items]
    low = tuple(int(o) for o in np.concatenate([[0], np.cumsum([len(items) for items in by_row])]))
    lod_out = (tuple(sources), low)
    k.set_lod("selected_ids", lod_out)
    k.set_lod("selected_scores", lod_out)
    return {"selected_ids": np.array([item_id for _, _, item_id in selected], np.int64).reshape(-1, 1),
            "selected_scores": np.array([score for score, _, _ in selected], np.float32).reshape(-1, 1),
            "parent_idx": np.array([row for _, row, _ in selected], np.int32)}
