"""fused_partial_rope (paddle.incubate.nn.functional.fused_partial_rope, DeepSeek-style attention), GPU-only in
Paddle 3.3.1 (bfloat16); gradc follows the CUDA kernel. x [batch, seq, heads, head_dim], cos and sin
[1, seq, 1, pe_dim] (pe_dim even, <= head_dim): the first head_dim - pe_dim values of each head pass through; the
last pe_dim, p, are de-interleaved (b = p[0::2] then p[1::2]) and turned by half rotation:
    out_pe = b cos + rotate_half(b) sin,   rotate_half(b) = [-b[pe/2:], b[:pe/2]]
written in that (de-interleaved) order. Its grad (fused_partial_rope_grad: cos, sin, out@GRAD -> x@GRAD) is the
transpose, interleaved back; cos and sin get no gradient (as in Paddle). Second derivatives:
gradc.ops.fused_partial_rope_double."""

from __future__ import annotations

from ..registry import defop, grad_op
from .infer import check_float


def tables_fit(ctx, x, cos, sin) -> None:
    if cos is None or x is None:
        return
    if len(x) != 4 or len(cos) != 4 or sin not in (None, cos) or cos[0] != 1 or cos[2] != 1 or cos[3] % 2 \
            or -1 not in (x[1], cos[1]) and cos[1] != x[1] or -1 not in (x[3], cos[3]) and cos[3] > x[3]:
        ctx.fail(f"x must be [batch, seq, heads, head_dim] and cos, sin [1, seq, 1, pe_dim] with pe_dim even and "
                 f"<= head_dim, got {x}, {cos} and {sin}")


def _infer(ctx):
    check_float(ctx, "x")
    tables_fit(ctx, ctx.shape("x"), ctx.shape("cos"), ctx.shape("sin"))
    return {"out": (ctx.shape("x"), ctx.dtype("x"))}


defop("fused_partial_rope", ["x", "cos", "sin"], ["out"], infer=_infer, no_grad_inputs=["cos", "sin"],
      grad=grad_op("cos", "sin"))
