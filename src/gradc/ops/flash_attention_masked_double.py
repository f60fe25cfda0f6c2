"""Second derivatives of the flash attentions that mask by run-time values: flash_attn_unpadded_grad and
flash_attn_varlen_qkvpacked_grad (sequences from cu_seqlens), flashmask_attention_grad (startend_row_indices).
Composite (gradc.ops.composite), so third derivatives follow: the attention is written again in plain ops
(gradc.ops.flash_attention_double.attention_ops) with the mask built at run time from the integer inputs by
comparisons of row and column numbers, so only the token counts need be known:

- varlen: all tokens attend as one batch of [total_q, total_k], query row i keeping key j where both belong to the
  same sequence (its number: how many of cu_seqlens are <= the row; varlen_padded: row // max_seqlen, the row kept
  while row % max_seqlen < the sequence's length) and, causal, j's place in it <= i's (the kernels' top-left diagonal);
- flashmask: key j dropped for the rows in its startend_row_indices ranges, as the kernel reads them.

A dropped key adds -2^100 to its score (exp gives 0 exactly; float16: -65504); a row with no key left, whose out the
kernels give 0, attends to all its keys and is multiplied by 0, so nothing flows through it either. The integer
inputs, out and softmax_lse get no gradient.
An attn_mask [..., 1 | h, SQ, SK] of varlen sequences, which the kernels slice per sequence (sequence s reads
mask[s % M][:, :its query rows, :its key rows], M the product of the leading dims), is gathered at run time for each
(query, key) pair of one sequence from the flat mask at ((s % M) h' + head) SQ SK + the query's place SK + the key's
place (0 for pairs of different sequences, which the keep mask drops).
"""

from __future__ import annotations

import math

from ..errors import GradError
from ..ir import VarType
from ..registry import defgrad
from . import flash_attention, flash_attention_varlen  # noqa: F401  (register the grad ops given makers here)
from .composite import expansion, first
from .creation import scalars
from .flash_attention_double import attention_ops, grads_again, reshaped


def dropped(f, like: str) -> float:
    """The score a dropped key gets: -2^100 (exactly a float32, so the scale attributes hold it; exp gives 0), or
    float16's lowest, -65504, in float16, where -2^100 would be -inf and 0 times it NaN."""
    return -65504.0 if f.g.block.find_var(like).dtype == VarType.FP16 else -(2.0 ** 100)


def ints(f, like: str, values: list[int]) -> str:
    return f.op("assign_value", {}, like, {"shape": [len(values)], "dtype": int(VarType.INT64),
                                           "values": scalars(values)}, dims=lambda s: [len(values)],
                dtype=VarType.INT64)


def logic(f, type: str, x: str, y: str) -> str:
    """A comparison (or logical_and / logical_or) of x and y, broadcast as numpy does."""
    shapes = [f.g.shape(x), f.g.shape(y)]
    rank = max(map(len, shapes))
    padded = [[1] * (rank - len(shape)) + shape for shape in shapes]
    shape = [max(a, b) for a, b in zip(*padded)]
    return f.op(type, {"X": x, "Y": y}, x, {"axis": -1, "force_cpu": False}, dtype=VarType.BOOL,
                dims=lambda s: shape)


def as_int64(f, x: str) -> str:
    return f.op("cast", {"X": x}, x, {"in_dtype": int(f.g.block.find_var(x).dtype), "out_dtype": int(VarType.INT64)},
                dtype=VarType.INT64)


def column(f, x: str) -> str:
    return f.op("unsqueeze2", {"X": x}, x, {"axes": [-1]}, more={"XShape": f.xshape(x)}, dims=lambda s: [*s, 1])


