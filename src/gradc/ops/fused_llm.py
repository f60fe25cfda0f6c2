"""fused_bias_act (paddle.incubate.nn.functional.fused_bias_act, the FFN activation of PaddleNLP's inference
models): a bias add and an activation in one op. Paddle 3.3.1 runs it on GPU only and defines no gradient; gradc
follows the CUDA kernel's formula, over x [..., cols] and bias [cols]:

    h = x + bias (bias optional)
    gelu, relu:     out = act(h)                        (gelu: the erf form, Paddle's default without
                                                          FLAGS_use_fast_math)
    geglu, swiglu:  out = act(h[..., :cols/2]) * h[..., cols/2:]   (act gelu or swish x sigmoid(x))
    with shift and smooth ([cols], or [cols/2] for the GLUs): out = (out + shift) * smooth

The quantized paths (an int32 x with dequant_scales, quant_scale > 0 for an int8 out) are refused: they round to
int8 and have no gradient; smooth without shift is ignored, as Paddle's kernel ignores it.
"""

from __future__ import annotations

from ..registry import defop
from .infer import check_choice, check_float, one_dtype

ACT_METHODS = ("gelu", "relu", "geglu", "swiglu")
GLU = ("geglu", "swiglu")
BIAS_ACT_ATTRS = {"act_method": "gelu", "compute_dtype": "default", "quant_scale": -1.0, "quant_round_type": 1,
                  "quant_max_bound": 127.0, "quant_min_bound": -127.0}


def _bias_act_infer(ctx):
    check_float(ctx, "x")
    method = check_choice(ctx, "act_method", ACT_METHODS)
    if ctx.attr("quant_scale") > 0 or ctx.has("dequant_scales"):
        ctx.fail(f"quant_scale={ctx.attr('quant_scale')}{' with dequant_scales' if ctx.has('dequant_scales') else ''}"
                 ": the quantized paths (int8 out, int32 x) are not supported")
    if ctx.has("shift") and not ctx.has("smooth"):
        ctx.fail("shift needs smooth: Paddle's kernel scales the shifted output by it")
    dtype = one_dtype(ctx, "x", *(slot for slot in ("bias", "shift", "smooth") if ctx.has(slot)))
    x = ctx.shape("x")
    if x is None or not x:
        return {"out": (x, dtype)}
    cols = x[-1]
    if method in GLU and cols >= 0 and cols % 2:
        ctx.fail(f"{method} halves x's last dim, which must be even: got {x}")
    width = cols // 2 if method in GLU and cols >= 0 else cols
    for slot, size in (("bias", cols), ("shift", width), ("smooth", width)):
        shape = ctx.shape(slot) if ctx.has(slot) else None
        if shape is not None and (len(shape) != 1 or min(shape[0], size) >= 0 and shape[0] != size):
            ctx.fail(f"{slot} must be 1-D [{size}], got {shape}")
    return {"out": ([*x[:-1], width], dtype)}


defop("fused_bias_act", ["x", "bias?", "dequant_scales?", "shift?", "smooth?"], ["out"], attrs=BIAS_ACT_ATTRS,
      infer=_bias_act_infer)
