"""The fused ops Paddle Inference's GPU passes write (paddle_pass_builder.cc's GPU list; Paddle 3.3.1's CPU build
registers the ops but, but for self_dp_attention, has no kernel for them):

- multihead_matmul (multihead_matmul_fuse_pass_v2/v3): Input [B, S, hidden] times W [hidden, 3, N * H] plus Bias
  [3, N * H] gives q, k, v of head_number heads; softmax(alpha q k^T + BiasQK) v, heads side by side: Out
  [B, S, N * H]. BiasQK is [B, N, S, S], or [B, 1, 1, S] or [1, 1, S, S] spread over the rest (the GPU kernel's
  broadcasts); without it, no mask. transpose_Q/K/V are the pattern's and fixed (q k^T).
- skip_layernorm (skip_layernorm_fuse_pass): layer_norm(X + Y) over the last dim with Scale, Bias, epsilon.
- fused_embedding_eltwise_layernorm (embedding_eltwise_layernorm_fuse_pass): layer_norm(sum_i Embs[i][Ids[i]]) over
  the hidden dim, Ids [B, S] (or [B, S, 1]) int64.
- fused_fc_elementwise_layernorm (fc_elementwise_layernorm_fuse_pass): layer_norm(act(X W + Bias0) + Y) from
  begin_norm_axis, X flattened at x_num_col_dims, activation_type "" or relu; Mean and Variance the layer norm's.
- self_dp_attention (self_attention_fuse_pass, CPU): X [B, S, 3, N, H] holds q, k, v;
  softmax(alpha q k^T) v, Out [B, S, N, H] (head_number unread: X's dims say it).
- fused_conv2d_add_act (conv_elementwise_add(2)_act_fuse_pass): activation(conv2d + Bias per channel +
  ResidualData); with split_channels, Output also split along channels into Outputs.
- yolo_box_head (yolo_box_fuse_pass): X [N, A (5 + class_num), H, W], A = len(anchors) / 2 anchors: per anchor the
  sigmoid of x, y, the objectness and the class scores and the exp of w, h.
- fusion_transpose_flatten_concat (transpose_flatten_concat_fuse_pass): each X transposed by trans_axis, flattened
  to 2-D at flatten_axis, concatenated along concat_axis.

Paddle defines no grad for any of them: forward-only, a backward through one is refused naming the op.

fusion_group (fusion_group_pass) is registered only to be refused by name when run: its func_name names CUDA code
the pass generates from a subgraph of elementwise ops at run time, which the program does not hold, so it has no
fixed semantics to run.
"""

from __future__ import annotations

import math

from ..registry import defop
from .infer import check_choice, check_float, one_dtype

CONV_ACTIVATIONS = ("identity", "relu", "relu6", "sigmoid", "tanh", "swish", "leaky_relu")


def _multihead_infer(ctx):
    """Out [B, S, all_head_size], its last dim left to run time: multihead_matmul_fuse_pass_v3 declares W
    [hidden, 3, 3] and Bias [3, 3] whatever all_head_size is, so W's last dim is checked when the op runs."""
    check_float(ctx, "Input")
    dtype, x, w = one_dtype(ctx, "Input", "W", "Bias"), ctx.shape("Input"), ctx.shape("W")
    if x is not None and len(x) != 3:
        ctx.fail(f"Input must be [batch, seq, hidden], got {x}")
    if w is not None and (len(w) != 3 or w[1] != 3 or (x is not None and w[0] != x[2])):
        ctx.fail(f"W must be [hidden, 3, all_head_size], got {w} for Input {x}")
    return {"Out": ([x[0], x[1], -1] if x else None, dtype)}


defop("multihead_matmul", ["Input", "W", "Bias", "BiasQK?"], ["Out"],
      attrs={"transpose_Q": False, "transpose_K": True, "transpose_V": False, "alpha": 1.0, "head_number": 1},
      infer=_multihead_infer, stale_shape_inputs=["W", "Bias"])


def _skip_infer(ctx):
    check_float(ctx, "X")
    x, y = ctx.shape("X"), ctx.shape("Y")
    if x is not None and y is not None and x != y:
        ctx.fail(f"X {x} and Y {y} must have one shape")
    return {"Out": (x, one_dtype(ctx, "X", "Y", "Scale", "Bias"))}


defop("skip_layernorm", ["X", "Y", "Scale", "Bias"], ["Out"], attrs={"epsilon": 1e-5, "begin_norm_axis": -1},
      infer=_skip_infer)


def _embedding_ln_infer(ctx):
    ids, embs = ctx.op.input("Ids"), ctx.op.input("Embs")
    if len(ids) != len(embs) or not ids:
        ctx.fail(f"needs one Embs per Ids, got {len(embs)} Embs for {len(ids)} Ids")
    check_float(ctx, "Embs")
    shape, table = ctx.shape("Ids"), ctx.shape("Embs")
    hidden = table[-1] if table else -1
    return {"Out": ([shape[0], shape[1], hidden] if shape else None, ctx.dtype("Embs"))}


