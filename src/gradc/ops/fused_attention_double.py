"""Second derivatives of gradc.ops.fused_attention: fused_attention_grad written again as the layer in plain
differentiable ops (layer_norm, matmul_v2, reshape2, transpose2, slice, scale, softmax, elementwise_add) and their
grad ops (gradc.ops.composite.differentiate), so its own grad and the third derivatives follow. The saved
intermediates get no gradient: the expansion recomputes them from the inputs."""

from __future__ import annotations

from ..ir import VarType
from ..registry import defgrad
from .composite import differentiate, expansion, first
from .creation import scalars
from .fused_attention import PARAMETERS, SCRATCH_GRADS, attention_dropout_factor, attention_scale
from .fused_ffn import dropout_factor
from .fused_ffn_double import layer_norm_op


def _reshape(f, x: str, shape: list[int]) -> str:
    """reshape2 to ``shape``, a 0 copying x's dim (the batch and sequence, whatever their sizes at run time)."""
    return f.op("reshape2", {"X": x}, x, {"shape": shape}, more={"XShape": f.xshape(x)},
                dims=lambda s: [s[i] if d == 0 else d for i, d in enumerate(shape)])


def _transpose(f, x: str, perm: list[int]) -> str:
    return f.op("transpose2", {"X": x}, x, {"axis": perm}, more={"XShape": f.xshape(x)},
                dims=lambda s: [s[i] for i in perm])


def _matmul(f, x: str, y: str, dims: list[int], trans_y: bool = False) -> str:
    return f.op("matmul_v2", {"X": x, "Y": y}, x, {"trans_x": False, "trans_y": trans_y}, dims=lambda _: dims)


def _known(*sizes: int | None) -> int:
    """The first of ``sizes`` known (>= 0), else -1."""
    return next((d for d in sizes if d is not None and d >= 0), -1)


def _weight_dims(f, weight: str, start: int, end: int) -> str:
    """QKVW's dims ``start`` to ``end`` read at run time (an int32 vector)."""
    dims = f.op("shape", {"Input": weight}, weight, dims=lambda _: [-1], dtype=int(VarType.INT32))
    return f.slice(dims, 0, start, end)


def _scale_at_run_time(f, g, q: str, weight: str, nh: int) -> str:
    """q times 1 / sqrt(head_dim) with head_dim read from QKVW's shape ([3, nh, dh, e], or [e, 3e] over num_heads),
    in float64 then rounded to float32 as the kernel's alpha is."""
    size = _weight_dims(f, weight, 0, 1) if g.attr("transpose_qkv_wb") else _weight_dims(f, weight, 2, 3)
    wide = f.op("cast", {"X": size}, size, {"in_dtype": int(VarType.INT32), "out_dtype": int(VarType.FP64)},
                dtype=VarType.FP64)
    if g.attr("transpose_qkv_wb"):   # e / num_heads, exact as num_heads divides e
        wide = f.div(wide, f.op("fill_constant", {}, wide, {"shape": [1], "dtype": int(VarType.FP64),
                                                            "value": float(nh)}), wide)
    alpha = f.unary("reciprocal", f.unary("sqrt", wide))
    for dtype in (VarType.FP32, f.g.block.find_var(q).dtype):
        alpha = f.op("cast", {"X": alpha}, alpha, {"in_dtype": int(f.g.block.find_var(alpha).dtype),
                                                    "out_dtype": int(dtype)}, dtype=dtype)
    return f.mul(q, alpha, q)


def _heads_split(f, g, qkv: str, weight: str, nh: int, dh: int) -> str:
    """qkv [b, s, 3e] as [b, s, 3, nh, dh]: a -1 for the one of nh, dh unknown; both unknown (a QKVW of unknown
    shape, not transposed) by a Shape tensor ending in QKVW's run-time [nh, dh]."""
    if nh >= 0 or dh >= 0:
        return _reshape(f, qkv, [0, 0, 3, nh, dh])
    int32 = int(VarType.INT32)
    head = f.op("assign_value", {}, qkv, {"shape": [3], "dtype": int32, "values": scalars([0.0, 0.0, 3.0])},
                dims=lambda _: [3], dtype=int32)
    shape = f.op("concat", {"X": [head, _weight_dims(f, weight, 1, 3)]}, head, {"axis": 0}, dims=lambda _: [5],
                 dtype=int32)
    return f.op("reshape2", {"X": qkv, "Shape": shape}, qkv, more={"XShape": f.xshape(qkv)},
                dims=lambda s: [*s[:2], 3, -1, -1])