def tokens(f, cu_slot: str, rows: int, longest: int, padded: bool, used_slot: str | None = None) -> tuple:
    """(sequence number, place in it, kept, its sequence's length) of each of ``rows`` tokens, int64 [rows] but
    kept bool [rows], and the lengths by sequence number; ``used_slot``: rows used per sequence (seqused), else the
    spans cu_seqlens gives."""
    g = f.g
    cu = as_int64(f, first(g.I(cu_slot)))
    count = g.shape(cu)[0]
    row = ints(f, cu, list(range(rows)))
    used = first(g.I(used_slot)) if used_slot else None
    lengths = as_int64(f, used) if used is not None else \
        f.sub(f.slice(cu, 0, 1, count), f.slice(cu, 0, 0, count - 1), cu)
    zero = ints(f, cu, [0])
    if padded:
        sequence = ints(f, cu, [min(i // longest, count - 1) for i in range(rows)])   # past the last: none kept
        place = ints(f, cu, [i % longest for i in range(rows)])
        lengths = f.op("concat", {"X": [lengths, zero]}, cu, {"axis": 0}, dims=lambda s: [count])
    else:
        # row i's sequence numbered by how many offsets are <= i (an empty sequence is skipped by counting past it)
        passed = f.op("cast", {"X": logic(f, "greater_equal", column(f, row), cu)}, row,
                      {"in_dtype": int(VarType.BOOL), "out_dtype": int(VarType.INT64)}, dtype=VarType.INT64,
                      dims=lambda s: [rows, count])
        sequence = f.op("reduce_sum", {"X": passed}, row, {"dim": [1], "keep_dim": False, "reduce_all": False},
                        dims=lambda s: [rows])
        starts = f.op("concat", {"X": [f.slice(cu, 0, 0, 1), cu]}, cu, {"axis": 0}, dims=lambda s: [count + 1])
        place = f.sub(row, f.op("gather", {"X": starts, "Index": sequence}, cu, {"axis": 0}, dims=lambda s: [rows]),
                      row)
        lengths = f.op("concat", {"X": [zero, lengths, zero]}, cu, {"axis": 0}, dims=lambda s: [count + 1])
    length = f.op("gather", {"X": lengths, "Index": sequence}, cu, {"axis": 0}, dims=lambda s: [rows])
    inside = logic(f, "logical_and", logic(f, "greater_equal", place, zero), logic(f, "less_than", place, length))
    return sequence, place, inside, length, lengths


def _bias_and_live(f, keep: str, like: str, axis: int) -> tuple[str, str]:
    """(0 where ``keep``, ``dropped`` elsewhere; 1 for a row keeping any key along ``axis``, else 0), like's dtype.
    A row keeping none attends to every key instead (finite, not 0 / 0), and the caller multiplies it by 0."""
    dtype = f.g.block.find_var(like).dtype
    kept = f.op("cast", {"X": keep}, like, {"in_dtype": int(VarType.BOOL), "out_dtype": int(dtype)}, dtype=dtype,
                dims=lambda s: f.g.shape(keep))
    live = f.op("reduce_max", {"X": kept}, kept, {"dim": [axis], "keep_dim": True, "reduce_all": False},
                dims=lambda s: [1 if i == axis else d for i, d in enumerate(s)])
    opened = logic(f, "logical_or", keep, logic(f, "equal", live, f.fill_like(live, 0.0)))
    opened = f.op("cast", {"X": opened}, like, {"in_dtype": int(VarType.BOOL), "out_dtype": int(dtype)}, dtype=dtype,
                  dims=lambda s: f.g.shape(opened))
    low = dropped(f, like)
    return f.scale(opened, -low, low), live


def _int_op(f, type: str, x: str, y: str, dims: list[int]) -> str:
    return f.op(type, {"X": x, "Y": y}, x, {"axis": -1}, dims=lambda _: dims, dtype=VarType.INT64)


def _mask_scores(f, g, query: tuple, key: tuple, keep: str, padded: bool, heads: list[int]) -> str | None:
    """attn_mask's score of each (query, key) pair of one sequence, [1, *heads, total_q, total_k] (``heads``: the
    scores' head dims, attention_ops' [hk, groups] or [1, 1]); None without a mask."""
    mask = first(g.I("attn_mask"))
    if mask is None:
        return None
    shape = g.shape(mask)
    if shape is None or len(shape) < 3 or any(d < 0 for d in shape):
        raise GradError(f"{g.fwd.type}: a second derivative needs attn_mask's dims known, got {shape}")
    copies, mask_heads, (sq, sk) = math.prod(shape[:-3]), shape[-3], shape[-2:]
    rows, cols = g.shape(query[1])[0], g.shape(key[1])[0]
    sequence = query[0] if padded else _int_op(f, "elementwise_sub", query[0], ints(f, query[0], [1]), [rows])
    copy = _int_op(f, "elementwise_mod", sequence, ints(f, sequence, [copies]), [rows])
    place_q, place_k = (_int_op(f, "elementwise_min", place[1], ints(f, place[1], [n - 1]), [size])
                        for place, n, size in ((query, sq, rows), (key, sk, cols)))
    row_start = _int_op(f, "elementwise_add", _int_op(f, "elementwise_mul", copy, ints(f, copy, [mask_heads * sq * sk]),
                                                      [rows]),
                        _int_op(f, "elementwise_mul", place_q, ints(f, place_q, [sk]), [rows]), [rows])
    head_start = reshaped(f, ints(f, copy, [h * sq * sk for h in range(mask_heads)]), [mask_heads, 1, 1])
    index = _int_op(f, "elementwise_add", _int_op(f, "elementwise_add", head_start, column(f, row_start),
                                                  [mask_heads, rows, 1]), place_k, [mask_heads, rows, cols])
    flat = reshaped(f, mask, [-1])
    picked = f.op("gather", {"X": flat, "Index": reshaped(f, index, [-1])}, flat, {"axis": 0},
                  dims=lambda _: [mask_heads * rows * cols])
    picked = reshaped(f, picked, [1, *heads, rows, cols])
    zeros = f.fill_like(picked, 0.0)
    return f.op("where", {"Condition": keep, "X": picked, "Y": zeros}, picked)


def _varlen_out(f, g, q: str, k: str, v: str, padded: bool) -> str:
    """out [total_q, h, dv] of flash_attn_unpadded (or varlen_padded) over q [total_q, h, d], k, v [total_k, hk, d]."""
    shapes = [g.shape(x) for x in (q, k)]
    if any(shape is None or shape[0] < 0 for shape in shapes) or g.shape(first(g.I("cu_seqlens_q"))) in (None, [-1]):
        raise GradError(f"{g.fwd.type}: a second derivative needs the token counts and cu_seqlens' length known, "
                        f"got q {shapes[0]}, k {shapes[1]}")
    rows, cols = shapes[0][0], shapes[1][0]
    query = tokens(f, "cu_seqlens_q", rows, g.attr("max_seqlen_q"), padded)
    key = tokens(f, "cu_seqlens_k", cols, g.attr("max_seqlen_k"), padded)
    keep = same_sequence(f, query, key)
    if g.attr("causal"):
        keep = logic(f, "logical_and", keep, logic(f, "less_equal", key[1], column(f, query[1])))
    mask = first(g.I("attn_mask"))
    heads = [1, 1] if mask is None or g.shape(mask)[-3] == 1 else [shapes[1][1], shapes[0][1] // shapes[1][1]]
    scores = _mask_scores(f, g, query, key, keep, padded, heads)
    return packed_out(f, g, q, k, v, keep, g.attr("scale"),
                      None if scores is None else lambda f, values: f.add(values, scores, values))


def same_sequence(f, query: tuple, key: tuple) -> str:
    """bool [total_q, total_k]: query and key tokens (``tokens``) kept in one sequence."""
    keep = logic(f, "logical_and", logic(f, "equal", column(f, query[0]), key[0]), column(f, query[2]))
    return logic(f, "logical_and", keep, key[2])


def packed_out(f, g, q: str, k: str, v: str, keep: str, scale: float, scores_first=None) -> str:
    """out [total_q, h, dv] of all tokens attending as one batch under ``keep`` [total_q, total_k] (rows with no key
    0); ``scores_first(f, scores)``: applied to the scaled scores before the mask."""
    rows = g.shape(q)[0]
    bias, live = _bias_and_live(f, keep, q, 1)

    def masked(f, scores: str, sq: int, sk: int) -> str:
        return f.add(scores_first(f, scores) if scores_first else scores, bias, scores)

    batched = [reshaped(f, x, [1, *g.shape(x)]) for x in (q, k, v)]
    out = attention_ops(f, g, *batched, scale=scale, mask_slot=None, masked=masked)
    out = reshaped(f, out, [rows, g.shape(q)[1], g.shape(v)[2]])
    return f.mul(out, reshaped(f, live, [rows, 1, 1]), out)


@expansion
def _unpadded_again(f, g):
    inputs = {slot: first(g.I(slot)) for slot in ("q", "k", "v")}
    return grads_again(f, g, _varlen_out(f, g, *inputs.values(), padded=False), inputs)


@expansion
def _varlen_packed_again(f, g):
    """qkv [total, h / hk + 2, hk, d] sliced as the kernel does (q its first h / hk groups), then as unpadded."""
    qkv = first(g.I("qkv"))
    shape = g.shape(qkv)
    if shape is None or any(d < 0 for d in shape):
        raise GradError(f"{g.fwd.type}: qkv needs known dims for a second derivative, got {shape}")
    rows, groups, kv_heads, d = shape
    q = reshaped(f, f.slice(qkv, 1, 0, groups - 2), [rows, (groups - 2) * kv_heads, d])
    k, v = (reshaped(f, f.slice(qkv, 1, i, i + 1), [rows, kv_heads, d]) for i in (groups - 2, groups - 1))
    return grads_again(f, g, _varlen_out(f, g, q, k, v, g.attr("varlen_padded")), {"qkv": qkv})


def flashmask_keep(f, g, bounds: str, sq: int, causal: bool, shift: int = 0) -> str:
    """bool [b, heads of bounds, sq, sk]: the keys each query row keeps under startend_row_indices [b, h', sk, n]
    (n 1 or 2 causal: rows from the first bound, up to the second, dropped; otherwise 2: rows from the first and
    rows before the second dropped, 4: rows in [first, second) and in [third, fourth) dropped); causal keeps key
    j <= i + shift besides."""
    b, heads, sk, n = g.shape(bounds)
    wide = as_int64(f, bounds)
    bound = [reshaped(f, f.slice(wide, 3, i, i + 1), [b, heads, 1, sk]) for i in range(n)]
    row = column(f, ints(f, wide, list(range(sq))))

    def within(start: str, end: str) -> str:
        return logic(f, "logical_and", logic(f, "greater_equal", row, start), logic(f, "less_than", row, end))

    if causal:
        dropped = within(bound[0], bound[1]) if n == 2 else logic(f, "greater_equal", row, bound[0])
        keep = f.op("logical_not", {"X": dropped}, dropped)
        diagonal = column(f, ints(f, wide, [i + shift for i in range(sq)]))
        return logic(f, "logical_and", keep, logic(f, "less_equal", ints(f, wide, list(range(sk))), diagonal))
    if n == 2:
        dropped = logic(f, "logical_or", logic(f, "greater_equal", row, bound[0]),
                         logic(f, "less_than", row, bound[1]))
    else:
        dropped = logic(f, "logical_or", within(bound[0], bound[1]), within(bound[2], bound[3]))
    return f.op("logical_not", {"X": dropped}, dropped)


def flashmask_out(f, g, q: str, k: str, v: str, scale: float | None = None, causal_attr: str = "causal",
                  bottom_right: bool = False) -> str:
    """out [b, sq, h, dv] of flashmask_attention (gradc.executor.kernels.flash_attention.flashmask_keep's mask; the
    causal diagonal bottom-right, and block_mask's 128 x 128 tiles, as flashmask_attention_v2's)."""
    bounds = first(g.I("startend_row_indices"))
    shapes = [g.shape(x) for x in (q, k, bounds)]
    if any(shape is None or any(d < 0 for d in shape) for shape in shapes):
        raise GradError(f"{g.fwd.type}: a second derivative needs q, k and startend_row_indices of known dims, got "
                        f"{shapes}")
    (b, sq, heads, _), (_, _, kv_heads, _), (_, mask_heads, sk, _) = shapes
    groups = heads // kv_heads
    keep = flashmask_keep(f, g, bounds, sq, g.attr(causal_attr), sk - sq if bottom_right else 0)
    if (tiles := first(g.I("block_mask"))) is not None:
        keep = logic(f, "logical_and", keep, _tiles_kept(f, tiles, sq, sk))
    split = [kv_heads, groups] if mask_heads == heads else [mask_heads, 1]
    keep = reshaped(f, keep, [b, *split, sq, sk])   # as attention_ops' scores [b, hk, groups, sq, sk]
    bias, live = _bias_and_live(f, keep, q, 4)
    out = attention_ops(f, g, q, k, v, scale=scale, mask_slot=None,
                        masked=lambda f, scores, sq, sk: f.add(scores, bias, scores))
    live = f.op("transpose2", {"X": live}, live, {"axis": [0, 3, 1, 2, 4]}, more={"XShape": f.xshape(live)},
                dims=lambda s: [s[0], s[3], s[1], s[2], s[4]])   # [b, sq, hk | 1, groups | 1, 1]
    dv = g.shape(v)[-1]
    out5 = reshaped(f, out, [b, sq, kv_heads, groups, dv])
    return reshaped(f, f.mul(out5, live, out5), [b, sq, heads, dv])


def _tiles_kept(f, tiles: str, sq: int, sk: int) -> str:
    """bool [b, h', sq, sk]: block_mask [b, h', ceil128(sq), ceil128(sk)] spread over its 128 x 128 tiles."""
    for axis, size in ((2, sq), (3, sk)):
        tiles = f.op("index_select", {"X": tiles, "Index": ints(f, tiles, [i // 128 for i in range(size)])}, tiles,
                     {"dim": axis}, dims=lambda s, axis=axis, size=size: [size if i == axis else d
                                                                           for i, d in enumerate(s)])
    return logic(f, "not_equal", tiles, f.fill_like(tiles, 0))


@expansion
def _flashmask_again(f, g):
    inputs = {slot: first(g.I(slot)) for slot in ("q", "k", "v")}
    return grads_again(f, g, flashmask_out(f, g, *inputs.values()), inputs)


defgrad("flash_attn_unpadded_grad", grad=_unpadded_again,
        no_grad_inputs=["cu_seqlens_q", "cu_seqlens_k", "out", "softmax_lse", "seed_offset", "attn_mask"])
defgrad("flash_attn_varlen_qkvpacked_grad", grad=_varlen_packed_again,
        no_grad_inputs=["cu_seqlens_q", "cu_seqlens_k", "out", "softmax_lse", "seed_offset", "attn_mask"])
defgrad("flashmask_attention_grad", grad=_flashmask_again,
        no_grad_inputs=["startend_row_indices", "out", "softmax_lse", "seed_offset"])
