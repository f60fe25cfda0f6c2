"""Kernels of gradc.ops.pyramid_hash: XXH32 (the 32-bit xxHash, seeded) of each n-gram's float32 bytes picks the
table slices, glibc's rand_r draws the training dropout, and MurmurHash3_x64_128 probes the bloom filters, all
written here from their published definitions."""

from __future__ import annotations

import struct

import numpy as np

from ..lod import SETS_LOD
from . import kernel

SETS_LOD.add("pyramid_hash")   # a row per kept n-gram: Out and DropPos get LoDs of their own
PRIMES = (2654435761, 2246822519, 3266489917, 668265263, 374761393)
MASK = 0xFFFFFFFF
RAND_MAX = 2147483647
MASK64 = (1 << 64) - 1
MURMUR_C1, MURMUR_C2 = 0x87C37B91114253D5, 0x4CF5AD432745937F
BLOOM_MAGIC = 17070416   # the magic number of Paddle's 64-bit bloom filter header (magic, m, k, count)


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


def _rotl64(x: int, r: int) -> int:
    return ((x << r) | (x >> (64 - r))) & MASK64


def _fmix64(k: int) -> int:
    k = ((k ^ (k >> 33)) * 0xFF51AFD7ED558CCD) & MASK64
    k = ((k ^ (k >> 33)) * 0xC4CEB9FE1A85EC53) & MASK64
    return k ^ (k >> 33)


def murmur3_x64_128(data: bytes, seed: int) -> tuple[int, int]:
    """MurmurHash3_x64_128 of ``data``: its two 64-bit halves."""
    h1 = h2 = seed & MASK64
    blocks = len(data) // 16
    for i in range(blocks):
        k1, k2 = struct.unpack_from("<2Q", data, 16 * i)
        h1 ^= (_rotl64((k1 * MURMUR_C1) & MASK64, 31) * MURMUR_C2) & MASK64
        h1 = ((_rotl64(h1, 27) + h2) * 5 + 0x52DCE729) & MASK64
        h2 ^= (_rotl64((k2 * MURMUR_C2) & MASK64, 33) * MURMUR_C1) & MASK64
        h2 = ((_rotl64(h2, 31) + h1) * 5 + 0x38495AB5) & MASK64
    tail = data[16 * blocks:]
    if len(tail) > 8:
        k2 = int.from_bytes(tail[8:], "little")
        h2 ^= (_rotl64((k2 * MURMUR_C2) & MASK64, 33) * MURMUR_C1) & MASK64
    if tail:
        k1 = int.from_bytes(tail[:8], "little")
        h1 ^= (_rotl64((k1 * MURMUR_C1) & MASK64, 31) * MURMUR_C2) & MASK64
    h1, h2 = h1 ^ len(data), h2 ^ len(data)
    h1 = (h1 + h2) & MASK64
    h2 = (h2 + h1) & MASK64
    h1, h2 = _fmix64(h1), _fmix64(h2)
    h1 = (h1 + h2) & MASK64
    return h1, (h2 + h1) & MASK64


