"""Kernels of gradc.ops.llm_block_attention: block_multihead_attention (prefill and decode against a paged cache)
and blha_get_max_len, in float64 inside."""

from __future__ import annotations

import numpy as np

from . import kernel
from .llm_attention import dequantized, quantized_out, softmax_attend


def _pairs(x, cos, sin):
    """Adjacent pairs (2i, 2i + 1) turned by cos[i], sin[i]."""
    even, odd = x[..., 0::2], x[..., 1::2]
    return np.stack([even * cos - odd * sin, odd * cos + even * sin], axis=-1).reshape(x.shape)


def _halves(x, cos, sin):
    """Halves (i, i + D/2) turned by cos[..., :D/2] for the first and cos[..., D/2:] for the second half."""
    half = x.shape[-1] // 2
    left, right = x[..., :half], x[..., half:]
    return np.concatenate([left * cos[..., :half] - right * sin[..., :half],
                           right * cos[..., half:] + left * sin[..., half:]], axis=-1)


class Int8Cache:
    """The int8 cache's codes: a value of kv head g is stored as code + 128 and read back as dequant_scale[g] (u - 128),
    each step in the dtype the kernel holds it in. dynamic_cachekv_quant: scales [B, KVH], row b sequence b's, the
    prefill's measured from the batch's values (``measure``)."""

    def __init__(self, k, dtype, kv_heads: int):
        self.dynamic = k.attr("dynamic_cachekv_quant")
        self.scales = {name: k.x(f"cache_{name}_scales").reshape(-1, kv_heads, 1).astype(np.float32)
                       for name in ("k_quant", "v_quant", "k_dequant", "v_dequant")}
        self.dtype, self.ties_even = dtype, k.attr("quant_round_type") == 0 and not self.dynamic
        self.bounds = (-127.0, 127.0) if self.dynamic else (k.attr("quant_min_bound"), k.attr("quant_max_bound"))

    def measure(self, values, b: int, which: str) -> None:
        """Sequence b's scales from ``values`` [n, KVH, D]: quant 127 / max |x| per kv head (float32), dequant its
        inverse."""
        peak = np.abs(values.astype(self.dtype)).max(axis=(0, 2)).astype(np.float32)
        if not peak.all():
            raise ValueError(f"dynamic_cachekv_quant: every {which} value of a kv head is 0, so the kernel's scale "
                             "127 / 0 is infinite")
        quant = np.float32(127) / peak
        self.scales[f"{which}_quant"][b, :, 0], self.scales[f"{which}_dequant"][b, :, 0] = quant, np.float32(1) / quant

    def write_back(self, k) -> None:
        """Into the four scale vars, as Paddle's kernel writes its inputs (the op has no output for them): an op or run
        reading them later sees the measured rows."""
        for name, scales in self.scales.items():
            fed = k.x(f"cache_{name}_scales")
            k.scope.assign(k.ins[f"cache_{name}_scales"][0], scales.reshape(fed.shape).astype(fed.dtype))

    def store(self, x, which: str, decode: bool, b: int):
        """x [..., KVH, D] as uint8: prefill rounds by quant_round_type into the attribute bounds (dynamic: half away
        from zero into [-127, 127]); decode's round_tmp rounds the product (in qkv's dtype) to even into [-127, 127]
        whatever the attributes say."""
        product = self.scales[f"{which}_quant"][b if self.dynamic else 0] * x.astype(self.dtype).astype(np.float32)
        if decode:
            codes, (low, high) = np.rint(product.astype(self.dtype).astype(np.float32)), (-127.0, 127.0)
        else:
            wide = product.astype(np.float64)   # exact, so that C's round() (half away from zero) is too
            codes = np.rint(wide) if self.ties_even else np.sign(wide) * np.floor(np.abs(wide) + 0.5)
            low, high = self.bounds
        return (np.clip(codes, low, high) + 128).astype(np.uint8)

    def load(self, codes, which: str, b: int):
        """codes [KVH, count, D] back to values."""
        scale = self.scales[f"{which}_dequant"][b if self.dynamic else 0]
        values = scale[:, None] * (codes.astype(np.float32) - np.float32(128))
        return values.astype(self.dtype).astype(np.float64)


