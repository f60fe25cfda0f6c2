"""Kernels of gradc.ops.text: the Viterbi decoder, step by step as Paddle's kernel (ties go to the lower tag)."""

from __future__ import annotations

import numpy as np

from . import kernel


@kernel("viterbi_decode")
def viterbi_decode(k):
    """alpha[b, j], the best score of a path ending in tag j, moves one step while the sequence lasts; the path
    is traced back from each sequence's best last tag. Path has the longest sequence's steps, 0 past each end.
    A sequence of length 0 scores its first step's best tag, as Paddle's; a batch of them all gives Path [batch, 0]
    (Paddle 3.3.1 crashes)."""
    emission, transition, lengths = k.x("Input"), k.x("Transition"), k.x("Length").reshape(-1)
    batch, steps, tags = emission.shape if emission.ndim == 3 else (0, 0, 0)
    if emission.ndim != 3 or transition.shape != (tags, tags) or lengths.shape != (batch,):
        raise ValueError(f"viterbi_decode needs Input [batch, time, tags], Transition [tags, tags] and Length "
                         f"[batch], got {list(emission.shape)}, {list(transition.shape)} and {list(lengths.shape)}")
    if not steps or not tags:   # Paddle 3.3.1 fails too: the first step's scores start every path
        raise ValueError(f"viterbi_decode needs Input with a time step and a tag at least, got {list(emission.shape)}")
    if ((lengths < 0) | (lengths > steps)).any():
        raise ValueError(f"viterbi_decode lengths must lie in [0, {steps}] (Input's time steps), got "
                         f"{lengths.tolist()}")
    with_tags = k.attr("include_bos_eos_tag")
    if with_tags and tags < 2:
        raise ValueError("include_bos_eos_tag needs at least 2 tags (the start and stop tags)")
    longest = int(lengths.max(initial=0))
    left = lengths.astype(np.int64)[:, None]
    alpha = emission[:, 0] + transition[-1] if with_tags else emission[:, 0].copy()
    if with_tags:
        alpha = alpha + (left == 1) * transition[-2]
    left = left - 1
    history = []
    for step in range(1, longest):
        candidates = alpha[:, :, None] + transition   # [batch, from, to]
        best_from = candidates.argmax(axis=1)
        moved = np.take_along_axis(candidates, best_from[:, None, :], axis=1)[:, 0] + emission[:, step]
        history.append(best_from)
        alpha = np.where(left > 0, moved, alpha)
        if with_tags:
            alpha = alpha + (left == 1) * transition[-2]
        left = left - 1
    scores, last = alpha.max(axis=1), alpha.argmax(axis=1)
    left = left[:, 0]
    path = [last * (left >= 0)]
    for best_from in reversed(history):
        left = left + 1
        previous = best_from[np.arange(batch), last] * (left > 0)
        previous = np.where(left == 0, last, previous)
        path.insert(0, previous)
        last = previous + (left < 0) * last
    return {"Scores": scores.astype(emission.dtype),
            "Path": np.stack(path, axis=1).astype(np.int64) if longest else np.zeros((batch, 0), np.int64)}
