"""fused_rotary_position_embedding (paddle.incubate.nn.functional.fused_rotary_position_embedding, PaddleNLP's
Llama / Qwen with use_fused_rope): rotary position embedding of q and the optional k and v in one op. Paddle 3.3.1
runs it on GPU only; gradc follows the CUDA kernel's formula, per (batch b, position s, head, element i < d):

    q, k, v [b, s, heads, d] (time_major: [s, b, heads, d]), d even; each of k, v with q's b, s and d
    pos = position_ids[b, s] (int64 [b, s]) or s;  with both sin and cos ([n, d] or [1, n, 1, d], n >= every pos):
    sin_i = sin[pos, i], cos_i = cos[pos, i];  without them (either missing): sin_i, cos_i = sin, cos of
    pos / rotary_emb_base^((i - i mod 2) / d), computed in float32 as the kernel does
    out_i = x_i cos_i + rot(x)_i sin_i, with rot(x) = (-x_{i+1}, x_{i-1}) on each pair (2j, 2j+1) when
    use_neox_rotary_style (Paddle's name for rotating adjacent pairs) and (-x_{i+d/2}, x_{i-d/2}) on the halves
    otherwise (PaddleNLP's rotate_half)

Each out is linear in its input: fused_rotary_position_embedding_grad (sin, cos, position_ids, the outs' grads)
applies the transpose, dx = dout cos - rot(dout sin) (Paddle's grad kernel reads sin at the partner element, which
is the transpose for any sin table). sin, cos and position_ids get no gradient, as in Paddle.
"""

from __future__ import annotations

from ..ir import VarType
from ..makers import grad_op
from ..registry import defop
from ..shapes import dims_match
from .infer import check_float, one_dtype

ROPE_ATTRS = {"use_neox_rotary_style": True, "time_major": False, "rotary_emb_base": 10000.0}
TABLES = ("sin", "cos", "position_ids")
PAIRS = (("q", "out_q"), ("k", "out_k"), ("v", "out_v"))


def _check_tables(ctx, batch: int, seq: int, d: int) -> None:
    """sin and cos alike, [n, d] or [1, n, 1, d] with n = seq (n >= seq with position_ids [batch, seq] int64)."""
    positions = ctx.shape("position_ids") if ctx.has("position_ids") else None
    if ctx.has("position_ids") and ctx.dtype("position_ids") != VarType.INT64:
        ctx.fail(f"position_ids must be int64, got {ctx.dtype('position_ids')}")
    if positions is not None and (len(positions) != 2 or not all(map(dims_match, positions, [batch, seq]))):
        ctx.fail(f"position_ids {positions} must be [batch, seq_len] = [{batch}, {seq}]")
    if not (ctx.has("sin") and ctx.has("cos")):
        return
    sin, cos = ctx.shape("sin"), ctx.shape("cos")
    if sin is None or cos is None:
        return
    if sin != cos:
        ctx.fail(f"sin {sin} and cos {cos} must have one shape")
    if len(sin) not in (2, 4) or (len(sin) == 4 and (sin[0] != 1 or sin[2] != 1)):
        ctx.fail(f"sin and cos must be [seq_len, head_dim] or [1, seq_len, 1, head_dim], got {sin}")
    rows = sin[1] if len(sin) == 4 else sin[0]
    if not dims_match(sin[-1], d):
        ctx.fail(f"sin and cos {sin} must end in q's head_dim {d}")
    if ctx.has("position_ids") and min(rows, seq) >= 0 and rows < seq:
        ctx.fail(f"sin and cos {sin} must have at least q's seq_len {seq} rows")
    if not ctx.has("position_ids") and not dims_match(rows, seq):
        ctx.fail(f"sin and cos {sin} must have q's seq_len {seq} rows")


def _infer(ctx):
    check_float(ctx, "q")
    present = [slot for slot, _ in PAIRS if ctx.has(slot)]
    dtype = one_dtype(ctx, *present, *(s for s in ("sin", "cos") if ctx.has(s)))
    q = ctx.shape("q")
    results = {}
    for slot, out in PAIRS:
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and len(shape) != 4:
            ctx.fail(f"{slot} must be 4-D [batch, seq_len, num_heads, head_dim], got {shape}")
        if shape is not None and q is not None and slot != "q" and not all(
                map(dims_match, shape[:2] + shape[3:], q[:2] + q[3:])):
            ctx.fail(f"{slot} {shape} must match q {q} in all but num_heads")
        if ctx.has(slot):
            results[out] = (shape, dtype)
    if q is not None:
        if q[3] >= 0 and q[3] % 2:
            ctx.fail(f"q's head_dim must be even, got {q}")
        batch, seq = (q[1], q[0]) if ctx.attr("time_major") else (q[0], q[1])
        _check_tables(ctx, batch, seq, q[3])
    return results


def _grad_infer(ctx):
    """Each input grad is shaped as its output's grad."""
    return {f"{slot}@GRAD": (ctx.shape(f"{out}@GRAD"), ctx.dtype(f"{out}@GRAD"))
            for slot, out in PAIRS if ctx.has(f"{out}@GRAD")}


ROPE = defop("fused_rotary_position_embedding", ["q", "k?", "v?", "sin?", "cos?", "position_ids?"],
             ["out_q", "out_k?", "out_v?"], attrs=ROPE_ATTRS, infer=_infer, no_grad_inputs=TABLES,
             grad=grad_op(*TABLES))
