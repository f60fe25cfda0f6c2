"""Second derivatives of gradc.ops.fused_gemm: fused_gemm_epilogue_grad written again with differentiable ops
(the activation's grad op on ReserveSpace, matmul_v2 and reduce_sum) and differentiated, so third derivatives follow.
Its ReserveSpace is the pre-activation, so the derivative through relu_grad or gelu_grad reaches it, and from it the
forward's X, Y and Bias (gradc.ops.fused_gemm's maker)."""

from __future__ import annotations

from ..registry import defgrad
from ..shapes import dims_match
from .composite import expansion, first
from .fused_gemm import GEMM_ATTRS, gemm_dims
from .infer import check_float, one_dtype

ACTIVATION_GRADS = {"none": None, "relu_grad": "relu", "gelu_grad": "gelu"}


def _pre_grad(f, g, dout: str) -> str:
    """dPre = dOut act'(ReserveSpace), through the activation's own grad op (relu_grad reads relu's Out)."""
    activation = ACTIVATION_GRADS[g.attr("activation_grad")]
    pre = first(g.I("ReserveSpace"))
    if activation == "relu":
        return f.op("relu_grad", {"Out": f.unary("relu", pre), "Out@GRAD": dout}, dout, slot="X@GRAD")
    if activation == "gelu":
        return f.op("gelu_grad", {"X": pre, "Out@GRAD": dout}, dout, {"approximate": True}, slot="X@GRAD")
    return dout


@expansion
def _again(f, g):
    x, y, dout = (first(g.I(slot)) for slot in ("X", "Y", "DOut"))
    dpre = _pre_grad(f, g, dout)
    dx, dy = g.tmp(x), g.tmp(y)
    f.emit("matmul_v2_grad", {"X": x, "Y": y, "Out@GRAD": dpre}, {"X@GRAD": dx, "Y@GRAD": dy},
           {"trans_x": g.attr("trans_x"), "trans_y": g.attr("trans_y")})
    leading = list(range(len(g.shape(dout) or [0, 0]) - 1))   # every dim but N
    n_of = (lambda s: [s[0]]) if g.attr("trans_y") else (lambda s: [s[1]])   # Bias is [N], Y [K, N] or [N, K]
    dbias = f.op("reduce_sum", {"X": dpre}, y, {"dim": leading, "keep_dim": False, "reduce_all": False}, dims=n_of)
    return {"DX": dx, "DY": dy, "DBias": dbias}


def _grad_infer(ctx):
    dtype = one_dtype(ctx, "DOut", "X", "Y")
    check_float(ctx, "DOut")
    if ctx.attr("activation_grad") not in ACTIVATION_GRADS:
        ctx.fail(f"activation_grad {ctx.attr('activation_grad')!r} is not one of {', '.join(ACTIVATION_GRADS)}")
    if ctx.attr("activation_grad") != "none" and not ctx.has("ReserveSpace"):
        ctx.fail(f"activation_grad {ctx.attr('activation_grad')!r} needs ReserveSpace (the pre-activation)")
    x, y, dout = ctx.shape("X"), ctx.shape("Y"), ctx.shape("DOut")
    if x is not None and y is not None:
        out = gemm_dims(ctx, x, y)
        if dout is not None and (len(dout) != len(out) or not all(map(dims_match, dout, out))):
            ctx.fail(f"DOut must be shaped like Out {out}, got {dout}")
    n = None if y is None else [y[0] if ctx.attr("trans_y") else y[1]]
    return {"DX": (x, dtype), "DY": (y, dtype), "DBias": (n, dtype)}


defgrad("fused_gemm_epilogue_grad", inputs=["DOut", "X", "Y", "ReserveSpace?"], outputs=["DX?", "DY", "DBias?"],
        attrs={**GEMM_ATTRS, "activation_grad": "none"}, infer=_grad_infer, grad=_again, of="fused_gemm_epilogue")
