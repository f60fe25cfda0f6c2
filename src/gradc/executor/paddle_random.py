"""Paddle's CPU draws, bit for bit: a random op with a seed of its own (its seed attribute, a dropout's fix_seed or
Seed tensor) draws from a std::mt19937_64 seeded with it, the others from Paddle's global engine (seeded as
paddle.seed seeds it), through libstdc++'s uniform_real_distribution, normal_distribution, uniform_int_distribution
and shuffle, as Paddle's kernels do (the samplers that take a varying number of words a value: paddle_random_dists).
gradc's draws then equal Paddle's: a startup gives Paddle's initial weights, a dropout Paddle's mask."""

from __future__ import annotations

import functools

import numpy as np

from . import libm

_N, _M = 312, 156
_UPPER, _LOWER = np.uint64(0xFFFFFFFF80000000), np.uint64(0x7FFFFFFF)
_TWIST, _ONE = np.uint64(0xB5026F5AA96619E9), np.uint64(1)
_RUN_BLOCKS = 64   # states made at once by a large draw: 156 KiB of words beside its output


class Engine:
    """std::mt19937_64 (its 312-word state twisted a block at a time, in numpy), seeded with one word as a seeded op
    seeds it, or by ``from_seed_sequence`` as paddle.seed seeds Paddle's global generator."""

    def __init__(self, seed: int):
        self._start(_seeded_state(int(seed) % 2 ** 64).copy())

    def _start(self, state: np.ndarray) -> None:
        self._state = state
        self._block, self._used = np.empty(0, np.uint64), 0

    @classmethod
    def _at(cls, state: np.ndarray) -> Engine:
        """An engine at ``state``, skipping the seeding its words replace (312 steps in Python: ~0.2 ms)."""
        engine = cls.__new__(cls)
        engine._start(state)
        return engine

    @classmethod
    def from_seed_sequence(cls, values) -> Engine:
        """Seeded through std::seed_seq(values): 624 32-bit words, paired low then high into the state."""
        words = _seed_sequence([int(v) % 2 ** 32 for v in values], 2 * _N)
        words = np.array(words, dtype=np.uint64)
        engine = cls._at(words[0::2] | (words[1::2] << np.uint64(32)))
        if not engine._state[0] & _UPPER and not engine._state[1:].any():   # the standard's all-zero guard
            engine._state[0] = np.uint64(1 << 63)
        return engine

    def snapshot(self) -> list[int]:
        """The engine's position: its state words, then how much of the current block is used and whether there is
        one (``restored`` continues from it)."""
        return [*map(int, self._state), self._used, int(len(self._block) > 0)]

    @classmethod
    def restored(cls, snapshot: list[int]) -> Engine:
        engine = cls._at(np.array(snapshot[:_N], dtype=np.uint64))
        engine._used, has_block = snapshot[_N:_N + 2]
        engine._block = _temper(engine._state.copy()) if has_block else np.empty(0, np.uint64)
        return engine

    def words(self, count: int) -> np.ndarray:
        """The next ``count`` 64-bit outputs."""
        out = np.empty(count, np.uint64)
        done = min(count, len(self._block) - self._used)   # what the last block left
        out[:done] = self._block[self._used:self._used + done]
        self._used += done
        while done < count:   # whole blocks, a bounded run of them at a time
            blocks = min(-(-(count - done) // _N), _RUN_BLOCKS)
            made = _temper(self._next_states(blocks))
            taken = min(count - done, len(made))
            out[done:done + taken] = made[:taken]
            done += taken
            if taken < len(made):   # the last block, partly used: the next draws continue it
                self._block, self._used = made[-_N:].copy(), taken - (len(made) - _N)
        return out

    def pending(self) -> np.ndarray:
        """The words the next draws return, to the end of the current block (a fresh block when it is spent), none
        consumed: scalar samplers read them and ``skip`` what they used."""
        if self._used == len(self._block):
            self._block, self._used = _temper(self._next_states(1)), 0
        return self._block[self._used:]

    def skip(self, count: int) -> None:
        self._used += count

    def _next_states(self, blocks: int) -> np.ndarray:
        """The raw words of the next ``blocks`` states in order, the last becoming the engine's: the recurrence run
        along one line of words, word k + N made from words k, k + 1 and k + M. No word depends on one less than M
        (half a block) before it, so half a block is made at once (a state twisted in place took three pieces)."""
        x = np.empty((blocks + 1) * _N, np.uint64)
        x[:_N] = self._state
        y, odd = np.empty(_M, np.uint64), np.empty(_M, np.uint64)   # into buffers: a fifth of the time went allocating
        for new in range(_N, len(x), _M):
            k = new - _N
            np.bitwise_and(x[k:k + _M], _UPPER, out=y)
            np.bitwise_and(x[k + 1:k + _M + 1], _LOWER, out=odd)
            np.bitwise_or(y, odd, out=y)
            np.multiply(np.bitwise_and(odd, _ONE, out=odd), _TWIST, out=odd)   # the twist where y is odd
            made = x[new:new + _M]
            np.bitwise_xor(x[new - _M:new], np.right_shift(y, _ONE, out=y), out=made)
            np.bitwise_xor(made, odd, out=made)
        self._state = x[-_N:].copy()
        return x[_N:]


@functools.lru_cache(maxsize=64)   # a seeded op seeds a new engine every run, mostly with the same few seeds
def _seeded_state(word: int) -> np.ndarray:
    """std::mt19937_64's state seeded with one word (read-only: each engine twists a copy)."""
    state = [0] * _N
    for i in range(_N):
        state[i] = word
        word = (6364136223846793005 * (word ^ (word >> 62)) + i + 1) % 2 ** 64
    words = np.array(state, dtype=np.uint64)
    words.flags.writeable = False
    return words


def _temper(y: np.ndarray) -> np.ndarray:
    """mt19937_64's output transform, in place."""
    y ^= (y >> np.uint64(29)) & np.uint64(0x5555555555555555)
    y ^= (y << np.uint64(17)) & np.uint64(0x71D67FFFEDA60000)
    y ^= (y << np.uint64(37)) & np.uint64(0xFFF7EEE000000000)
    y ^= y >> np.uint64(43)
    return y


def distribution_dtype(dtype) -> np.dtype:
    """The type Paddle's CPU distribution of a ``dtype`` output computes in: double for float64, float for the rest."""
    return np.dtype(np.float64 if np.dtype(dtype) == np.float64 else np.float32)


def _seed_sequence(values: list[int], count: int) -> list[int]:
    """std::seed_seq::generate: ``count`` 32-bit words mixed from ``values`` (the standard's algorithm)."""
    mask, size = 0xFFFFFFFF, len(values)
    out = [0x8B8B8B8B] * count
    rounds = max(size + 1, count)
    first, second = _mixing_positions(count, rounds)
    added = [size, *(k % count + values[k - 1] for k in range(1, size + 1))]   # the values' rounds add them
    for k, (i, ip, im, iq) in enumerate(first):
        mixed = out[i] ^ out[ip] ^ out[im]
        r1 = 1664525 * (mixed ^ (mixed >> 27)) & mask
        r2 = (r1 + (added[k] if k <= size else i)) & mask
        out[ip] = (out[ip] + r1) & mask
        out[iq] = (out[iq] + r2) & mask
        out[i] = r2
    for i, ip, im, iq in second:
        mixed = (out[i] + out[ip] + out[im]) & mask
        r3 = 1566083941 * (mixed ^ (mixed >> 27)) & mask
        r4 = (r3 - i) & mask
        out[ip] ^= r3
        out[iq] ^= r4
        out[i] = r4
    return out


@functools.lru_cache(maxsize=8)
def _mixing_positions(count: int, rounds: int) -> tuple[list, list]:
    """Each round's k, k + p, k - 1 and k + q modulo ``count`` in the two passes of seed_seq::generate: worked out
    once, not four modulos a round (the seeding's Python loop runs at half the cost; gradc train seeds every step)."""
    gap = 11 if count >= 623 else 7 if count >= 68 else 5 if count >= 39 else 3 if count >= 7 else (count - 1) // 2
    p = (count - gap) // 2
    q = p + gap
    def positions(ks):
        return [(k % count, (k + p) % count, (k - 1) % count, (k + q) % count) for k in ks]
    return positions(range(rounds)), positions(range(rounds, rounds + count))


def canonical(engine: Engine, count: int, dtype=np.float32) -> np.ndarray:
    """generate_canonical<float or double>: a word over 2^64 in ``dtype`` (one rounding), kept below 1."""
    return canonical_of(engine.words(count), dtype)


def canonical_of(words: np.ndarray, dtype) -> np.ndarray:
    """generate_canonical of given words."""
    dtype = np.dtype(dtype)
    return np.minimum(words.astype(dtype) * dtype.type(2.0 ** -64), np.nextafter(dtype.type(1), dtype.type(0)))


def uniform(engine: Engine, count: int, low: float, high: float, dtype=np.float32) -> np.ndarray:
    """uniform_real_distribution<float or double>(low, high): u (high - low) + low, each step rounded to ``dtype``."""
    low, high = np.dtype(dtype).type(low), np.dtype(dtype).type(high)
    return canonical(engine, count, dtype) * (high - low) + low


def normal(engine: Engine, count: int, mean: float, std: float, dtype=np.float32) -> np.ndarray:
    """normal_distribution<float or double>(mean, std): Marsaglia's polar method, each accepted pair giving y m,
    then x m, the logs glibc's (gradc.executor.libm)."""
    dtype = np.dtype(dtype)
    out, have, wanted = [], 0, 2 * -(-count // 2)
    while have < wanted:   # never more pairs than could be needed: a shared engine must be left where Paddle's is
        u = canonical(engine, wanted - have, dtype).astype(np.float64)
        x = (2 * u[0::2] - 1.0).astype(dtype)   # 2u - 1.0 in double, then stored in the distribution's type
        y = (2 * u[1::2] - 1.0).astype(dtype)
        r2 = x * x + y * y
        kept = (r2 <= 1) & (r2 != 0)
        x, y, r2 = x[kept], y[kept], r2[kept]
        scale = np.sqrt(dtype.type(-2) * libm.log(r2) / r2)
        values = np.empty(2 * len(r2), dtype)
        values[0::2], values[1::2] = y * scale, x * scale
        out.append(values)
        have += len(values)
    # the kernel takes mean and std as float, whatever the dtype
    return np.concatenate(out)[:count] * dtype.type(np.float32(std)) + dtype.type(np.float32(mean))


def integers(engine: Engine, count: int, low: int, high: int) -> np.ndarray:
    """uniform_int_distribution<int64>(low, high - 1): Lemire's multiply-shift (libstdc++ 11 and later, with 128-bit
    integers)."""
    return _below(engine, np.full(count, high - low, np.uint64)).astype(np.int64) + low


def permutation(engine: Engine, count: int) -> np.ndarray:
    """std::shuffle of 0 .. count - 1 (Paddle's randperm): libstdc++ draws two swap positions from one number below
    s (s + 1) for the elements i and i + 1 (s = i + 1), after one swap of element 1 when the count is even."""
    order = np.arange(count, dtype=np.int64)
    start = 1
    if count >= 2 and count % 2 == 0:
        other = int(_below(engine, np.array([2], np.uint64))[0])
        order[[1, other]] = order[[other, 1]]
        start = 2
    spans = np.arange(start + 1, count + 1, 2, dtype=np.uint64)
    drawn = _below(engine, spans * (spans + np.uint64(1)))
    firsts, seconds = drawn // (spans + np.uint64(1)), drawn % (spans + np.uint64(1))
    for block in range(0, len(spans), 1 << 16):   # the swaps one after another, their positions a block at a time
        pairs = zip(firsts[block:block + (1 << 16)].tolist(), seconds[block:block + (1 << 16)].tolist())
        for i, (first, second) in zip(range(start + 2 * block, count, 2), pairs):
            order[i], order[first] = order[first], order[i]
            order[i + 1], order[second] = order[second], order[i + 1]
    return order


def _below(engine: Engine, bounds: np.ndarray) -> np.ndarray:
    """A number below each bound, in order: the high 64 bits of a word times the bound, a word whose low 64 bits fall
    below 2^64 mod the bound skipped (it still consumes the draw; the words after it serve the elements after)."""
    thresholds = (np.uint64(0) - bounds) % bounds
    out, done, spare = np.empty(len(bounds), np.uint64), 0, np.empty(0, np.uint64)
    while done < len(bounds):
        words = np.concatenate([spare, engine.words(len(bounds) - done - len(spare))])
        top, bottom = _wide_product(words, bounds[done:])
        kept = bottom >= thresholds[done:]
        taken = len(words) if kept.all() else int(np.argmin(kept))
        out[done:done + taken] = top[:taken]
        done, spare = done + taken, words[taken + 1:]
    return out


def _wide_product(words: np.ndarray, factors) -> tuple[np.ndarray, np.ndarray]:
    """The high and low 64 bits of each word times its factor (< 2^64), from 32-bit halves."""
    half, thirty_two = np.uint64(0xFFFFFFFF), np.uint64(32)
    factors = np.asarray(factors, np.uint64)
    a_lo, a_hi, b_lo, b_hi = words & half, words >> thirty_two, factors & half, factors >> thirty_two
    lo_lo, hi_lo, lo_hi = a_lo * b_lo, a_hi * b_lo, a_lo * b_hi
    cross = (lo_lo >> thirty_two) + (hi_lo & half) + lo_hi
    top = a_hi * b_hi + (hi_lo >> thirty_two) + (cross >> thirty_two)
    return top, (cross << thirty_two) | (lo_lo & half)
