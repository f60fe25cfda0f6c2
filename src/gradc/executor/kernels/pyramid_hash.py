"""Kernel of gradc.ops.pyramid_hash: XXH32 (the 32-bit xxHash, seeded) of each n-gram's float32 bytes picks the
table slices, and glibc's rand_r draws the training dropout, both written here from their published
definitions."""

from __future__ import annotations

import struct

import numpy as np

from ..lod import SETS_LOD
from . import kernel

SETS_LOD.add("pyramid_hash")   # a row per kept n-gram: Out and DropPos get LoDs of their own
PRIMES = (2654435761, 2246822519, 3266489917, 668265263, 374761393)
MASK = 0xFFFFFFFF
RAND_MAX = 2147483647


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & MASK


def xxh32(data: bytes, seed: int) -> int:
    p1, p2, p3, p4, p5 = PRIMES
    seed &= MASK
    size, i = len(data), 0
    if size >= 16:
        lanes = [(seed + p1 + p2) & MASK, (seed + p2) & MASK, seed, (seed - p1) & MASK]
        while i + 16 <= size:
            for n, word in enumerate(struct.unpack_from("<4I", data, i)):
                lanes[n] = (_rotl((lanes[n] + word * p2) & MASK, 13) * p1) & MASK
            i += 16
        h = (_rotl(lanes[0], 1) + _rotl(lanes[1], 7) + _rotl(lanes[2], 12) + _rotl(lanes[3], 18)) & MASK
    else:
        h = (seed + p5) & MASK
    h = (h + size) & MASK
    while i + 4 <= size:
        h = (_rotl((h + struct.unpack_from("<I", data, i)[0] * p3) & MASK, 17) * p4) & MASK
        i += 4
    for byte in data[i:]:
        h = (_rotl((h + byte * p5) & MASK, 11) * p1) & MASK
    h = ((h ^ (h >> 15)) * p2) & MASK
    h = ((h ^ (h >> 13)) * p3) & MASK
    return h ^ (h >> 16)


def rand_r(state: list[int]) -> int:
    """glibc's rand_r: three steps of its linear congruence make 31 bits; ``state`` holds the seed."""
    following, result = state[0], 0
    for bits in (11, 10, 10):
        following = (following * 1103515245 + 12345) & MASK
        result = (result << bits) ^ ((following >> 16) % (1 << bits))
    state[0] = following
    return result


def _ngrams(length: int, layers: int):
    """(start, size) of a sequence's n-grams, by layer: bigrams first, up to size ``layers``."""
    return [(start, size + 1) for size in range(1, min(layers, length)) for start in range(length - size)]


@kernel("pyramid_hash")
def pyramid_hash(k):
    x, w = k.x("X"), k.x("W").reshape(-1)
    lod = k.lod("X")
    if not lod:
        raise ValueError("X has no LoD: pyramid_hash hashes the n-grams of each sequence")
    emb, space, rand_len = k.attr("num_emb"), k.attr("space_len"), k.attr("rand_len")
    training, rate, state = k.attr("is_training") != 0, np.float32(k.attr("drop_out_percent")), [k.attr("seed") & MASK]
    ids = x.reshape(-1).astype(np.float32)
    rows, kept, out_offsets, kept_offsets = [], [], [0], [0]
    for begin, end in zip(lod[-1], lod[-1][1:]):
        marks = [0 if training and np.float32(rand_r(state)) / np.float32(RAND_MAX) < rate else 1
                 for _ in _ngrams(end - begin, k.attr("pyramid_layer"))]
        grams = [g for g, mark in zip(_ngrams(end - begin, k.attr("pyramid_layer")), marks) if mark]
        for start, size in grams:
            data = ids[begin + start:begin + start + size].tobytes()
            picks = [xxh32(data, j) % space for j in range(0, emb, rand_len)]
            rows.append(np.concatenate([w[p:p + rand_len] for p in picks]))
        if not grams:
            rows.append(np.zeros(emb, w.dtype))
        kept += marks
        out_offsets.append(len(rows))
        kept_offsets.append(kept_offsets[-1] + sum(marks))
    out = np.stack(rows).astype(w.dtype)
    if not training:
        out *= rate
    k.set_lod("Out", [out_offsets])
    k.set_lod("DropPos", [kept_offsets])
    return {"Out": out, "DropPos": np.array(kept, np.int32).reshape(-1, 1), "X_Temp_Out": x.astype(np.float32)}