def bloom_filter(k, slot: str, length: str):
    """The filter a white or black list holds (its float32 values' bytes: the header magic, m, k, count as
    little-endian uint64, then m bits, the first the highest of byte 0), or None when the op uses none."""
    if not k.attr("use_filter") or k.attr(length) == 0:
        return None
    raw = np.ascontiguousarray(k.x(slot)).astype(np.float32).tobytes()
    magic, bits, probes, _ = struct.unpack_from("<4Q", raw) if len(raw) >= 32 else (0, 0, 0, 0)
    if magic != BLOOM_MAGIC or bits == 0 or len(raw) < 32 + bits // 8:
        raise ValueError(f"{slot} holds no bloom filter (magic {magic}, {bits} bits in {len(raw)} bytes): "
                         f"Paddle's kernel fails with '{'white' if slot == 'WhiteList' else 'black'} filter not load'")
    return bits, probes, raw[32:32 + bits // 8]


def bloom_holds(bloom, data: bytes) -> bool:
    bits, probes, vector = bloom
    for seed in range(probes):
        for h in murmur3_x64_128(data, seed):
            bit = h % bits
            if not vector[bit >> 3] & (0x80 >> (bit & 7)):
                return False
    return True


def _ngrams(length: int, layers: int):
    """(start, size) of a sequence's n-grams, by layer: bigrams first, up to size ``layers``."""
    return [(start, size + 1) for size in range(1, min(layers, length)) for start in range(length - size)]


@kernel("pyramid_hash")
def pyramid_hash(k):
    x, w = k.x("X"), k.x("W").reshape(-1)
    white, black = bloom_filter(k, "WhiteList", "white_list_len"), bloom_filter(k, "BlackList", "black_list_len")
    lod = k.lod("X")
    if not lod:
        raise ValueError("X has no LoD: pyramid_hash hashes the n-grams of each sequence")
    emb, space, rand_len = k.attr("num_emb"), k.attr("space_len"), k.attr("rand_len")
    training, rate, state = k.attr("is_training") != 0, np.float32(k.attr("drop_out_percent")), [k.attr("seed") & MASK]
    ids = x.reshape(-1).astype(np.float32)

    def mark(data: bytes) -> int:   # filtered out: 0 without a draw; else kept unless the dropout draw drops it
        if white and not bloom_holds(white, data) or black and bloom_holds(black, data):
            return 0
        return 0 if training and np.float32(rand_r(state)) / np.float32(RAND_MAX) < rate else 1

    rows, kept, out_offsets, kept_offsets = [], [], [0], [0]
    for begin, end in zip(lod[-1], lod[-1][1:]):
        marks = [mark(ids[begin + start:begin + start + size].tobytes())
                 for start, size in _ngrams(end - begin, k.attr("pyramid_layer"))]
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


@kernel("pyramid_hash_grad")
def pyramid_hash_grad(k):
    """Paddle's grad kernel is an update step: each kept n-gram's Out@GRAD row, times -lr, is added to the W slices
    its forward row copied, in place (in n-gram order, float32 for float32 W); X@GRAD gets zeros."""
    ids, dout = k.x("X_Temp_Out").reshape(-1).astype(np.float32), k.x("Out@GRAD")
    lod, marks, drop_lod = k.lod("X"), k.x("DropPos").reshape(-1), k.lod("DropPos")
    if not lod or not drop_lod:
        raise ValueError("X and DropPos need their LoDs: pyramid_hash_grad walks each sequence's n-grams")
    table = np.array(k.x("W"), copy=True)
    flat = table.reshape(-1)
    emb, space, rand_len = k.attr("num_emb"), k.attr("space_len"), k.attr("rand_len")
    step = table.dtype.type(-k.attr("lr"))
    untouched = {"X@GRAD": np.zeros_like(k.x("X"))}   # Paddle's kernel leaves it unwritten
    if len(ids) == len(lod[-1]) - 1 and (ids == -1).all():   # every sequence a lone -1 id: Paddle skips the update
        return untouched
    row, mark = 0, 0
    for (begin, end), (low, high) in zip(zip(lod[-1], lod[-1][1:]), zip(drop_lod[-1], drop_lod[-1][1:])):
        row += high == low   # the row of zeros of a sequence with no kept n-gram
        for start, size in _ngrams(end - begin, k.attr("pyramid_layer")):
            mark += 1
            if not marks[mark - 1]:
                continue
            data = ids[begin + start:begin + start + size].tobytes()
            for j in range(0, emb, rand_len):
                pick = xxh32(data, j) % space
                flat[pick:pick + rand_len] += step * dout[row, j:j + rand_len].astype(table.dtype)
            row += 1
    k.scope.assign(k.ins["W"][0], table)
    return untouched
