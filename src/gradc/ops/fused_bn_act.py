"""The batch norm fusions of Paddle's GPU training passes (BuildStrategy fuse_bn_act_ops / fuse_bn_add_act_ops;
cuDNN's BatchNormalizationForwardTrainingEx), with the slots of Paddle's legacy op protos:

    fused_batch_norm_act(X, Scale, Bias, Mean, Variance):        Y = act(batch_norm(X))
    fused_bn_add_activation(X, Z, Scale, Bias, Mean, Variance):  Y = act(batch_norm(X) + Z)

Always training mode and channel-last (NHWC, as the CUDA kernels fix it): the batch's mean and biased variance over
every dim but the last normalise X; MeanOut / VarianceOut (the Mean / Variance vars, updated in place) are
momentum * running + (1 - momentum) * batch; SavedMean is the batch mean, SavedVariance 1 / sqrt(var + epsilon).
act_type is relu, the only activation the kernels take. With one value per channel fused_batch_norm_act's kernel
writes Y = act(X) and leaves the statistics; fused_bn_add_activation's normalises X to 0: Y = act(Bias + Z).
The grad ops read X, Scale, Bias, Y (the relu's mask), SavedMean, SavedVariance, ReserveSpace and Y@GRAD; their
second derivatives: gradc.ops.fused_bn_act_double.
"""

from __future__ import annotations

from ..registry import defop, grad_op
from ..shapes import dims_match
from .infer import check_float
from .nn import stats_dtype

BN_ACT_ATTRS = {"momentum": 0.9, "epsilon": 1e-5, "act_type": "relu"}
STATS = ["Mean", "Variance"]
STAT_OUTPUTS = ["MeanOut", "VarianceOut", "SavedMean", "SavedVariance", "ReserveSpace"]


def _bn_act_infer(ctx):
    x, dtype = ctx.shape("X"), ctx.dtype("X")
    check_float(ctx, "X")
    if ctx.attr("act_type") != "relu":
        ctx.fail(f"act_type {ctx.attr('act_type')!r} is not 'relu', the only activation Paddle's kernels take")
    if x is not None and not 2 <= len(x) <= 5:
        ctx.fail(f"X must have rank 2 to 5 (N, ..., C), got shape {x}")
    if ctx.has("Z") and x is not None and ctx.shape("Z") is not None and (
            len(ctx.shape("Z")) != len(x) or not all(map(dims_match, ctx.shape("Z"), x))):
        ctx.fail(f"Z must have X's shape {x}, got {ctx.shape('Z')}")
    channels = None if x is None else x[-1]
    for slot in ("Scale", "Bias", *STATS):
        shape = ctx.shape(slot)
        if channels is not None and shape is not None and (len(shape) != 1 or not dims_match(shape[0], channels)):
            ctx.fail(f"{slot} must be a vector of the {channels} channels (X's last dim), got shape {shape}")
    stats = (None if x is None else [channels], stats_dtype(dtype))
    return {"Y": (x, dtype), "MeanOut": stats, "VarianceOut": stats, "SavedMean": stats, "SavedVariance": stats,
            "ReserveSpace": ([-1], None)}


_GRAD_READS = ("Scale", "Bias", "Y", "SavedMean", "SavedVariance", "ReserveSpace")
defop("fused_batch_norm_act", ["X", "Scale", "Bias", *STATS], ["Y", *STAT_OUTPUTS[:4], "ReserveSpace?!"],
      attrs=BN_ACT_ATTRS, no_grad_inputs=STATS, no_grad_outputs=STAT_OUTPUTS, infer=_bn_act_infer,
      grad=grad_op("X", *_GRAD_READS))
defop("fused_bn_add_activation", ["X", "Z", "Scale", "Bias", *STATS], ["Y", *STAT_OUTPUTS[:4], "ReserveSpace?!"],
      attrs=BN_ACT_ATTRS, no_grad_inputs=STATS, no_grad_outputs=STAT_OUTPUTS, infer=_bn_act_infer,
      grad=grad_op("X", *_GRAD_READS))
