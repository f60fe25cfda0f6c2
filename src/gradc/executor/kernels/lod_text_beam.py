"""Kernels of gradc.ops.lod_text's beam search: one step (beam_search) and the trace back over a finished search's
steps (beam_search_decode), with Paddle's orders: candidates rank by score, then by the later prefix row, and a
candidate equal to the last of a full beam replaces it (Paddle's insertion)."""

from __future__ import annotations

import numpy as np

from ...limits import check_allocation
from ..lod import SETS_LOD, LoD
from ..tensor_array import TensorArray
from . import kernel
from .lod_text import by_row
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
    """The beam of one source: the beam_size best (score, row, id) over its prefix rows, inserted in Paddle's order
    (row by row; a finished prefix puts all its mass on end_id, one item). Items scored below the beam_size-th best
    score cannot enter the beam nor change who does, so only the others are inserted (all of them when a score is
    NaN, which compares with nothing)."""
    end_id, beam_size, part = k.attr("end_id"), k.attr("beam_size"), slice(rows.start, rows.stop)
    ended, prior = pre_ids[part] == end_id, pre_scores[part, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        scored = scores[part] if k.attr("is_accumulated") else prior + np.log(scores[part])
    word_ids = ids[part] if ids is not None else np.broadcast_to(np.arange(scores.shape[1]), scored.shape)
    # column 0: the end_id item of a finished prefix; the others: the candidates of an open one
    present = np.hstack([ended[:, None], np.repeat(~ended[:, None], scored.shape[1], axis=1)])
    item_scores = np.hstack([prior, scored])[present]
    item_ids = np.hstack([np.full(prior.shape, end_id, np.int64), word_ids])[present]
    item_rows = np.broadcast_to(np.arange(rows.start, rows.stop)[:, None], present.shape)[present]
    keep = slice(None)
    if len(item_scores) > beam_size and not np.isnan(item_scores).any():
        keep = item_scores >= np.partition(item_scores, len(item_scores) - beam_size)[len(item_scores) - beam_size]
    beam: list = []
    for score, row, item_id in zip(item_scores[keep], item_rows[keep].tolist(), item_ids[keep].tolist()):
        _insert(beam, (score, row, item_id), beam_size)
    return beam


@kernel("beam_search")
def beam_search(k):
    level, end_id = k.attr("level"), k.attr("end_id")
    scores = np.asarray(k.x("scores"))
    lod = lod_or_fail(k, "scores")
    if not 0 <= level < len(lod):
        raise ValueError(f"level {level} is not a level of scores' LoD {[list(x) for x in lod]}")
    rows = scores.shape[0]
    scores = by_row(scores).astype(np.float32, copy=False)   # Paddle reads scores as float
    pre_ids, pre_scores = np.asarray(k.x("pre_ids")).reshape(-1), np.asarray(k.x("pre_scores"), np.float32).ravel()
    ids = k.optional("ids")
    if ids is not None:
        ids = by_row(np.asarray(ids))
    if len(pre_ids) != rows or len(pre_scores) != rows or (ids is not None and ids.shape != scores.shape):
        raise ValueError(f"beam_search needs one pre_id and pre_score per row of scores {list(scores.shape)}"
                         f"{'' if ids is None else ' and ids shaped like scores'}, got pre_ids "
                         f"{list(k.x('pre_ids').shape)}, pre_scores {list(k.x('pre_scores').shape)}"
                         f"{'' if ids is None else f' and ids {list(ids.shape)}'}")
    sources = absolute(lod)[level]
    per_prefix: list[list] = [[] for _ in range(rows)]
    for start, end in zip(sources[:-1], sources[1:]):
        beam = _candidates(k, range(start, end), pre_ids, pre_scores, ids, scores)
        if all(item_id == end_id and pre_ids[row] == end_id for _, row, item_id in beam):
            continue   # every branch of the source has ended: prune it
        for item in beam:
            per_prefix[item[1]].append(item)
    selected = [item for items in per_prefix for item in items]
    low = tuple(int(o) for o in np.concatenate([[0], np.cumsum([len(items) for items in per_prefix])]))
    lod_out = (tuple(sources), low)
    k.set_lod("selected_ids", lod_out)
    k.set_lod("selected_scores", lod_out)
    return {"selected_ids": np.array([item_id for _, _, item_id in selected], np.int64).reshape(-1, 1),
            "selected_scores": np.array([score for score, _, _ in selected], np.float32).reshape(-1, 1),
            "parent_idx": np.array([row for _, row, _ in selected], np.int32)}


def _steps(k) -> list[tuple[np.ndarray, np.ndarray, LoD]]:
    """(ids, scores, two-level LoD) of each step of the search, as written to the arrays Ids and Scores."""
    ids, scores = k.x("Ids"), k.x("Scores")
    if not isinstance(ids, TensorArray) or not isinstance(scores, TensorArray):
        raise ValueError("Ids and Scores must be tensor arrays (one tensor per step, written by write_to_array)")
    if not len(ids) or len(ids) != len(scores):
        raise ValueError(f"Ids and Scores must hold the same number (> 0) of steps, got {len(ids)} and {len(scores)}")
    steps = []
    for step, (step_ids, step_scores) in enumerate(zip(ids, scores)):
        lod = ids.lods.get(step)
        if step_ids is None or step_scores is None or lod is None or len(lod) != 2:
            raise ValueError(f"step {step} of Ids must be a written tensor with a two-level LoD (source sentences, "
                             f"then prefixes), as beam_search writes, got LoD {lod}")
        if lod[1][-1] != len(step_ids.reshape(-1)) or len(step_scores.reshape(-1)) != len(step_ids.reshape(-1)):
            raise ValueError(f"step {step}: Ids' LoD {[list(x) for x in lod]} does not fit its {step_ids.size} ids "
                             f"and {step_scores.size} scores")
        if steps and len(lod[1]) - 1 > len(steps[-1][0]):   # a prefix is a candidate row of the step before
            raise ValueError(f"step {step}: Ids' LoD {[list(x) for x in lod]} has {len(lod[1]) - 1} prefixes, but "
                             f"step {step - 1} selected only {len(steps[-1][0])} candidates")
        steps.append((step_ids.reshape(-1), step_scores.reshape(-1), lod))
    return steps


def _trace_back(k, steps) -> list[list[tuple[list, list]]]:
    """Each source's sentences (ids and scores, last step first), followed from the last step to the first as
    Paddle's BeamSearchDecoder: a source's sentences start at the last step where it still has candidates."""
    beam_size, end_id = k.attr("beam_size"), k.attr("end_id")
    sources = len(steps[0][2][0]) - 1
    sentences: list[list[tuple[list, list]]] = [[] for _ in range(sources)]   # the beam slots candidates fill
    prefixes: list[list[int]] = [[] for _ in range(sources)]
    for step_ids, step_scores, (source_level, prefix_level) in reversed(steps):
        if len(source_level) - 1 != sources:
            raise ValueError(f"every step must hold {sources} source sentences (as the first), one holds "
                             f"{len(source_level) - 1}")
        for source, (found, rows) in enumerate(zip(sentences, prefixes)):
            first, last = source_level[source], source_level[source + 1]
            if not rows:   # the source ends at this step: its candidates start sentences
                rows.extend(prefix for prefix in range(first, last)
                            for _ in range(prefix_level[prefix], prefix_level[prefix + 1]))
                candidates = range(prefix_level[first], prefix_level[last])
                if len(candidates) > beam_size:
                    raise ValueError(f"source {source} has {len(candidates)} candidates at its last step, more than "
                                     f"beam_size {beam_size}")
                found.extend(([int(step_ids[row])], [step_scores[row]]) for row in candidates)
                continue
            prefix, end = first, prefix_level[first + 1]
            for i, row in enumerate(rows):
                if step_ids[row] != end_id or not found[i][0]:   # an end_id only ends a sentence once
                    found[i][0].append(int(step_ids[row]))
                    found[i][1].append(step_scores[row])
                while end <= row:   # the prefix the candidate row extends
                    prefix += 1
                    end += prefix_level[prefix + 1] - prefix_level[prefix]
                rows[i] = prefix
    return sentences


@kernel("beam_search_decode")
def beam_search_decode(k):
    """Each source's beam_size sentences, best final score first (equal scores keep their traced order, which
    Paddle's unstable sort leaves open; an unused slot of the beam is an empty sentence, last: Paddle sorts it by a
    score it never wrote); ids and scores in step order."""
    steps, beam_size = _steps(k), k.attr("beam_size")
    dtype = steps[0][1].dtype
    sentences = _trace_back(k, steps)
    # one offset per beam slot, used or not: a Python int and the list and tuple slots that hold it
    check_allocation(len(sentences) * beam_size + 1, 64, f"the LoD of SentenceIds ({len(sentences)} sources times "
                     f"beam_size {beam_size} sentences)")
    ids, scores, per_source, lengths = [], [], [0], [0]
    for found in sentences:
        ranked = sorted(found, key=lambda s: -s[1][0]) + [([], [])] * (beam_size - len(found))
        for sentence_ids, sentence_scores in ranked:
            ids.extend(reversed(sentence_ids))
            scores.extend(reversed(sentence_scores))
            lengths.append(lengths[-1] + len(sentence_ids))
        per_source.append(per_source[-1] + len(ranked))
    lod = (tuple(per_source), tuple(lengths))
    k.set_lod("SentenceIds", lod)
    k.set_lod("SentenceScores", lod)
    return {"SentenceIds": np.array(ids, np.int64), "SentenceScores": np.array(scores, dtype)}
