"""Kernels of gradc.ops.lod_text: CRF decoding, chunk evaluation, edit distance and CTC alignment, one sequence at a
time as Paddle's kernels (sequences are short; the per-step work is vectorised over tags). beam_search and
beam_search_decode are in lod_text_beam.py."""

from __future__ import annotations

import numpy as np

from ...limits import check_allocation
from ...ops.lod_text import CHUNK_SCHEMES
from ..lod import SETS_LOD
from . import kernel
from .sequence_lod import offsets

SETS_LOD.update({"crf_decoding", "ctc_align", "chunk_eval", "edit_distance"})


def by_row(values: np.ndarray) -> np.ndarray:
    """``values`` as [batch, rest] (an empty batch too, which reshape(batch, -1) refuses)."""
    return values.reshape(len(values), -1 if len(values) else int(np.prod(values.shape[1:])))


def padded_lengths(k, slot: str, batch: int, steps: int | None) -> np.ndarray:
    """One length per sequence from the slot ([batch] or [batch, 1]), each within the padded time steps."""
    lengths = np.asarray(k.x(slot)).reshape(-1).astype(np.int64)
    if lengths.shape != (batch,):
        raise ValueError(f"{slot} must hold {batch} lengths (one per sequence), got shape {list(k.x(slot).shape)}")
    if (lengths < 0).any() or (steps is not None and (lengths > steps).any()):
        raise ValueError(f"{slot} lengths must lie in [0, {steps}] (the padded time steps), got {lengths.tolist()}")
    return lengths


# ---------------------------------------------------------------- crf_decoding

