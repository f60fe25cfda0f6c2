"""Ops of Paddle 1.x/2.x programs that Paddle 3.3.1 still runs but its Python API no longer writes: the v1
resizes bilinear_interp and nearest_interp, fc, hinge_loss and l1_norm. Saved models hold them.

The v1 resizes are gradc.ops.interp's v2 ones (Paddle 3.3.1 runs them alike: a scale also sets the sampling
ratio 1 / scale) with one difference: the ``scale`` attribute is one float (<= 0: none) for every spatial
dim. Sizes come, highest priority first, from SizeTensor, OutSize, a scale (the Scale input, else the
attribute), then out_h/out_w. Paddle reads the method from ``interp_method``, not from the op type (a
bilinear_interp op with interp_method "bicubic" resizes bicubically): so does gradc.

Paddle has no fc_grad (fc is an inference fusion of mul, the bias add and relu): gradc differentiates fc as
those ops (a composite grad maker), so a program an inference optimizer rewrote to hold fc can be fine-tuned.
"""

from __future__ import annotations

import math

from ..registry import defop, grad_op
from . import interp
from .composite import expansion, first
from .infer import check_float
from .onednn_quant import QUANTIZED, int8_fc_dtype, refuse_int8_grad

V1_RESIZES = ("bilinear_interp", "nearest_interp")
V1_ATTRS = {"data_layout": "NCHW", "out_d": 0, "out_h": 0, "out_w": 0, "scale": 0.0, "interp_method": "bilinear",
            "align_corners": True, "align_mode": 1}
FC_ACTIVATIONS = ("", "relu")
WEIGHT_PADDING = 4   # padding_weights: W holds 4 more rows and columns than it uses


def v1_plan(ctx_attr, sizes, size_tensor=None, out_size=None, scale_tensor=None) -> interp.Plan:
    """interp.plan for a v1 resize: its one ``scale`` attribute (<= 0: none) holds for every spatial dim."""
    scale = interp.float32(ctx_attr("scale"))
    scales = [scale] * len(sizes) if scale > 0 else []
    return interp.plan(lambda name: scales if name == "scale" else ctx_attr(name), sizes, size_tensor, out_size,
                       scale_tensor)


for _name in V1_RESIZES:
    defop(_name, ["X", "OutSize?", "SizeTensor[]?", "Scale?"], attrs=V1_ATTRS, infer=interp.resize_infer(v1_plan),
          no_grad_inputs=interp.SIZE_SLOTS, grad=grad_op("X", *interp.SIZE_SLOTS))


def fc_weight_dims(w_shape: list[int], padding_weights: bool) -> tuple[int, int]:
    """(K, N) of the weights fc uses: W's, or without its padding (-1: unknown)."""
    pad = WEIGHT_PADDING if padding_weights else 0
    return tuple(-1 if d < 0 else d - pad for d in w_shape[:2])


def _fc_infer(ctx):
    """Out = act(Input flattened to [prod(dims before in_num_col_dims), K] @ W + Bias): Input's leading
    in_num_col_dims dims and N."""
    x, w, cols = ctx.shape("Input"), ctx.shape("W"), ctx.attr("in_num_col_dims")
    quantized = ctx.dtype("Input") in QUANTIZED   # oneDNN's int8 fc (gradc.executor.kernels.onednn_int8)
    if not quantized:
        check_float(ctx, "Input")
    if ctx.attr("activation_type") not in FC_ACTIVATIONS:
        ctx.fail(f"activation_type {ctx.attr('activation_type')!r} is not one of {list(FC_ACTIVATIONS)}")
    if not 1 <= cols < len(x):
        ctx.fail(f"in_num_col_dims {cols} must be in [1, {len(x)}) for Input of rank {len(x)}")
    if len(w) != 2:
        ctx.fail(f"W must be 2-D, got shape {w}")
    if ctx.attr("padding_weights") and any(0 <= d <= WEIGHT_PADDING for d in w):
        ctx.fail(f"W {w} is too small for padding_weights (4 padding rows and columns)")
    k, n = fc_weight_dims(w, ctx.attr("padding_weights"))
    inner = -1 if any(d < 0 for d in x[cols:]) else math.prod(x[cols:])
    if min(inner, k) >= 0 and inner != k:
        ctx.fail(f"Input flattens to [*, {inner}] at in_num_col_dims {cols}, but W uses {k} rows")
    if ctx.has("Bias"):
        bias = ctx.shape("Bias")
        if not (len(bias) == 1 or (len(bias) == 2 and bias[0] == 1)) or bias[-1] not in (n, -1):
            ctx.fail(f"Bias must have shape [{n}] or [1, {n}], got {bias}")
    return {"Out": ([*x[:cols], n], int8_fc_dtype(ctx) if quantized else ctx.dtype("Input"))}


def _fc_expand(f, g):
    """fc again as mul (Input flattened at in_num_col_dims, times W), + Bias, relu: ops with grads."""
    refuse_int8_grad(g)
    x, w, bias = first(g.I("Input")), first(g.I("W")), first(g.I("Bias"))
    cols = g.attr("in_num_col_dims")
    k, n = fc_weight_dims(g.shape(w), g.attr("padding_weights"))
    if g.attr("padding_weights"):
        w = f.slice(f.slice(w, 0, 0, k), 1, 0, n)
    out = f.op("mul", {"X": x, "Y": w}, x, {"x_num_col_dims": cols, "y_num_col_dims": 1},
               dims=lambda shape: [*shape[:cols], n])
    if bias is not None:
        out = f.add(out, bias, out)
    if g.attr("activation_type") == "relu":
        out = f.unary("relu", out)
    return {"Out": out}


# no fc_grad in Paddle: the composite maker differentiates the ops fc fuses (module docstring)
# the int8 attributes are cpu_quantize_pass's (oneDNN's int8 fc on an int8 / uint8 Input)
defop("fc", ["Input", "W", "Bias?"], attrs={"in_num_col_dims": 1, "activation_type": "", "padding_weights": False,
                                          "mkldnn_data_type": "float32", "Scale_in": 1.0, "Scale_weights": [1.0],
                                          "Scale_out": 1.0, "force_fp32_output": False},
      infer=_fc_infer, grad=expansion(_fc_expand))


def _hinge_infer(ctx):
    logits, labels = ctx.shape("Logits"), ctx.shape("Labels")
    check_float(ctx, "Logits")
    if len(logits) != 2 or logits[1] not in (1, -1):
        ctx.fail(f"Logits must have shape [batch, 1], got {logits}")
    if len(labels) != 2 or any(a != b and -1 not in (a, b) for a, b in zip(logits, labels)):
        ctx.fail(f"Labels {labels} must have Logits' shape {logits}")
    return {"Loss": (logits, ctx.dtype("Logits"))}


# Loss = max(0, 1 - Logits (2 Labels - 1)): labels 0 and 1 as signs -1 and +1
defop("hinge_loss", ["Logits", "Labels"], ["Loss"], infer=_hinge_infer, no_grad_inputs=["Labels"],
      grad=grad_op("Logits", "Labels"))


def _l1_norm_infer(ctx):
    check_float(ctx, "X")
    return {"Out": ([], ctx.dtype("X"))}


# Out = sum |X|, a 0-d tensor
defop("l1_norm", ["X"], infer=_l1_norm_infer, grad=grad_op("X"))