class Paged:
    """The op's views: the packed qkv split into heads, token positions, the cache pages."""

    def __init__(self, k):
        self.k, qkv = k, k.x("qkv")
        self.key_cache, self.value_cache = k.x("key_cache").copy(), k.x("value_cache").copy()
        self.kv_heads, self.block, self.dim = self.key_cache.shape[1:]
        self.heads = qkv.shape[1] // self.dim - 2 * self.kv_heads
        bias, qkv = k.optional("qkv_bias"), dequantized(k, qkv)
        self.dtype = qkv.dtype
        self.qkv = qkv.astype(np.float64) + (0 if bias is None else bias.reshape(-1))
        self.tables = k.x("block_tables")
        self.rope = k.optional("rope_emb")
        self.neox, self.seq = k.attr("use_neox_style"), k.attr("max_seq_len")
        self.shared = np.arange(self.heads) // (self.heads // self.kv_heads)
        scaled = k.optional("cache_k_quant_scales") is not None
        self.int8 = Int8Cache(k, self.dtype, self.kv_heads) if scaled else None
        prefix = k.optional("pre_key_cache")
        self.pre = 0 if prefix is None else prefix.shape[2]
        self.prefix = None if prefix is None else (prefix.astype(np.float64), k.x("pre_value_cache").astype(np.float64))

    def split(self, rows):
        """q [n, H, D], k and v [n, KVH, D] of the given token rows."""
        heads = self.qkv[rows].reshape(len(rows), -1, self.dim)
        return heads[:, :self.heads], heads[:, self.heads:self.heads + self.kv_heads], heads[:, self.heads
                                                                                            + self.kv_heads:]

    def slot(self, b: int, position: int):
        page = position // self.block
        if page >= self.tables.shape[1] or not 0 <= self.tables[b, page] < self.key_cache.shape[0]:
            raise ValueError(f"sequence {b}'s position {position} falls outside its block table or the cache")
        return self.tables[b, page], position % self.block

    def write(self, b: int, positions, keys, values, decode: bool = False) -> None:
        """keys and values [n, KVH, D] of the given positions into their pages (quantized for the int8 cache)."""
        if self.int8 is not None:
            keys, values = self.int8.store(keys, "k", decode, b), self.int8.store(values, "v", decode, b)
        for position, key, value in zip(positions, keys, values):
            page, row = self.slot(b, position)
            self.key_cache[page, :, row], self.value_cache[page, :, row] = key, value

    def read(self, b: int, count: int):
        """The cached keys and values of positions 0..count-1: [KVH, count, D] each (dequantized)."""
        pages = [self.slot(b, p) for p in range(count)]
        keys = np.stack([self.key_cache[page, :, row] for page, row in pages], axis=1)
        values = np.stack([self.value_cache[page, :, row] for page, row in pages], axis=1)
        if self.int8 is not None:
            return self.int8.load(keys, "k", b), self.int8.load(values, "v", b)
        return keys.astype(np.float64), values.astype(np.float64)

    def prefill_rope(self, x, positions):
        flat, half = self.rope.astype(np.float64).reshape(-1), self.dim // 2
        length = self.rope.shape[2]
        if self.neox:
            index = positions[:, None] * self.dim + np.arange(half)
            cos, sin = flat[index], flat[length * self.dim + index]
            return _halves(x, np.concatenate([cos, cos], -1)[:, None], np.concatenate([sin, sin], -1)[:, None])
        index = positions[:, None] * half + np.arange(half)
        return _pairs(x, flat[index][:, None], flat[length * half + index][:, None])

    def decode_rope(self, x, step: int):
        if self.neox:
            flat = self.rope.astype(np.float64).reshape(-1)
            index = step * self.dim + np.arange(self.dim)
            return _halves(x, flat[index], flat[self.rope.shape[2] * self.rope.shape[4] + index])
        exponent = np.arange(0, self.dim, 2, dtype=np.float32) / np.float32(self.dim)
        angle = (np.float32(step) / np.float32(self.k.attr("rope_theta")) ** exponent).astype(np.float64)
        return _pairs(x, np.cos(angle), np.sin(angle))


def _phase_on(k, slot: str, lengths) -> bool:
    given = k.optional(slot)
    return int(given.reshape(-1)[0]) > 0 if given is not None else bool(np.any(lengths > 0))