def _best(candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index, score) of the best along axis 0 as Paddle's loop finds it: from score -max (the dtype's), a candidate
    wins only when strictly greater, so ties go to the lower index and NaN, -inf and -max never win."""
    floor = -np.finfo(candidates.dtype).max
    wins = candidates > floor
    best = np.where(wins, candidates, -np.inf).argmax(axis=0)
    return best, np.where(wins.any(axis=0), np.take_along_axis(candidates, best[None], 0)[0], floor)


def viterbi_path(emission: np.ndarray, transition: np.ndarray) -> np.ndarray:
    """The best tag path of one sequence [time, tags] (Paddle's choice among ties and non-finite scores, _best)."""
    moves = transition[2:]
    alpha, track = transition[0] + emission[0], []
    for scores in emission[1:]:
        best, alpha = _best(alpha[:, None] + moves)   # [from, to]
        alpha = alpha + scores
        track.append(best)
    path = [int(_best(alpha + transition[1])[0])]
    for best in reversed(track):
        path.append(int(best[path[-1]]))
    return np.array(path[::-1], np.int64)


@kernel("crf_decoding")
def crf_decoding(k):
    emission, transition, label = k.x("Emission"), k.x("Transition"), k.optional("Label")
    tags = emission.shape[-1]
    if transition.shape != (tags + 2, tags):
        raise ValueError(f"Transition must be [tags + 2, tags] = [{tags + 2}, {tags}], got {list(transition.shape)}")
    transition = transition.astype(emission.dtype, copy=False)
    if k.has("Length"):
        if emission.ndim != 3:
            raise ValueError(f"Emission must be [batch, time, tags] with Length, got {list(emission.shape)}")
        batch, steps = emission.shape[:2]
        lengths = padded_lengths(k, "Length", batch, steps)
        path = np.zeros((batch, steps), np.int64)
        for i, length in enumerate(lengths):
            if length:
                path[i, :length] = viterbi_path(emission[i, :length], transition)
        if label is not None:
            within = np.arange(steps) < lengths[:, None]
            path = (within & (path == label.reshape(batch, steps))).astype(np.int64)
        return {"ViterbiPath": path}
    if emission.ndim != 2:
        raise ValueError(f"Emission must be [rows, tags] (a LoD tensor) without Length, got {list(emission.shape)}")
    bounds = offsets(k, "Emission", at_most=1)
    path = np.zeros((emission.shape[0], 1), np.int64)
    for start, end in zip(bounds[:-1], bounds[1:]):
        if end > start:
            path[start:end, 0] = viterbi_path(emission[start:end], transition)
    if label is not None:
        if label.size != path.size:
            raise ValueError(f"Label must have one tag per row of Emission ({path.size}), got {list(label.shape)}")
        path = (path == label.reshape(path.shape)).astype(np.int64)
    k.set_lod("ViterbiPath", k.lod("Emission"))
    return {"ViterbiPath": path}


# ---------------------------------------------------------------- chunk_eval

# scheme -> (tag types, begin tag, inside tag, end tag, single tag); -1: the scheme has no such tag
SCHEME_TAGS = {"IOB": (2, 0, 1, -1, -1), "IOE": (2, -1, 0, 1, -1), "IOBES": (4, 0, 1, 2, 3),
               "plain": (1, -1, -1, -1, -1)}
assert set(SCHEME_TAGS) == set(CHUNK_SCHEMES)


def _chunk_ends(prev_tag, prev_type, tag, type_, outside, begin, inside, end, single) -> bool:
    if prev_type == outside:
        return False
    if type_ == outside or type_ != prev_type:
        return True
    if prev_tag in (begin, inside):
        return tag in (begin, single)
    return prev_tag in (end, single)


def _chunk_begins(prev_tag, prev_type, tag, type_, outside, begin, inside, end, single) -> bool:
    if prev_type == outside:
        return type_ != outside
    if type_ == outside:
        return False
    if type_ != prev_type or tag in (begin, single):
        return True
    if tag in (inside, end):
        return prev_tag in (end, single)
    return False


def chunks(labels, num_types: int, scheme: str) -> list[tuple[int, int, int]]:
    """The (begin, end, type) chunks of one sequence of labels (tag = label % tag types, type = label // tag types)."""
    tag_types, *tags = SCHEME_TAGS[scheme]
    outside, found, start, in_chunk, tag, type_ = num_types, [], 0, False, -1, num_types
    for i, label in enumerate(labels):
        prev_tag, prev_type = tag, type_
        tag, type_ = label % tag_types, label // tag_types
        if in_chunk and _chunk_ends(prev_tag, prev_type, tag, type_, outside, *tags):
            found.append((start, i - 1, prev_type))
            in_chunk = False
        if _chunk_begins(prev_tag, prev_type, tag, type_, outside, *tags):
            start, in_chunk = i, True
    if in_chunk:
        found.append((start, len(labels) - 1, type_))
    return found


def _sequences(k, slot: str):
    """Each sequence of the slot's values: LoD rows, or padded rows cut at SeqLength."""
    values = np.asarray(k.x(slot))
    if k.lod("Label"):
        bounds = offsets(k, slot, at_most=1)
        flat = values.reshape(-1)
        return [flat[start:end] for start, end in zip(bounds[:-1], bounds[1:])]
    rows = by_row(values)
    lengths = padded_lengths(k, "SeqLength", rows.shape[0], rows.shape[1])
    return [row[:length] for row, length in zip(rows, lengths)]


@kernel("chunk_eval")
def chunk_eval(k):
    scheme, num_types = k.attr("chunk_scheme"), k.attr("num_chunk_types")
    if scheme not in SCHEME_TAGS:
        raise ValueError(f"chunk_scheme {scheme!r} is not one of {list(CHUNK_SCHEMES)}")
    if k.lod("Label"):
        if len(k.lod("Label")) != 1 or k.lod("Inference") != k.lod("Label"):
            raise ValueError(f"Inference and Label must have one and the same one-level LoD, got "
                             f"{k.lod('Inference')} and {k.lod('Label')}")
    elif not k.has("SeqLength"):
        raise ValueError("Label has no LoD: chunk_eval needs LoD tensors, or padded ones with SeqLength")
    highest = num_types * SCHEME_TAGS[scheme][0]
    excluded = set(k.attr("excluded_chunk_types"))
    found = labelled = correct = 0
    for inferred, labels in zip(_sequences(k, "Inference"), _sequences(k, "Label")):
        for slot, values in (("Inference", inferred), ("Label", labels)):   # padding past a length is not read
            if values.size and (values.min() < 0 or values.max() > highest):
                raise ValueError(f"{slot} labels must lie in [0, {highest}] (num_chunk_types {num_types} times "
                                 f"the {SCHEME_TAGS[scheme][0]} tags of {scheme}), got {values.min()} to "
                                 f"{values.max()}")
        mine, theirs = chunks(inferred.tolist(), num_types, scheme), chunks(labels.tolist(), num_types, scheme)
        correct += len({c for c in mine if c[2] not in excluded} & set(theirs))
        found += sum(c[2] not in excluded for c in mine)
        labelled += sum(c[2] not in excluded for c in theirs)
    one = np.float32(1)
    precision = one * correct / found if found else np.float32(0)
    recall = one * correct / labelled if labelled else np.float32(0)
    f1 = 2 * precision * recall / (precision + recall) if correct else np.float32(0)
    return {"Precision": np.array([precision], np.float32), "Recall": np.array([recall], np.float32),
            "F1-Score": np.array([f1], np.float32), "NumInferChunks": np.array([found], np.int64),
            "NumLabelChunks": np.array([labelled], np.int64), "NumCorrectChunks": np.array([correct], np.int64)}


# ---------------------------------------------------------------- edit_distance

def levenshtein(hyp: np.ndarray, ref: np.ndarray) -> int:
    """Insertions, deletions and substitutions turning ``hyp`` into ``ref``, a row of the table at a time (the
    distance is symmetric: the loop runs over the shorter sequence, numpy over the longer)."""
    hyp, ref = sorted((hyp, ref), key=len)
    row = np.arange(len(ref) + 1)
    for i, token in enumerate(hyp, 1):
        substituted = row[:-1] + (ref != token)
        deleted = row[1:] + 1
        best = np.minimum(substituted, deleted)
        row = np.concatenate([[i], best])
        row = np.minimum.accumulate(row - np.arange(len(row))) + np.arange(len(row))   # insertions, left to right
    return int(row[-1])


def _strings(k, slot: str, length_slot: str) -> list[np.ndarray]:
    values = np.asarray(k.x(slot))
    if k.has(length_slot):
        lengths = padded_lengths(k, length_slot, values.shape[0], values.shape[1] if values.ndim == 2 else None)
        return [row[:length] for row, length in zip(by_row(values), lengths)]
    bounds = offsets(k, slot, at_most=1)
    flat = values.reshape(-1)
    return [flat[start:end] for start, end in zip(bounds[:-1], bounds[1:])]


@kernel("edit_distance")
def edit_distance(k):
    if k.has("HypsLength") != k.has("RefsLength"):
        raise ValueError("edit_distance needs both HypsLength and RefsLength or neither")
    hyps, refs = _strings(k, "Hyps", "HypsLength"), _strings(k, "Refs", "RefsLength")
    if len(hyps) != len(refs):
        raise ValueError(f"edit_distance needs as many references as hypotheses, got {len(refs)} and {len(hyps)}")
    normalized = k.attr("normalized")
    out = np.empty((len(hyps), 1), np.float32)
    for i, (hyp, ref) in enumerate(zip(hyps, refs)):
        if normalized and not len(ref):
            raise ValueError(f"reference {i} is empty: normalized edit distances divide by its length")
        # its time is Paddle's table's size, which the memory limit bounds as it bounds Paddle's float table
        check_allocation((len(hyp) + 1) * (len(ref) + 1), 4, f"the edit distance table of sequence {i} "
                         f"({len(hyp)} by {len(ref)} tokens)")
        distance = np.float32(levenshtein(hyp, ref))
        out[i, 0] = distance / np.float32(len(ref)) if normalized else distance
    return {"Out": out, "SequenceNum": np.array([len(hyps)], np.int64)}


# ---------------------------------------------------------------- ctc_align

def aligned(tokens: np.ndarray, blank: int, merge_repeated: bool) -> np.ndarray:
    """The tokens with each run of repeats merged (``merge_repeated``) and ``blank`` dropped; Paddle's token before
    the first is -1, so a leading -1 merges away too."""
    keep = tokens != blank
    if merge_repeated:
        keep &= tokens != np.concatenate([[-1], tokens[:-1]]).astype(tokens.dtype, copy=False)
    return tokens[keep]


@kernel("ctc_align")
def ctc_align(k):
    tokens, blank, merge = np.asarray(k.x("Input")), k.attr("blank"), k.attr("merge_repeated")
    if k.has("InputLength"):
        if tokens.ndim != 2:
            raise ValueError(f"Input must be [batch, time] with InputLength, got {list(tokens.shape)}")
        lengths, padding = padded_lengths(k, "InputLength", tokens.shape[0], tokens.shape[1]), k.attr("padding_value")
        if not np.iinfo(tokens.dtype).min <= padding <= np.iinfo(tokens.dtype).max:
            raise ValueError(f"padding_value {padding} does not fit Input's {tokens.dtype}")
        out = np.full(tokens.shape, padding, tokens.dtype)
        kept = np.zeros(len(lengths), tokens.dtype)
        for i, length in enumerate(lengths):
            row = aligned(tokens[i, :length], blank, merge)
            out[i, :len(row)], kept[i] = row, len(row)
        return {"Output": out, "OutputLength": kept.reshape(-1, 1)}   # [batch, 1] whatever InputLength's shape
    bounds = offsets(k, "Input", at_most=1)
    flat = tokens.reshape(-1)
    rows = [aligned(flat[start:end], blank, merge) for start, end in zip(bounds[:-1], bounds[1:])]
    ends = tuple(int(o) for o in np.concatenate([[0], np.cumsum([len(r) for r in rows], dtype=np.int64)]))
    k.set_lod("Output", (ends,))
    if ends[-1] == 0:   # Paddle writes one -1 when every sequence aligns to nothing
        return {"Output": np.full((1, 1), -1, tokens.dtype)}
    return {"Output": np.concatenate(rows).reshape(-1, 1)}
