"""Second derivative of gradc.ops.sparse_attention: sparse_attention_grad's maker, composite (gradc.ops.composite), so
third derivatives follow. The attention is written again over the CSR entries with plain ops of known shapes, the
layout read at run time: entry e of a head lies in row r(e) = how many of Offset[1..s] are <= e (while e <
Offset[s]), so one-hot matrices R [nnz, s] of the rows and C [nnz, s] of the Columns pick each entry's q, k and v
(R Q, C K, C V) and sum the rows back (R^T). The grad op reads Softmax, not the masks: an entry whose probability is
0 is a masked one (exp of -inf), so it is dropped (its score gets -2^100, in float16 -65504); a row with none left
stays 0. The scores are shifted by their largest per head before exp (the row softmax does not move). Then its
backward, seeded with Out@GRAD, and both are differentiated again (``expansion``); Softmax, Offset and Columns get
no gradient.
"""

from __future__ import annotations

import math

from ..ir import VarType
from ..registry import defgrad
from . import sparse_attention  # noqa: F401  (registers the grad op given a maker here)
from .composite import expansion, first
from .flash_attention_double import grads_again, reshaped
from .flash_attention_masked_double import as_int64, column, dropped, ints, logic


def _matmul(f, x: str, y: str, shape: list[int], trans_x: bool = False) -> str:
    return f.op("matmul_v2", {"X": x, "Y": y}, y, {"trans_x": trans_x, "trans_y": False}, dims=lambda s: shape)


def _as(f, flags: str, like: str) -> str:
    """bool ``flags`` as 0 / 1 in ``like``'s dtype."""
    dtype = f.g.block.find_var(like).dtype
    shape = f.g.shape(flags)
    return f.op("cast", {"X": flags}, like, {"in_dtype": int(VarType.BOOL), "out_dtype": int(dtype)}, dtype=dtype,
                dims=lambda s: shape)


@expansion
def _sparse_attention_again(f, g):
    q, k, v, probs = (first(g.I(slot)) for slot in ("Q", "K", "V", "Softmax"))
    b, h, s, d = g.shape(q)
    nnz = g.shape(probs)[2]
    offset = as_int64(f, first(g.I("Offset")))
    entry = reshaped(f, ints(f, offset, list(range(nnz))), [1, 1, nnz, 1])
    starts = reshaped(f, f.slice(offset, 2, 1, s + 1), [b, h, 1, s])
    passed = logic(f, "greater_equal", entry, starts)   # [b, h, nnz, s]: the rows entry e lies past
    row = f.op("reduce_sum", {"X": _as(f, passed, offset)}, offset, {"dim": [3], "keep_dim": True,
                                                                   "reduce_all": False}, dims=lambda _: [b, h, nnz, 1])
    inside = logic(f, "less_than", entry, reshaped(f, f.slice(offset, 2, s, s + 1), [b, h, 1, 1]))
    rows = _as(f, logic(f, "logical_and", logic(f, "equal", row, reshaped(f, ints(f, offset, list(range(s))),
                                                                                [1, 1, 1, s])), inside), q)
    keys = _as(f, logic(f, "equal", column(f, as_int64(f, first(g.I("Columns")))),
                        reshaped(f, ints(f, offset, list(range(s))), [1, 1, 1, s])), q)
    picked_q, picked_k, picked_v = (_matmul(f, one_hot, x, [b, h, nnz, d])
                                    for one_hot, x in ((rows, q), (keys, k), (keys, v)))
    dots = f.op("reduce_sum", {"X": f.mul(picked_q, picked_k, picked_q)}, picked_q,
                {"dim": [3], "keep_dim": True, "reduce_all": False}, dims=lambda _: [b, h, nnz, 1])
    probs = reshaped(f, probs, [b, h, nnz, 1])
    kept = _as(f, logic(f, "greater_than", probs, f.fill_like(probs, 0.0)), q)
    scores = f.add(f.scale(dots, 1.0 / math.sqrt(d)), f.scale(kept, -dropped(f, q), dropped(f, q)), dots)
    top = f.op("reduce_max", {"X": scores}, scores, {"dim": [2], "keep_dim": True, "reduce_all": False},
               dims=lambda _: [b, h, 1, 1])
    weights = f.unary("exp", f.sub(scores, top, scores))
    totals = _matmul(f, rows, weights, [b, h, s, 1], trans_x=True)
    # a dropped entry's weight is 0: its denominator gets 1 more, so a row with none kept gives 0, not 0 / 0
    denominators = f.add(_matmul(f, rows, totals, [b, h, nnz, 1]), f.scale(kept, -1.0, 1.0), weights)
    softmax = f.div(weights, denominators, weights)
    out = _matmul(f, rows, f.mul(picked_v, softmax, picked_v), [b, h, s, d], trans_x=True)
    return grads_again(f, g, out, {slot: first(g.I(slot)) for slot in ("Q", "K", "V")}, "Out")


defgrad("sparse_attention_grad", grad=_sparse_attention_again,
        no_grad_inputs=["Offset", "Columns", "SparseDotSdd", "Softmax"])
