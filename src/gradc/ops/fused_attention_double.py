"""Second derivatives of gradc.ops.fused_attention: fused_attention_grad written again as the layer in plain
differentiable ops (layer_norm, matmul_v2, reshape2, transpose2, slice, scale, softmax, elementwise_add) and their
grad ops (gradc.ops.composite.differentiate), so its own grad and the third derivatives follow. The saved
intermediates get no gradient: the expansion recomputes them from the inputs."""

from __future__ import annotations

from ..errors import GradError
from ..registry import defgrad
from .composite import differentiate, expansion, first
from .fused_attention import PARAMETERS, SCRATCH_GRADS, attention_dropout_factor, attention_scale, heads
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


def attention_ops(f, g) -> str:
    """The layer of fused_attention (its grad op's forward inputs) as plain ops; returns Y's var."""
    slot = lambda name: first(g.I(name))   # noqa: E731 - a one-line lookup
    x, weight = slot("X"), slot("QKVW")
    shape, w_shape = g.shape(x), g.shape(weight)
    if shape is None or len(shape) != 3 or w_shape is None or any(d < 0 for d in w_shape):
        raise GradError(f"{g.fwd.type}: X {x} must have a known rank 3 and QKVW {weight} a known shape, got "
                        f"{shape}, {w_shape}")
    (b, s, _), transposed = shape, g.attr("transpose_qkv_wb")
    e = w_shape[0] if transposed else w_shape[3]   # X's last dim, declared or not
    nh, dh = heads(g.attr, w_shape, transposed)
    h = layer_norm_op(f, g, x, slot("LnScale"), slot("LnBias"), g.attr("epsilon")) if g.attr("pre_layer_norm") else x
    matrix = weight if transposed else _reshape(f, weight, [3 * e, e])
    qkv = _matmul(f, h, matrix, [b, s, 3 * e], trans_y=not transposed)
    if slot("QKVBias"):
        qkv = f.add(qkv, _reshape(f, slot("QKVBias"), [3 * e]), qkv)
    split = _transpose(f, _reshape(f, qkv, [0, 0, 3, nh, dh]), [2, 0, 3, 1, 4])
    q, k, v = (f.op("slice", {"Input": split}, split, {"axes": [0], "starts": [i], "ends": [i + 1], "infer_flags": [1],
                                                        "decrease_axis": [0]}, dims=lambda d: d[1:]) for i in range(3))
    scores = _matmul(f, f.scale(q, attention_scale(dh)), k, [b, nh, s, s], trans_y=True)
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
    return layer_norm_op(f, g, out, slot("Ln2Scale"), slot("Ln2Bias"), g.attr("ln_epsilon"))


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
