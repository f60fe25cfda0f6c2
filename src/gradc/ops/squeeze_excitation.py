"""squeeze_excitation_block (squeeze_excitation_fuse_pass, Paddle Inference's XPU list; the kernel is XPU's): a
squeeze-and-excitation block over NCHW x [N, C, H, W] with the two 1x1 convolutions' int16 weights in one filter:

    pooled = mean of x over H, W                              [N, C]
    h = act0(pooled W1 + b1),  s = act1(h W2 + b2)            W1 [C, C / r], W2 [C / r, C]
    out = act2(x s + branch)                                  s per channel, branch optional

filter_dims = [r, C]; filter holds W1 then W2 (the convs' [out, in] weights transposed, as the pass writes them),
each int16 q standing for q max / 32767 with max filter_max[0] (W1) and filter_max[6] (W2, XPU's buffers of 6);
bias holds b1 then b2. act_type holds XPU's activation codes (0 linear, 1 relu, 2 sigmoid, 3 tanh, 4 gelu, 5
leaky_relu with act_param its alpha, 14 hard_swish, 17 relu6); 15 (hard_sigmoid, whose offset XPU's API does not
show) and others are refused. XPU computes its convolutions in int16 (inputs quantized by their max too); gradc in
float64 with the dequantized weights. Paddle defines no grad: forward-only.
"""

from __future__ import annotations

from ..ir import VarType
from ..registry import defop
from ..shapes import dims_match
from .infer import check_float

XPU_ACTIVATIONS = {0: "linear", 1: "relu", 2: "sigmoid", 3: "tanh", 4: "gelu", 5: "leaky_relu", 14: "hard_swish",
                   17: "relu6"}
MAX_SLOTS = 6   # XPU's max buffer of a quantized tensor


def _se_infer(ctx):
    check_float(ctx, "x")
    x, dims, codes = ctx.shape("x"), ctx.attr("filter_dims"), ctx.attr("act_type")
    if len(codes) != 3 or any(code not in XPU_ACTIVATIONS for code in codes):
        ctx.fail(f"act_type must be three of XPU's activation codes {sorted(XPU_ACTIVATIONS)}, got {codes}")
    if len(ctx.attr("act_param")) != 3:
        ctx.fail(f"act_param must hold three values, got {ctx.attr('act_param')}")
    if len(dims) != 2 or dims[0] < 1 or dims[1] % dims[0]:
        ctx.fail(f"filter_dims must be [reduction ratio, channels] with the ratio dividing them, got {dims}")
    if ctx.dtype("filter") not in (None, VarType.INT16):
        ctx.fail("filter must be int16 (XPU's quantized weights)")
    hidden = dims[1] // dims[0]
    expected = {"filter": [2 * dims[1] * hidden], "filter_max": [2 * MAX_SLOTS], "bias": [hidden + dims[1]]}
    for slot, shape in expected.items():
        got = ctx.shape(slot) if ctx.has(slot) else None
        if got is not None and (len(got) != 1 or not dims_match(got[0], shape[0])):
            ctx.fail(f"{slot} must be {shape} for filter_dims {dims}, got {got}")
    if x is not None and (len(x) != 4 or not dims_match(x[1], dims[1])):
        ctx.fail(f"x must be NCHW with filter_dims' {dims[1]} channels, got {x}")
    branch = ctx.shape("branch") if ctx.has("branch") else None
    if x is not None and branch is not None and not all(map(dims_match, branch, x)):
        ctx.fail(f"branch {branch} must have x's shape {x}")
    return {"out": (x, ctx.dtype("x"))}


defop("squeeze_excitation_block", ["x", "filter", "filter_max", "bias?", "branch?"], ["out"],
      attrs={"act_type": [0, 0, 0], "act_param": [0.0, 0.0, 0.0], "filter_dims": []}, infer=_se_infer)
