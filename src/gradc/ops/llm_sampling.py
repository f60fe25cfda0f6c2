"""top_p_sampling (paddle.tensor.top_p_sampling, PaddleNLP's use_top_p decoding): GPU-only in Paddle 3.3.1, no
gradient. For each row of x [B, V] (the probabilities of one sequence's next token) with ps [B] (top_p):

    order the row descending (ties: the lower id first); the top-p set is its shortest head whose running sum
    reaches top_p (the whole row when it never does);
    truncated:      draw u in [0, 1); the id is the first of the order whose running sum reaches u top_p: P(id) =
                    min(p, top_p - sum before it) / top_p, over the top-p set
    non-truncated (any mode but "truncated", as the kernel tests it; the legacy op's default "truncate" too):
                    an exponential race over the top-p set: P(id) = p / (sum of the set's p)
    threshold [B]:  a drawn id below the row's threshold gives way to the nearest higher one at or above it (the
                    first of the order when none is): the rule of the kernel's fast path (a top-p set within its
                    first candidates); its full-sort path draws again among the ids at or above the threshold
    out [B, 1] = x[id], ids [B, 1] int64; with k > 0, topk_scores / topk_ids [B, k]: the head k of the order.

Deterministic, and checked so: the order, topk, and any row whose first probability already reaches top_p (its id
is the first of the order). The draws cannot follow Paddle's: its CUDA kernel draws from curand states (seeded by
seed or topp_seed) that nothing on a CPU reproduces; gradc draws u or the race from numpy's generator, seeded by
topp_seed[b] per row, else by seed when >= 0, else by gradc's global generator.
"""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..registry import defop
from .infer import check_choice, check_float, one_dtype

MODES = ("truncated", "non-truncated", "truncate")   # "truncate": the legacy proto's default, run as non-truncated


def _infer(ctx):
    check_float(ctx, "x")
    check_choice(ctx, "mode", MODES)
    dtype = one_dtype(ctx, "x", "ps", *(("threshold",) if ctx.has("threshold") else ()))
    if ctx.has("topp_seed") and ctx.dtype("topp_seed") not in (VarType.INT64, None):
        ctx.fail(f"topp_seed must be int64, got {dtype_name(ctx.dtype('topp_seed'))}")
    x, top_k = ctx.shape("x"), ctx.attr("k")
    if top_k < 0:
        ctx.fail(f"k={top_k} must not be negative")
    if x is not None and len(x) != 2:
        ctx.fail(f"x must be [batch, vocab], got {x}")
    batch, vocab = (x if x is not None else [-1, -1])
    if min(vocab, top_k) >= 0 and top_k > vocab:
        ctx.fail(f"k={top_k} is more than the vocab {vocab}")
    for slot in ("ps", "threshold", "topp_seed"):
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and batch >= 0 and -1 not in shape and _numel(shape) != batch:
            ctx.fail(f"{slot} {shape} must hold one value per row of x {x}")
    return {"out": ([batch, 1], dtype), "ids": ([batch, 1], VarType.INT64),
            "topk_scores": ([batch, top_k], dtype), "topk_ids": ([batch, top_k], VarType.INT64)}


def _numel(shape) -> int:
    total = 1
    for n in shape:
        total *= n
    return total


defop("top_p_sampling", ["x", "ps", "threshold?", "topp_seed?"], ["out", "ids", "topk_scores?", "topk_ids?"],
      attrs={"k": 0, "mode": "truncate", "seed": -1}, infer=_infer)
