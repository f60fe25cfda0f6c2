"""fused_gemm_epilogue: a linear layer and its activation in one op, Out = act(matmul(X, Y) + Bias), the op behind
paddle.incubate.nn.functional.fused_linear, fused_matmul_bias and fused_linear_activation and nn.FusedLinear.
Paddle 3.3.1 runs it (a cuBLASLt GEMM with an epilogue) on GPU only; gradc follows the CUDA kernel's formula:

    X [..., M, K] (trans_x: [..., K, M]), Y [K, N] (trans_y: [N, K]), Bias [N]; act: none, relu or gelu (cuBLASLt's
    GELU epilogue, the tanh approximation)
    ReserveSpace: the pre-activation matmul(X, Y) + Bias, which fused_gemm_epilogue_grad reads for relu_grad or
    gelu_grad (Paddle keeps a GPU-private form of it there; a program without an activation has none)

fused_gemm_epilogue_grad (DOut, X, Y, ReserveSpace?) writes DX, DY and DBias: with dPre = DOut act'(ReserveSpace),
the matmul's grads at dPre and dPre summed over every dim but the last.
"""

from __future__ import annotations

from ..ir import EMPTY_VAR
from ..registry import defop
from ..shapes import dims_match
from .composite import Formula, first
from .infer import check_float, one_dtype

ACTIVATIONS = ("none", "relu", "gelu")
GEMM_ATTRS = {"trans_x": False, "trans_y": False}


def gemm_dims(ctx, x: list[int], y: list[int], bias: list[int] | None = None) -> list[int]:
    """Out's shape; fails unless X has rank >= 2, Y rank 2, K agrees and Bias is [N]."""
    trans_x, trans_y = ctx.attr("trans_x"), ctx.attr("trans_y")
    if len(x) < 2 or len(y) != 2:
        ctx.fail(f"fused_gemm_epilogue needs X of rank >= 2 and a 2-D Y, got {x} and {y}")
    k_x, m = (x[-2], x[-1]) if trans_x else (x[-1], x[-2])
    k_y, n = (y[1], y[0]) if trans_y else (y[0], y[1])
    if not dims_match(k_x, k_y):
        ctx.fail(f"X {x} (trans_x={trans_x}) and Y {y} (trans_y={trans_y}) disagree in K: {k_x} and {k_y}")
    if bias is not None and (len(bias) != 1 or not dims_match(bias[0], n)):
        ctx.fail(f"Bias must be [{n}] (Y's N), got {bias}")
    return [*x[:-2], m, n]


def _infer(ctx):
    dtype = one_dtype(ctx, "X", "Y", "Bias")
    check_float(ctx, "X")
    if ctx.attr("activation") not in ACTIVATIONS:
        ctx.fail(f"activation {ctx.attr('activation')!r} is not one of {', '.join(ACTIVATIONS)}")
    x, y, bias = ctx.shape("X"), ctx.shape("Y"), ctx.shape("Bias")
    dims = None if x is None or y is None else gemm_dims(ctx, x, y, bias)
    return {"Out": (dims, dtype), "ReserveSpace": (dims, dtype)}


def _grad_attrs(g, activation: str) -> dict:
    return {"trans_x": g.attr("trans_x"), "trans_y": g.attr("trans_y"),
            "activation_grad": "none" if activation == "none" else f"{activation}_grad"}


def _grad(g):
    """One fused_gemm_epilogue_grad at dOut (with the activation's derivative); a grad of ReserveSpace (a second
    derivative through the activation's) is the pre-activation's: a second one without the activation, summed."""
    f = Formula(g)
    wanted = {slot: first(g.IG(name)) for slot, name in (("DX", "X"), ("DY", "Y"), ("DBias", "Bias"))}
    sources = [(dout, g.attr("activation")) for dout in (first(g.OG("Out")),) if dout not in (None, EMPTY_VAR)]
    sources += [(dres, "none") for dres in (first(g.OG("ReserveSpace")),) if dres not in (None, EMPTY_VAR)]
    like = {"DX": first(g.I("X")), "DY": first(g.I("Y")), "DBias": first(g.I("Bias"))}
    parts = []
    for dout, activation in sources:
        outputs = {slot: (var if len(sources) == 1 else g.tmp(like[slot])) for slot, var in wanted.items()
                   if var != EMPTY_VAR}
        inputs = {"DOut": dout, "X": g.I("X"), "Y": g.I("Y")}
        if activation != "none":
            inputs["ReserveSpace"] = g.O("ReserveSpace")
        f.emit("fused_gemm_epilogue_grad", inputs, outputs, _grad_attrs(g, activation))
        parts.append(outputs)
    if len(parts) == 2:
        for slot, var in wanted.items():
            f.into(var, "elementwise_add", {"X": parts[0].get(slot), "Y": parts[1].get(slot)}, {"axis": -1})
    return f.ops


defop("fused_gemm_epilogue", ["X", "Y", "Bias"], ["Out", "ReserveSpace?"], attrs={**GEMM_ATTRS, "activation": "none"},
      infer=_infer, grad=_grad)