def _prefill(paged, k, out, encoder) -> None:
    origin = k.x("padding_offsets").reshape(-1)
    starts, mask, pre = k.x("cu_seqlens_q").reshape(-1), k.optional("mask"), paged.pre
    spans = {b: np.arange(starts[b], starts[b + 1]) for b in np.flatnonzero(encoder > 0)}
    for rows in spans.values() if paged.rope is not None else ():   # all turned before any scale is measured
        q, key, value = paged.split(rows)
        positions = (rows + origin[rows]) % paged.seq
        q, key = paged.prefill_rope(q, positions), paged.prefill_rope(key, positions)
        paged.qkv[rows] = np.concatenate([q, key, value], axis=1).reshape(len(rows), -1)
    for b, rows in spans.items():
        positions, count = (rows + origin[rows]) % paged.seq, len(rows) + pre
        q, key, value = paged.split(rows)
        if paged.int8 is not None and paged.int8.dynamic:   # the kernel's max runs over every token of the batch
            _, keys, values = paged.split(np.arange(len(paged.qkv)))
            paged.int8.measure(keys, b, "k")
            paged.int8.measure(values, b, "v")
        prefix = [part[b].swapaxes(0, 1) for part in paged.prefix] if pre else [key[:0], value[:0]]
        keys, values = np.concatenate([prefix[0], key]), np.concatenate([prefix[1], value])
        scores = np.einsum("ihd,jhd->hij", q, keys[:, paged.shared]) / np.sqrt(paged.dim)
        if mask is not None:
            if mask.shape[2] < len(rows) or mask.shape[3] < count:
                raise ValueError(f"sequence {b} needs a mask of {len(rows)} x {count} (its prefix and tokens), "
                                 f"mask is {list(mask.shape)}")
            scores = scores + mask[b, :, :len(rows), :count].astype(np.float64)
        else:   # token i sees the whole prefix and tokens 0..i
            scores = np.where(np.arange(count) <= np.arange(len(rows))[:, None] + pre, scores, -np.inf)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        out[rows] = np.einsum("hij,jhd->ihd", weights, values[:, paged.shared]).reshape(len(rows), -1)
        paged.write(b, positions + pre, key, value)
        paged.write(b, np.arange(pre), *prefix)


def _decode(paged, k, out, decoder) -> None:
    cum, mask = k.x("cum_offsets").reshape(-1), k.optional("tgt_mask")
    for b in np.flatnonzero(decoder > 0):
        step, row = int(decoder[b]), b * paged.seq - int(cum[b])
        q, key, value = (part[0] for part in paged.split(np.array([row])))
        if paged.rope is not None:   # at the token's own position, as the prefill turns it (not past the prefix)
            q, key = paged.decode_rope(q, step), paged.decode_rope(key, step)
        step += paged.pre   # the cache holds the prefix first
        cached_keys, cached_values = paged.read(b, step)
        paged.write(b, [step], key[None], value[None], decode=True)
        # the new token's own k and v enter unquantized, as the kernel keeps them in registers
        keys, values = (np.concatenate([old, new[:, None]], axis=1) for old, new in ((cached_keys, key),
                                                                                    (cached_values, value)))
        scores = np.einsum("hd,hsd->hs", q, keys[paged.shared]) / np.sqrt(paged.dim)
        if mask is not None:
            if step >= mask.shape[-1]:
                raise ValueError(f"sequence {b} is at step {step}, past tgt_mask's {mask.shape[-1]} columns")
            scores = scores + mask[b, :, 0, :step + 1].astype(np.float64)
        out[row] = softmax_attend(scores, values[paged.shared]).reshape(-1)


@kernel("block_multihead_attention")
def block_multihead_attention(k):
    paged, qkv = Paged(k), k.x("qkv")
    encoder, decoder = k.x("seq_lens_encoder").reshape(-1), k.x("seq_lens_decoder").reshape(-1)
    out = np.zeros((qkv.shape[0], paged.heads * paged.dim))
    if _phase_on(k, "max_enc_len_this_time", encoder):
        _prefill(paged, k, out, encoder)
        if paged.int8 is not None and paged.int8.dynamic:
            paged.int8.write_back(k)
    if _phase_on(k, "max_dec_len_this_time", decoder):
        _decode(paged, k, out, decoder)
    qkv_out = qkv if k.optional("qkv_out_scale") is not None else paged.qkv.astype(qkv.dtype)
    out = out.astype(paged.dtype)
    if k.attr("out_scale") > 0:   # the kernel smooths only with both out_shift and out_smooth
        out = quantized_out(k, out, k.optional("out_shift") if k.optional("out_smooth") is not None else None)
    return {"fmha_out": out, "qkv_out": qkv_out,
            "key_cache_out": paged.key_cache, "value_cache_out": paged.value_cache}


@kernel("blha_get_max_len")
def blha_get_max_len(k):
    count = k.x("batch_size").shape[0]
    encoder, decoder = (k.x(slot).reshape(-1)[:count] for slot in ("seq_lens_encoder", "seq_lens_decoder"))
    return {"max_enc_len_this_time": np.array([encoder.max(initial=0)], np.int32),
            "max_dec_len_this_time": np.array([decoder.max(initial=0)], np.int32)}
