"""Fused steps of large-model training and quantized inference, GPU-only in Paddle 3.3.1 (gradc follows the CUDA
kernels):

    fused_linear_param_grad_add: a linear layer's weight grad added into an accumulator (fleet's mp layers, the
        fused-linear passes): dweight_out = dweight + x^T dout (x, dout flattened to [M, K], [M, N]; no dweight: 0),
        dbias_out = dbias + sum over rows of dout (always: a required output in Paddle's definition, which the kernel
        writes whatever has_bias says); with multi_precision the outputs are float32 (master grads) for float16 /
        bfloat16 x
    cross_entropy_with_softmax_bwd_w_downcast: softmax_with_cross_entropy's hard-label grad written in bfloat16:
        input_grad = (softmax - onehot(label)) loss_grad along the last axis, zeros where label is -100
    embedding_grad_add_to: main_grad_out (in place over main_grad_) += out_grad's rows added at token_indices
        (Paddle requires a bfloat16 out_grad; gradc takes any float)
    apply_per_channel_scale: out = x scales, x [rows, cols] times scales [cols] (the kernel's float16 / bfloat16)

The first three are grads already (Paddle registers none of theirs, nor does gradc). apply_per_channel_scale has no
grad op in Paddle; gradc's maker is elementwise_mul's grad op (Y broadcast over x's rows), differentiable again.
"""

from __future__ import annotations

from ..ir import VarType, dtype_name
from ..ir.types import INTEGER_DTYPES
from ..registry import NO_GRAD, defop
from .composite import Formula, first
from .infer import check_float


def _param_grad_infer(ctx):
    check_float(ctx, "x")
    if ctx.dtype("dout") not in (ctx.dtype("x"), None):
        ctx.fail(f"dout must have x's dtype {dtype_name(ctx.dtype('x'))}, got {dtype_name(ctx.dtype('dout'))}")
    x, dout = ctx.shape("x"), ctx.shape("dout")
    acc = VarType.FP32 if ctx.attr("multi_precision") and ctx.dtype("x") in (VarType.FP16, VarType.BF16) \
        else ctx.dtype("x")
    if x is None or dout is None:
        return {}
    if len(x) != len(dout) or x[:-1] != dout[:-1]:
        ctx.fail(f"x [..., K] and dout [..., N] must share their leading dims, got {x} and {dout}")
    for slot, shape in (("dweight", [x[-1], dout[-1]]), ("dbias", [dout[-1]])):
        if ctx.has(slot) and ctx.shape(slot) not in (None, shape):
            ctx.fail(f"{slot} must be {shape} (K x N from x and dout), got {ctx.shape(slot)}")
    return {"dweight_out": ([x[-1], dout[-1]], acc), "dbias_out": ([dout[-1]], acc)}


defop("fused_linear_param_grad_add", ["x", "dout", "dweight?", "dbias?"], ["dweight_out", "dbias_out"],
      attrs={"multi_precision": True, "has_bias": True}, infer=_param_grad_infer, grad=NO_GRAD)


def _downcast_infer(ctx):
    check_float(ctx, "softmax")
    if ctx.dtype("label") not in (*INTEGER_DTYPES, None):
        ctx.fail(f"label must be an integer tensor, got {dtype_name(ctx.dtype('label'))}")
    softmax, label, loss_grad = ctx.shape("softmax"), ctx.shape("label"), ctx.shape("loss_grad")
    if softmax is not None and label is not None and (
            label[:-1] != softmax[:-1] or label[-1:] != [1] or loss_grad not in (None, label)):
        ctx.fail(f"label and loss_grad must be softmax's {softmax} with a last dim of 1, got {label} and "
                 f"{loss_grad}")
    return {"input_grad": (softmax, VarType.BF16)}


defop("cross_entropy_with_softmax_bwd_w_downcast", ["label", "softmax", "loss_grad"], ["input_grad"],
      infer=_downcast_infer, grad=NO_GRAD)


def _embedding_add_infer(ctx):
    check_float(ctx, "main_grad_")
    if ctx.dtype("token_indices") not in (VarType.INT16, VarType.INT32, VarType.INT64, None):
        ctx.fail(f"token_indices must be int16, int32 or int64, got {dtype_name(ctx.dtype('token_indices'))}")
    table, ids, grad = ctx.shape("main_grad_"), ctx.shape("token_indices"), ctx.shape("out_grad")
    if table is not None and ids is not None and grad is not None and (
            len(table) != 2 or grad != ids + [table[1]]):
        ctx.fail(f"main_grad_ must be [rows, width] and out_grad token_indices' shape + [width], got {table}, {ids} "
                 f"and {grad}")
    return {"main_grad_out": (table, ctx.dtype("main_grad_"))}


defop("embedding_grad_add_to", ["token_indices", "main_grad_", "out_grad"], ["main_grad_out"],
      infer=_embedding_add_infer, grad=NO_GRAD)


def _scale_infer(ctx):
    check_float(ctx, "x")
    if ctx.dtype("scales") not in (ctx.dtype("x"), None):
        ctx.fail(f"scales must have x's dtype {dtype_name(ctx.dtype('x'))}, got {dtype_name(ctx.dtype('scales'))}")
    x, scales = ctx.shape("x"), ctx.shape("scales")
    if x is not None and (len(x) != 2 or scales is not None and scales != [x[1]] and min(x[1], *scales) >= 0):
        ctx.fail(f"x must be [rows, cols] and scales [cols], got {x} and {scales}")
    return {"out": (x, ctx.dtype("x"))}


def _scale_grad(g):
    f = Formula(g)
    f.emit("elementwise_mul_grad", {"X": g.I("x"), "Y": g.I("scales"), "Out@GRAD": g.OG("out")},
           {"X@GRAD": g.IG("x"), "Y@GRAD": g.IG("scales")}, attrs={"axis": -1})
    return f.ops if first(g.OG("out")) is not None else []


defop("apply_per_channel_scale", ["x", "scales"], ["out"], infer=_scale_infer, grad=_scale_grad)