defop("fused_embedding_eltwise_layernorm", ["Ids[]", "Embs[]", "Bias", "Scale"], ["Out"], attrs={"epsilon": 1e-5},
      infer=_embedding_ln_infer)


def _fc_ln_infer(ctx):
    check_float(ctx, "X")
    check_choice(ctx, "activation_type", ("", "relu"))
    dtype, y, axis = one_dtype(ctx, "X", "W", "Y"), ctx.shape("Y"), ctx.attr("begin_norm_axis")
    if y is not None and not 0 < axis < len(y):
        ctx.fail(f"begin_norm_axis {axis} must be within Y's dims {y}")
    rows = [math.prod(y[:axis])] if y is not None and min(y[:axis]) >= 0 else [-1]
    return {"Out": (y, dtype), "Mean": (rows, dtype), "Variance": (rows, dtype)}


defop("fused_fc_elementwise_layernorm", ["X", "W", "Y", "Bias0?", "Scale?", "Bias1?"], ["Out", "Mean?", "Variance?"],
      attrs={"x_num_col_dims": 1, "activation_type": "", "epsilon": 1e-5, "begin_norm_axis": 1},
      infer=_fc_ln_infer)


def _self_dp_infer(ctx):
    check_float(ctx, "X")
    x = ctx.shape("X")
    if x is not None and (len(x) != 5 or x[2] != 3):
        ctx.fail(f"X must be [batch, seq, 3, heads, head_dim], got {x}")
    return {"Out": ([x[0], x[1], x[3], x[4]] if x else None, ctx.dtype("X"))}


defop("self_dp_attention", ["X"], ["Out"], attrs={"alpha": 1.0, "head_number": 1}, infer=_self_dp_infer)


def _conv_add_act_infer(ctx):
    check_float(ctx, "Input")
    check_choice(ctx, "activation", CONV_ACTIVATIONS)
    one_dtype(ctx, "Input", "Filter")
    split, filter_shape = ctx.attr("split_channels"), ctx.shape("Filter")
    if split and filter_shape is not None and sum(split) != filter_shape[0]:
        ctx.fail(f"split_channels {split} must add up to the filter's {filter_shape[0]} output channels")
    return {}


defop("fused_conv2d_add_act", ["Input", "Filter", "Bias?", "ResidualData?"], ["Output", "Outputs[]?"],
      attrs={"strides": [1, 1], "paddings": [0, 0], "padding_algorithm": "EXPLICIT", "dilations": [1, 1],
             "groups": 1, "data_format": "NCHW", "activation": "relu", "split_channels": [],
             "exhaustive_search": False, "workspace_size_MB": 32, "fuse_alpha": 0.0},
      infer=_conv_add_act_infer)


def _transpose_flatten_infer(ctx):
    check_float(ctx, "X")
    axes, flatten, concat = ctx.attr("trans_axis"), ctx.attr("flatten_axis"), ctx.attr("concat_axis")
    if concat not in (0, 1):
        ctx.fail(f"concat_axis {concat} must be 0 or 1 (the flattened inputs are 2-D)")
    flat = []
    for shape in ctx.shapes("X"):
        if shape is None or min(shape) < 0:
            return {}
        if sorted(axes) != list(range(len(shape))) or not 0 < flatten < len(shape):
            ctx.fail(f"trans_axis {axes} must permute X's dims {shape} and flatten_axis {flatten} fall inside them")
        moved = [shape[a] for a in axes]
        flat.append([math.prod(moved[:flatten]), math.prod(moved[flatten:])])
    other = 1 - concat
    if len({f[other] for f in flat}) > 1:
        ctx.fail(f"the flattened inputs {flat} must agree in dim {other}")
    out = list(flat[0])
    out[concat] = sum(f[concat] for f in flat)
    return {"Out": (out, ctx.dtype("X"))}


defop("fusion_transpose_flatten_concat", ["X[]"], ["Out"], attrs={"trans_axis": [], "flatten_axis": 1,
                                                                   "concat_axis": 0},
      infer=_transpose_flatten_infer)


def _yolo_head_infer(ctx):
    check_float(ctx, "X")
    x, anchors = ctx.shape("X"), ctx.attr("anchors")
    if len(anchors) % 2 or not anchors:
        ctx.fail(f"anchors must hold (width, height) pairs, got {anchors}")
    channels = len(anchors) // 2 * (5 + ctx.attr("class_num"))
    if x is not None and (len(x) != 4 or x[1] not in (-1, channels)):
        ctx.fail(f"X must be [N, {channels}, H, W] ({len(anchors) // 2} anchors of 5 + class_num "
                 f"{ctx.attr('class_num')} channels), got {x}")
    return {"Out": (x, ctx.dtype("X"))}


defop("yolo_box_head", ["X"], ["Out"], attrs={"anchors": [], "class_num": 1}, infer=_yolo_head_infer)


defop("fusion_group", ["Inputs[]"], ["Outs[]"],
      attrs={"outs_dtype": [], "inputs_dtype": [], "func_name": "", "type": 0})