def attention_ops(f, g) -> str:
    """The layer of fused_attention (its grad op's forward inputs) as plain ops; returns Y's var. X is [b, s, e] at
    run time (the kernel's), so a rank not declared is 3; sizes QKVW does not declare come from X, OutLinearW or
    QKVW's run-time shape."""
    slot = lambda name: first(g.I(name))   # noqa: E731 - a one-line lookup
    x, weight, transposed = slot("X"), slot("QKVW"), g.attr("transpose_qkv_wb")
    b, s, x_e = g.shape(x) or (-1, -1, -1)
    w_shape = g.shape(weight) or ([-1, -1] if transposed else [-1, -1, -1, -1])
    e = _known(w_shape[0] if transposed else w_shape[3], x_e, (g.shape(slot("OutLinearW")) or [-1])[0])
    nh, dh = (g.attr("num_heads"), e // g.attr("num_heads") if e >= 0 else -1) if transposed else w_shape[1:3]
    h = layer_norm_op(f, g, x, slot("LnScale"), slot("LnBias"), g.attr("epsilon"), axis=2) \
        if g.attr("pre_layer_norm") else x
    if transposed:
        matrix = weight
    elif e >= 0:
        matrix = _reshape(f, weight, [3 * e, e])
    else:   # [3, nh, dh, e] -> [3 nh dh, e] without its sizes
        matrix = f.op("flatten_contiguous_range", {"X": weight}, weight, {"start_axis": 0, "stop_axis": 2},
                      more={"XShape": f.xshape(weight)}, dims=lambda _: [-1, -1])
    qkv = _matmul(f, h, matrix, [b, s, 3 * e if e >= 0 else -1], trans_y=not transposed)
    if slot("QKVBias"):
        qkv = f.add(qkv, _reshape(f, slot("QKVBias"), [3 * e if e >= 0 else -1]), qkv)
    split = _transpose(f, _heads_split(f, g, qkv, weight, nh, dh), [2, 0, 3, 1, 4])
    q, k, v = (f.op("slice", {"Input": split}, split, {"axes": [0], "starts": [i], "ends": [i + 1], "infer_flags": [1],
                                                        "decrease_axis": [0]}, dims=lambda d: d[1:]) for i in range(3))
    q = f.scale(q, attention_scale(dh)) if dh >= 0 else _scale_at_run_time(f, g, q, weight, nh)
    scores = _matmul(f, q, k, [b, nh, s, s], trans_y=True)
    if slot("SrcMask"):
        scores = f.add(scores, slot("SrcMask"), scores)
    weights = f.scale(f.op("softmax", {"X": scores}, scores, {"axis": -1}), attention_dropout_factor(g.attr))
    context = _reshape(f, _transpose(f, _matmul(f, weights, v, [b, nh, s, dh]), [0, 2, 1, 3]), [0, 0, e])
    out = _matmul(f, context, slot("OutLinearW"), [b, s, e])
    if slot("OutLinearBias"):
        out = f.add(out, slot("OutLinearBias"), out)
    out = f.scale(out, dropout_factor(g.attr, "dropout"))
    out = f.add(out, x, x) if g.attr("add_residual") else out
    if g.attr("pre_layer_norm"):
        return out
    return layer_norm_op(f, g, out, slot("Ln2Scale"), slot("Ln2Bias"), g.attr("ln_epsilon"), axis=2)


@expansion
def _attention_again(f, g):
    out = attention_ops(f, g)
    wanted = [slot for slot in PARAMETERS if first(g.I(slot))]
    targets = {first(g.I(slot)): g.tmp(first(g.I(slot))) for slot in wanted}
    f.ops += differentiate(g, f.ops, {out: first(g.I("Y@GRAD"))}, targets)
    return {f"{slot}@GRAD": targets[first(g.I(slot))] for slot in wanted}


defgrad("fused_attention_grad", grad=_attention_again,
        no_grad_inputs=["SrcMask", "QKVBiasOut", "SrcMaskOut", "LnOut", "LnMean", "LnVariance", "Ln2Mean",
                        "Ln2Variance", "BiasDropoutResidualOut", "QKVOut", "TransposeOut2", "QKOut", "QKTVOut",
                        "SoftmaxOut", "AttnDropoutMaskOut", "AttnDropoutOut", "FMHAOut", "OutLinearOut",
                        "DropoutMaskOut"], no_grad_outputs=[f"{slot}@GRAD" for slot in SCRATCH_GRADS])
